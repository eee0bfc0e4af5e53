//! `cove`, the command line of the Cove controller: a module per command family over the
//! engine (`cove-core`), the sandbox providers (`cove-sandbox`) and the server
//! (`cove-serve`); one error type whose kind decides the exit code ([`exit`]), and one
//! printer for results (`--json` gives JSON lines).

// The command line is what talks to people: it prints.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod checkpoints;
mod error;
mod eval;
mod export;
mod knowledge;
mod mcp;
mod operator;
mod permit;
mod plan;
mod plan_prompt;
mod printer;
mod prompts;
mod render;
mod run;
mod sandbox;
mod sandbox_choice;
mod secret_flags;
mod serve;
mod skills;
mod threads;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use error::{CliError, exit};
use printer::Printer;

use cove_core::config::{self, FileConfig};
use cove_core::store::Store;

fn main() -> std::process::ExitCode {
    // Before anything else: a secret given as a flag leaves the process list.
    secret_flags::move_to_environment();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cove: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    // The exporter sends from the runtime: installed inside it.
    let telemetry = runtime.block_on(async { install_telemetry() });
    let code = runtime.block_on(run_command_line(Cli::parse()));
    // The last spans leave before the exit; an unreachable collector holds it 2 s at most.
    if telemetry.exporting() {
        let unsent = telemetry.shutdown(std::time::Duration::from_secs(2));
        let counts = cove_telemetry::counts::span_counts();
        let lost = counts.failed + counts.dropped + unsent;
        if lost > 0 {
            eprintln!(
                "cove: {lost} of {} spans did not reach the OTLP collector ({} refused or unreachable, {} dropped from a full queue, {unsent} unanswered at exit)",
                counts.exported + lost,
                counts.failed,
                counts.dropped,
            );
        }
    }
    code
}

/// Logs to stderr (`COVE_LOG`, warnings by default) and, when the `OTEL_*` environment or
/// `[telemetry]` in cove.toml names a collector, the runs' spans to it. A telemetry setting
/// that cannot work is said once and the command goes on without it.
fn install_telemetry() -> cove_telemetry::export::Installed {
    let logs = EnvFilter::try_from_env("COVE_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    // A broken cove.toml is reported by the command that reads it.
    let file = config::load_file().ok().and_then(|f| f.telemetry);
    let (installed, why) = cove_telemetry::export::install_configured(logs, file.as_ref(), "cove");
    if let Some(why) = why {
        eprintln!("cove: traces are not exported: {why}");
    }
    installed
}

/// Cove: an autonomous agent that works in a sandbox with a shell, files and a browser.
#[derive(Debug, Parser)]
#[command(name = "cove", version)]
struct Cli {
    /// Print run events (and command results) as JSON lines.
    #[arg(long, global = true)]
    json: bool,

    /// The database file (default ~/.local/share/cove/cove.db).
    #[arg(long, global = true, env = "COVE_DB")]
    db: Option<PathBuf>,

    /// Reach Kubernetes sandboxes at their Pods' addresses, as from inside the cluster
    /// (default: when KUBERNETES_SERVICE_HOST is set; otherwise through port-forward).
    #[arg(long, global = true, env = "COVE_IN_CLUSTER", num_args = 0..=1, default_missing_value = "true")]
    in_cluster: Option<bool>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an agent on a task.
    Run(run::RunArgs),
    /// Answer the question a paused thread asked, and continue it.
    Reply(run::ReplyArgs),
    /// Continue a thread whose run stopped (killed, failed, or at its iteration cap).
    Resume(run::ResumeArgs),
    /// Approve the plan a thread proposed (or your edit of it), and run on.
    Approve(plan::ApproveArgs),
    /// Reject the plan a thread proposed: with a reason the agent proposes a new version.
    Reject(plan::RejectArgs),
    /// Answer a permission request of a thread: allow_once, allow_for_thread or deny.
    Permit(permit::PermitArgs),
    /// List threads.
    Threads,
    /// Show a thread's messages.
    Show {
        thread: String,
        /// Also the messages a rewind left aside.
        #[arg(long)]
        all: bool,
    },
    /// Write a thread to one file a person can open anywhere: a self-contained HTML page
    /// (screenshots inside), Markdown or JSON; no key or token of Cove's is in it.
    Export(export::ExportArgs),
    /// List a thread's checkpoints of its workspace.
    Checkpoints { thread: String },
    /// Show what changed in a thread's workspace between two checkpoints (or since one).
    Diff(checkpoints::DiffArgs),
    /// Take a thread's workspace and conversation back to one of its checkpoints.
    Rewind(checkpoints::RewindArgs),
    /// Branch a new thread from a thread's checkpoint: its conversation up to there, and a
    /// copy of that workspace in a sandbox of its own.
    Fork(checkpoints::ForkArgs),
    /// Manage sandboxes.
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
    /// Manage the knowledge the agent keeps in mind (in its system prompt).
    #[command(subcommand)]
    Knowledge(knowledge::KnowledgeCommand),
    /// See and check the MCP servers the agent can use (`mcpServers` files).
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// See the skills the agent can load (SKILL.md folders).
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Run a shell command in the sandbox (no model involved).
    Exec(operator::ExecArgs),
    /// List files of the sandbox's workspace.
    Ls(operator::LsArgs),
    /// Print a text file of the sandbox's workspace.
    Cat(operator::CatArgs),
    /// Open a URL in the sandbox's browser and print what the agent would see.
    Browse(operator::BrowseArgs),
    /// Save a screenshot of the sandbox's browser.
    Screenshot(operator::ScreenshotArgs),
    /// Save a shell session's terminal as a recording (asciicast v2) to replay.
    Recording(operator::RecordingArgs),
    /// Run a folder of tasks in Harbor's format (instruction, environment, tests) without
    /// Harbor: each in its own container, scored by its tests; reward, time, tokens and cost
    /// per task, then a summary.
    Eval(eval::EvalArgs),
    /// Serve the agent over HTTP: an API whose runs belong to the server, with their events
    /// as Server-Sent Events.
    Serve(serve::ServeArgs),
}

/// What every command of one `cove` invocation works with: its printer, the database and
/// `cove.toml`.
struct Invocation {
    printer: Printer,
    store: Arc<Store>,
    file: FileConfig,
    /// `--in-cluster`: how Kubernetes sandboxes are reached (none: detected).
    in_cluster: Option<bool>,
    /// What a local sandbox's walls let through (`[local_sandbox]`, `COVE_HOST_PORTS`).
    local: cove_sandbox::LocalSettings,
}

impl Invocation {
    /// The sandboxes this invocation reaches.
    fn sandboxes(&self) -> cove_sandbox::choice::Sandboxes<'_> {
        cove_sandbox::choice::Sandboxes {
            store: &self.store,
            file: &self.file,
            local: &self.local,
            in_cluster: self.in_cluster,
            narrate: &self.printer,
            helper_program: std::env::current_exe().ok(),
        }
    }

    /// The engine over this invocation's database and `cove.toml`.
    fn engine(&self) -> cove_core::session::Engine<'_> {
        cove_core::session::Engine {
            store: &self.store,
            file: &self.file,
        }
    }
}

