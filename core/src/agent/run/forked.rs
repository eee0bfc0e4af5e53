//! Sub-agents in forks: each forked sub-agent works in its own copy of the workspace
//! (coved's forks, all made from one checkpoint), and its changes come back to the parent
//! as diffs.

use cove_protocol::checkpoints::{Change, CreateCheckpoint};
use cove_protocol::client::CovedClient;
use cove_protocol::forks::CreateFork;

use super::Agent;

/// Characters of a forked sub-agent's diffs its report carries.
const DIFF_CHARS: usize = 4_000;

/// What a forked sub-agent changed in its copy, for the parent's model.
pub(super) async fn fork_changes(sandbox: &CovedClient, fork: &str, thread: &str) -> String {
    let changes = match sandbox.fork_changes(fork).await {
        Ok(changes) => changes,
        Err(e) => return format!("\nIts changes could not be read: {e}."),
    };
    if changes.changes.is_empty() {
        if let Err(e) = sandbox.delete_fork(fork).await {
            tracing::debug!(error = %e, "an unchanged fork was not deleted");
        }
        return "\nIt changed nothing in its copy.".into();
    }
    let mut text = format!(
        "\nIts changes, in its own copy (apply_changes {{\"agent\": \"{thread}\"}} merges them into your workspace):"
    );
    let mut diffs = String::new();
    for change in &changes.changes {
        let mark = match change.change {
            Change::Added => "A",
            Change::Changed => "M",
            Change::Deleted => "D",
        };
        text.push_str(&format!("\n  {mark} {}", change.path));
        if let Some(diff) = &change.diff {
            diffs.push_str(diff);
            if !diff.ends_with('\n') {
                diffs.push('\n');
            }
        }
    }
    if !diffs.is_empty() {
        let shown: String = diffs.chars().take(DIFF_CHARS).collect();
        let cut = if shown.len() < diffs.len() {
            "\n[… the rest cut]"
        } else {
            ""
        };
        text.push_str(&format!("\n```diff\n{shown}{cut}\n```"));
    }
    text
}

impl Agent {
    /// Where a sub-agent works: the sandbox as it is, or a fork of its workspace (all made
    /// from one checkpoint, taken for the first).
    pub(super) async fn place(
        &self,
        fork: bool,
        base: &mut Option<String>,
    ) -> Result<(CovedClient, Option<String>), String> {
        if !fork {
            return Ok((self.sandbox.clone(), None));
        }
        let checkpoint = match base {
            Some(id) => id.clone(),
            None => {
                let request = CreateCheckpoint {
                    label: Some("sub-agents begin".into()),
                    keep: false,
                };
                let made = self
                    .sandbox
                    .create_checkpoint(&request)
                    .await
                    .map_err(|e| format!("its copy of the workspace could not be made: {e}"))?;
                base.insert(made.checkpoint.id).clone()
            }
        };
        let made = self
            .sandbox
            .create_fork(&CreateFork {
                checkpoint: Some(checkpoint),
            })
            .await
            .map_err(|e| format!("its copy of the workspace could not be made: {e}"))?;
        let client = self.sandbox.for_fork(&made.id).map_err(|e| e.to_string())?;
        Ok((client, Some(made.id)))
    }
}
