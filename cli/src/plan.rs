//! `cove approve` and `cove reject`: the user's answer to the plan a thread proposed, from
//! any terminal.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::plan_prompt::{ending, read_edit};
use super::run::{RunFlags, drive};
use super::sandbox_choice::SandboxArgs;
use super::{CliError, Invocation};
use cove_core::plan_answer::{approved, rejected};

#[derive(Debug, Args)]
pub(super) struct ApproveArgs {
    /// The thread (an id or its start).
    thread: String,
    /// Approve this edit of the plan instead (Markdown: a `# goal` line and numbered
    /// steps; or JSON: {"goal", "steps": [{"id"?, "description"}]}).
    #[arg(long)]
    edit: Option<PathBuf>,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    run: RunFlags,
}

#[derive(Debug, Args)]
pub(super) struct RejectArgs {
    /// The thread (an id or its start).
    thread: String,
    /// Why: the agent proposes a new version with it in mind. Without one the thread ends.
    reason: Option<String>,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    run: RunFlags,
}

/// `cove approve THREAD [--edit FILE]`: approves the waiting plan (or the edit) and runs on.
pub(super) async fn approve(inv: &Invocation, args: ApproveArgs) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(&args.thread)?;
    let edit = args.edit.as_deref().map(read_edit).transpose()?;
    let edited = edit.is_some();
    let plan = inv.store.approve_plan(&thread.id, edit)?;
    drive(
        inv,
        thread,
        Some(approved(&plan, edited)),
        &args.sandbox,
        &args.run,
        false,
    )
    .await
}

/// `cove reject THREAD ["why"]`: rejects the waiting plan; with a reason the agent proposes
/// a new version, without one the thread ends.
pub(super) async fn reject(inv: &Invocation, args: RejectArgs) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(&args.thread)?;
    let plan = inv.store.reject_plan(&thread.id, args.reason.as_deref())?;
    match rejected(&plan) {
        Some(message) => drive(inv, thread, Some(message), &args.sandbox, &args.run, false).await,
        None => {
            inv.printer.result(
                &serde_json::json!({"thread_id": thread.id, "plan": plan, "ended": true}),
                |_| ending(&plan, &thread.id),
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
