//! A thread's checkpoints: `cove checkpoints` lists them, `cove diff` shows what changed,
//! `cove rewind` takes the files and the conversation back to one.

use std::process::ExitCode;

use clap::Args;
use cove_core::session::RewindScope;
use cove_core::store::NewThread;
use cove_protocol::checkpoints::{CURRENT, DiffQuery};
use serde_json::json;

use super::sandbox_choice::{self, SandboxArgs, coved_log};
use super::{CliError, Invocation};

#[derive(Debug, Args)]
pub(super) struct DiffArgs {
    thread: String,
    /// The checkpoint to compare from (default: the thread's first).
    from: Option<String>,
    /// The checkpoint to compare to (default: the workspace as it is now).
    to: Option<String>,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Debug, Args)]
pub(super) struct ForkArgs {
    thread: String,
    /// The checkpoint to branch from (default: the thread as it is now).
    checkpoint: Option<String>,
    /// Where the fork works (default: a new local workspace of its own); its workspace is
    /// streamed there, whatever the provider.
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Debug, Args)]
pub(super) struct RewindArgs {
    thread: String,
    /// The checkpoint to go back to (`cove checkpoints THREAD` lists them).
    checkpoint: String,
    /// Only the workspace goes back; the conversation goes on from where it is.
    #[arg(long, conflicts_with = "conversation_only")]
    files_only: bool,
    /// Only the conversation goes back; the files stay as they are.
    #[arg(long)]
    conversation_only: bool,
    /// Kill shell sessions still running a command in the sandbox first.
    #[arg(long)]
    stop_commands: bool,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

/// `cove checkpoints THREAD`
pub(super) fn list(inv: &Invocation, thread: &str) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(thread)?;
    let checkpoints = inv.store.checkpoints(&thread.id)?;
    let empty = format!(
        "thread {} has no checkpoints (its runs take one as they start and after tools that change files)",
        thread.id
    );
    inv.printer.list(&checkpoints, &empty, |c| {
        let when = super::threads::clock(c.created_at);
        format!(
            "{:<5} {when}  after message {:<5} {:<40} {} files, {} changed",
            c.checkpoint, c.after_message, c.reason, c.files, c.changed
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// `cove diff THREAD [FROM] [TO]`
pub(super) async fn diff(inv: &Invocation, args: DiffArgs) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(&args.thread)?;
    let from = match args.from {
        Some(from) => inv.engine().checkpoint(&thread.id, &from)?.checkpoint,
        None => inv
            .store
            .checkpoints(&thread.id)?
            .into_iter()
            .find(|c| c.sandbox == thread.sandbox)
            .map(|c| c.checkpoint)
            .ok_or_else(|| {
                CliError::NotFound(format!("thread {} has no checkpoints yet", thread.id))
            })?,
    };
    let to = match args.to {
        Some(to) if to != CURRENT => inv.engine().checkpoint(&thread.id, &to)?.checkpoint,
        _ => CURRENT.to_string(),
    };
    let sandbox = sandbox_choice::open_thread(inv, &thread.sandbox, &args.sandbox).await?;
    let result = sandbox
        .client
        .checkpoint_diff(&from, &DiffQuery { to })
        .await;
    sandbox.close().await;
    let diff = result?;
    inv.printer
        .verbatim(&diff, cove_core::tools::checkpoint_diff_text);
    Ok(ExitCode::SUCCESS)
}

/// `cove rewind THREAD CHECKPOINT`
pub(super) async fn rewind(inv: &Invocation, args: RewindArgs) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(&args.thread)?;
    let scope = match (args.files_only, args.conversation_only) {
        (true, _) => RewindScope::FilesOnly,
        (_, true) => RewindScope::ConversationOnly,
        _ => RewindScope::Both,
    };
    // Checked before a sandbox is started for nothing.
    inv.engine().checkpoint(&thread.id, &args.checkpoint)?;
    let sandbox = sandbox_choice::open_thread(inv, &thread.sandbox, &args.sandbox).await?;
    let done = inv
        .engine()
        .rewind(
            &thread.id,
            &args.checkpoint,
            scope,
            args.stop_commands,
            &sandbox.client,
        )
        .await;
    sandbox.close().await;
    let done = done?;
    let value = json!({
        "thread_id": thread.id,
        "checkpoint": done.checkpoint,
        "files": done.files,
        "conversation": done.conversation,
    });
    inv.printer.result(&value, |_| {
        let mut lines = vec![format!(
            "Thread {} is back at {} ({}, after message {}).",
            thread.id, done.checkpoint.checkpoint, done.checkpoint.reason, done.checkpoint.after_message
        )];
        if let Some(files) = &done.files {
            lines.push(format!(
                "Files: {} written, {} removed; they were as checkpoint {} just before (cove rewind {} {} --files-only undoes it).",
                files.written, files.removed, files.before, thread.id, files.before
            ));
        }
        if let Some(conversation) = &done.conversation {
            lines.push(format!(
                "Conversation: {} later messages kept aside as branch {} (cove show {} --all); cove reply {} \"…\" goes on from here.",
                conversation.messages, conversation.branch, thread.id, thread.id
            ));
        }
        lines.join("\n")
    });
    Ok(ExitCode::SUCCESS)
}

/// `cove fork THREAD [CHECKPOINT]`
pub(super) async fn fork(inv: &Invocation, args: ForkArgs) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(&args.thread)?;
    let new_id = NewThread::fresh_id();
    let (spec, token) =
        sandbox_choice::choose(inv, &args.sandbox, || inv.engine().workspace_of(&new_id))?;
    let label = spec.label();
    inv.engine().check_fork_target(&thread, &label)?;
    let source = sandbox_choice::open_thread(inv, &thread.sandbox, &SandboxArgs::default()).await?;
    let made = async {
        let from = inv
            .engine()
            .fork_source(&thread.id, args.checkpoint.as_deref(), &source.client)
            .await?;
        let target = sandbox_choice::open(inv, spec, token, Some(&coved_log())).await?;
        let fork = inv
            .engine()
            .fork(&from, &source.client, &target.client, new_id, label)
            .await;
        target.close().await;
        Ok::<_, CliError>((from, fork?))
    }
    .await;
    source.close().await;
    let (from, fork) = made?;
    let value = json!({
        "thread_id": fork.thread.id,
        "forked_from": thread.id,
        "checkpoint": from.checkpoint.checkpoint,
        "sandbox": fork.thread.sandbox,
        "files": fork.imported.checkpoint.files,
        "messages": fork.messages,
    });
    inv.printer.result(&value, |_| {
        format!(
            "Thread {} is a fork of {} at {} ({} files, {} messages), in {}.\ncove reply {} \"…\" goes on there; the two threads are independent.",
            fork.thread.id,
            thread.id,
            from.checkpoint.checkpoint,
            fork.imported.checkpoint.files,
            fork.messages,
            fork.thread.sandbox,
            fork.thread.id
        )
    });
    Ok(ExitCode::SUCCESS)
}
