//! `cove`: the Cove controller. The agent loop is not built yet; this binary says so plainly
//! rather than pretending.

use clap::Parser;

/// The Cove controller (not implemented yet: this release ships the sandbox daemon, `coved`).
#[derive(Debug, Parser)]
#[command(name = "cove", version)]
struct Cli {
    /// Anything: no command is implemented yet.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() -> std::process::ExitCode {
    let _cli = Cli::parse();
    eprintln!(
        "cove: the agent controller is not implemented yet.\n\
         This release ships the sandbox daemon: run `coved --help`, and see README.md."
    );
    std::process::ExitCode::from(2)
}
