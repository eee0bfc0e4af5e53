//! `cove`: the Cove controller.

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() -> std::process::ExitCode {
    // Before anything else: a secret given as a flag leaves the process list.
    cove::cli::secret_flags::move_to_environment();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("COVE_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(cove::cli::main(cove::cli::Cli::parse())),
        Err(e) => {
            eprintln!("cove: cannot start the async runtime: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
