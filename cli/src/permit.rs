//! `cove permit`: answers a thread's permission request from any terminal, whether or not a
//! process runs the thread (a run killed meanwhile applies it when resumed).

use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::{CliError, Invocation};
use cove_core::store::{DecideError, Decision, RequestKind};

#[derive(Debug, Args)]
pub(super) struct PermitArgs {
    /// The thread (an id or its start).
    thread: String,
    /// The request's id (its `permission_request` event; `cove threads` lists those waiting).
    request: String,
    /// allow_once, allow_for_thread (also answers identical waiting requests) or deny.
    decision: String,
    /// Why, for the model (with deny).
    reason: Option<String>,
}

/// `cove permit THREAD REQUEST DECISION [REASON]`.
pub(super) fn permit(inv: &Invocation, args: PermitArgs) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(&args.thread)?;
    let decision = args
        .decision
        .parse::<Decision>()
        .ok()
        .filter(|d| RequestKind::Permission.offered().contains(d))
        .ok_or_else(|| {
            CliError::Failed(format!(
                "{:?} is not a decision: use allow_once, allow_for_thread or deny; nothing was changed",
                args.decision
            ))
        })?;
    let decided = inv
        .store
        .decide_request(&thread.id, &args.request, decision, args.reason.as_deref())
        .map_err(|e| match e {
            DecideError::Store(e) => CliError::from(e),
            refused => CliError::Failed(refused.to_string()),
        })?;
    let also: Vec<&str> = decided.also.iter().map(|r| r.id.as_str()).collect();
    inv.printer.result(
        &json!({
            "thread_id": thread.id,
            "request_id": decided.request.id,
            "decision": decision,
            "reason": decided.request.reason,
            "also": also,
        }),
        |_| {
            let said = match decision {
                Decision::AllowOnce => "allowed once",
                Decision::AllowForThread => "allowed for this thread",
                _ => "denied",
            };
            let mut text = format!(
                "Request {} ({}): {said}.",
                decided.request.id, decided.request.summary
            );
            if !also.is_empty() {
                text.push_str(&format!(" Also answered: {}.", also.join(", ")));
            }
            text.push_str(&format!(
                " A run waiting on it goes on at once; if none is running, `cove resume {}` applies it.",
                thread.id
            ));
            text
        },
    );
    Ok(ExitCode::SUCCESS)
}
