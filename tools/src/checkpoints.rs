//! Checkpoints of the workspace, for MCP hosts: record it, list the points, see what changed,
//! go back. Cove's own agent does not get these: its controller checkpoints each run itself
//! and rewinds the conversation with the files.

use cove_protocol::checkpoints::{
    Change, CheckpointDiff, CreateCheckpoint, DiffQuery, RestoreRequest,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::{SandboxEnv, ToolDef, ToolResult, tool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Create {
    /// What this point is ("before the refactor").
    #[serde(default)]
    label: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Nothing {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Diff {
    /// The checkpoint to compare from (c12).
    id: String,
    /// Another checkpoint, or "current" (the default) for the workspace now.
    #[serde(default)]
    to: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Restore {
    /// The checkpoint to go back to (c12).
    id: String,
    /// Kill shell sessions that are running a command first (else the restore waits).
    #[serde(default)]
    stop_commands: bool,
}

async fn create(env: &SandboxEnv, a: Create) -> ToolResult {
    let request = CreateCheckpoint {
        label: a.label,
        keep: false,
    };
    match env.sandbox.create_checkpoint(&request).await {
        Ok(made) => ToolResult::ok(format!(
            "Checkpoint {}: {} files, {} changed since the last one ({} ms).{}",
            made.checkpoint.id,
            made.checkpoint.files,
            made.changed,
            made.ms,
            if made.ignored.is_empty() {
                String::new()
            } else {
                format!(" Left out by .coveignore: {}.", made.ignored.join(", "))
            }
        )),
        Err(e) => ToolResult::from_client(&e),
    }
}

async fn list(env: &SandboxEnv, _: Nothing) -> ToolResult {
    match env.sandbox.checkpoints().await {
        Ok(list) if list.checkpoints.is_empty() => ToolResult::ok("No checkpoints yet."),
        Ok(list) => ToolResult::ok(
            list.checkpoints
                .iter()
                .map(|k| {
                    format!(
                        "{}  {}  {} files  {}",
                        k.id,
                        k.created_at,
                        k.files,
                        k.label.as_deref().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Err(e) => ToolResult::from_client(&e),
    }
}

/// A diff as a model reads it: a line per path, then the text diffs.
pub fn diff_text(diff: &CheckpointDiff) -> String {
    let mut out = format!(
        "From {} to {}: {} added, {} changed, {} deleted.\n",
        diff.from, diff.to, diff.added, diff.changed, diff.deleted
    );
    for change in &diff.changes {
        let sign = match change.change {
            Change::Added => '+',
            Change::Changed => '~',
            Change::Deleted => '-',
        };
        let mode = match (&change.mode_from, &change.mode_to) {
            (Some(a), Some(b)) if a != b => format!(" (mode {a} -> {b})"),
            _ => String::new(),
        };
        let binary = if change.binary { " (binary)" } else { "" };
        out.push_str(&format!("{sign} {}{mode}{binary}\n", change.path));
    }
    for text in diff.changes.iter().filter_map(|c| c.diff.as_deref()) {
        out.push_str(text);
    }
    if diff.truncated {
        out.push_str("(some of the diff was left out to keep it short)\n");
    }
    out
}

async fn diff(env: &SandboxEnv, a: Diff) -> ToolResult {
    let query = DiffQuery {
        to: a
            .to
            .unwrap_or_else(|| cove_protocol::checkpoints::CURRENT.to_string()),
    };
    match env.sandbox.checkpoint_diff(&a.id, &query).await {
        Ok(diff) => ToolResult::ok(diff_text(&diff)),
        Err(e) => ToolResult::from_client(&e),
    }
}

async fn restore(env: &SandboxEnv, a: Restore) -> ToolResult {
    let request = RestoreRequest {
        stop_commands: a.stop_commands,
    };
    match env.sandbox.restore_checkpoint(&a.id, &request).await {
        Ok(done) => ToolResult::ok(format!(
            "The workspace is checkpoint {} again ({} paths written, {} removed). What it was just before is checkpoint {}: restore that to undo this.",
            done.id, done.written, done.removed, done.before
        )),
        Err(e) => ToolResult::from_client(&e),
    }
}

/// The checkpoint tools (offered over MCP).
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "create_checkpoint",
            args: Create,
            summary: Some("label"),
            raw: &[],
            description: "Record the whole workspace as it is now (every file, mode, link and folder, whatever changed them), to compare with or go back to later.",
            example: json!({"label": "before the refactor"}),
            run: create,
        },
        tool! {
            name: "list_checkpoints",
            args: Nothing,
            summary: None,
            raw: &[],
            description: "List the workspace's checkpoints, oldest first.",
            example: json!({}),
            run: list,
        },
        tool! {
            name: "diff_checkpoint",
            args: Diff,
            summary: Some("id"),
            raw: &[],
            description: "Show what was added, changed and deleted since a checkpoint (or between two), with the changes of text files.",
            example: json!({"id": "c3"}),
            run: diff,
        },
        tool! {
            name: "restore_checkpoint",
            args: Restore,
            summary: Some("id"),
            raw: &[],
            description: "Make the workspace exactly what it was at a checkpoint: later files removed, deleted ones back, modes and links as they were. The workspace as it is now is recorded first, so this can be undone.",
            example: json!({"id": "c3"}),
            run: restore,
        },
    ]
}
