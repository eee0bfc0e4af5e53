//! Checkpoints of the workspace as a run goes: one when the user's message is about to be
//! acted on, and one after each iteration whose calls may have changed files, each tied to
//! the thread's newest message so a rewind brings the files and the conversation back
//! together.

use cove_protocol::checkpoints::CreateCheckpoint;
use cove_store::ThreadCheckpoint;

use super::{Agent, LiveRun};

/// Tools that only read: an iteration of these alone changes no file.
const READS: &[&str] = &[
    "ask",
    "check_command_output",
    "complete",
    "create_plan",
    "expand_message",
    "list_commands",
    "list_files",
    "load_skill",
    "mcp_search_tools",
    "read_file",
    "see_image",
    // Sub-agents' changes are checkpointed once they have all ended.
    "spawn_agents",
    "unwatch",
    "update_plan",
    "wait_for_events",
    "watch",
    "web_search",
];

/// Whether calls of these tools may have changed the workspace.
pub(super) fn may_change_files<'a>(mut tools: impl Iterator<Item = &'a str>) -> bool {
    tools.any(|tool| !READS.contains(&tool))
}

/// Why a checkpoint was taken: the run's start, or the tools of an iteration.
pub(super) enum Moment<'a> {
    RunStart,
    After(&'a [String]),
}

impl Agent {
    /// Records the workspace as a checkpoint of the thread. An iteration's that changed
    /// nothing is not kept in the thread; a daemon that cannot checkpoint (an older coved,
    /// a store that fails) turns checkpoints off for the rest of the run, which goes on.
    pub(super) async fn checkpoint(&self, live: &mut LiveRun, moment: Moment<'_>) {
        if !self.config.checkpoints || live.checkpoints_off {
            return;
        }
        let reason = match moment {
            Moment::RunStart => cove_store::RUN_START.to_string(),
            Moment::After(tools) => {
                let mut names: Vec<&str> = tools.iter().map(String::as_str).collect();
                names.dedup();
                format!("after {}", names.join(", "))
            }
        };
        let after_message = match self.store.last_message_id(&live.thread.id) {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the thread's newest message; no checkpoint");
                return;
            }
        };
        let request = CreateCheckpoint {
            label: Some(format!("{}: {reason}", live.thread.id)),
            keep: false,
        };
        let made = match self.sandbox.create_checkpoint(&request).await {
            Ok(made) => made,
            Err(e) => {
                tracing::warn!(error = %e, "the sandbox cannot checkpoint its workspace; checkpoints are off for this run");
                live.checkpoints_off = true;
                return;
            }
        };
        if made.changed == 0 && matches!(moment, Moment::After(_)) {
            return;
        }
        let kept = ThreadCheckpoint {
            checkpoint: made.checkpoint.id,
            sandbox: live.thread.sandbox.clone(),
            run_id: live.run_id.clone(),
            after_message,
            reason,
            files: made.checkpoint.files,
            changed: made.changed,
            created_at: 0,
        };
        if let Err(e) = self.store.add_checkpoint(&live.thread.id, &kept) {
            tracing::warn!(error = %e, "cannot keep the checkpoint in the thread");
        }
    }
}