/// Runs the command line; returns the process exit code.
async fn run_command_line(cli: Cli) -> ExitCode {
    match dispatch(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cove: {e}");
            e.exit_code()
        }
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, CliError> {
    let file = config::load_file()?;
    let db = cli
        .db
        .clone()
        .or_else(|| file.db.clone())
        .unwrap_or_else(|| config::data_dir().join("cove.db"));
    let local = cove_sandbox::local::local_settings(&file)?;
    // Cove's own data folder is its user's alone, even where an older Cove made it open.
    if db.parent() == Some(config::data_dir().as_path())
        && let Ok(true) = cove_core::private_files::tighten(&config::data_dir(), 0o700)
    {
        tracing::warn!(folder = %config::data_dir().display(), "Cove's data folder was open to other users; it is now 0700");
    }
    let inv = Invocation {
        printer: Printer::new(cli.json),
        store: Arc::new(Store::open(&db)?),
        file,
        in_cluster: cli.in_cluster,
        local,
    };
    if let Some(warning) = secret_flags::warning() {
        inv.printer.warn(&warning);
    }
    match cli.command {
        Command::Run(args) => run::run(&inv, args).await,
        Command::Reply(args) => run::reply(&inv, args).await,
        Command::Resume(args) => run::resume(&inv, args).await,
        Command::Approve(args) => plan::approve(&inv, args).await,
        Command::Reject(args) => plan::reject(&inv, args).await,
        Command::Permit(args) => permit::permit(&inv, args),
        Command::Threads => threads::list(&inv),
        Command::Show { thread, all } => threads::show(&inv, &thread, all),
        Command::Export(args) => export::export(&inv, args),
        Command::Checkpoints { thread } => checkpoints::list(&inv, &thread),
        Command::Diff(args) => checkpoints::diff(&inv, args).await,
        Command::Rewind(args) => checkpoints::rewind(&inv, args).await,
        Command::Fork(args) => checkpoints::fork(&inv, args).await,
        Command::Sandbox(cmd) => sandbox::command(&inv, cmd).await,
        Command::Knowledge(cmd) => knowledge::command(&inv, cmd),
        Command::Mcp(cmd) => mcp::command(&inv, cmd).await,
        Command::Skills(cmd) => skills::command(&inv, cmd),
        Command::Exec(args) => operator::exec(&inv, args).await,
        Command::Ls(args) => operator::ls(&inv, args).await,
        Command::Cat(args) => operator::cat(&inv, args).await,
        Command::Browse(args) => operator::browse(&inv, args).await,
        Command::Screenshot(args) => operator::screenshot(&inv, args).await,
        Command::Recording(args) => operator::recording(&inv, args).await,
        Command::Eval(args) => eval::eval(&inv, args).await,
        Command::Serve(args) => serve::serve(inv, args).await,
    }
}
