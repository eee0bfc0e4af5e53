//! Checkpoint wire types: the workspace recorded whole (files, modes, symlinks, folders) at a
//! point, compared with another point, restored, and moved between sandboxes as a tar.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `to` means when it names no checkpoint: the workspace as it is now.
pub const CURRENT: &str = "current";

/// Body of `POST /v1/checkpoints`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCheckpoint {
    /// A note of what this point is (shown in listings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Never dropped to keep the store under its cap.
    #[serde(default)]
    pub keep: bool,
}

/// One checkpoint, as listings show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointInfo {
    /// `c` and a number, unique in this sandbox's store.
    pub id: String,
    /// The checkpoint before it, when one was kept.
    pub parent: Option<String>,
    pub label: Option<String>,
    /// When it was taken (RFC 3339).
    pub created_at: String,
    /// Regular files recorded.
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    /// The files' bytes.
    pub bytes: u64,
    /// Kept whatever the store's cap says.
    pub keep: bool,
}

/// The answer to `POST /v1/checkpoints` and `POST /v1/checkpoints/import`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointCreated {
    #[serde(flatten)]
    pub checkpoint: CheckpointInfo,
    /// Paths added, changed (content, mode, link target) or deleted since `parent`.
    pub changed: u64,
    /// New content the store took for it.
    pub bytes_added: u64,
    /// Time taken, in milliseconds.
    pub ms: u64,
    /// The `.coveignore` patterns that left paths out.
    pub ignored: Vec<String>,
    /// Paths that are neither file, folder nor symlink (sockets, FIFOs, devices): not
    /// recorded, and left alone by a restore.
    pub skipped: Vec<String>,
    /// Older checkpoints dropped to keep the store under its cap.
    pub dropped: Vec<String>,
}

/// The answer to `GET /v1/checkpoints`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointList {
    /// Oldest first.
    pub checkpoints: Vec<CheckpointInfo>,
    /// Bytes the store holds.
    pub store_bytes: u64,
    /// Above this the oldest checkpoints not kept are dropped.
    pub store_cap: u64,
    /// The `.coveignore` patterns in force.
    pub ignored: Vec<String>,
}

/// Query of `GET /v1/checkpoints/{id}/diff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffQuery {
    /// A checkpoint id, or `current` (the default) for the workspace as it is now.
    #[serde(default = "current")]
    pub to: String,
}

fn current() -> String {
    CURRENT.to_string()
}

impl Default for DiffQuery {
    fn default() -> Self {
        DiffQuery { to: current() }
    }
}

/// How a path differs between two points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Changed,
    Deleted,
}

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

/// One path that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PathChange {
    /// Relative to the workspace root.
    pub path: String,
    pub change: Change,
    /// What it is at `to` (at `from` when deleted).
    pub kind: EntryKind,
    /// Permission bits at `from` and `to` (octal), when it is there.
    pub mode_from: Option<String>,
    pub mode_to: Option<String>,
    /// Content that is not UTF-8 text: named, not shown.
    pub binary: bool,
    /// A unified diff of a text file's content (capped), when it changed.
    pub diff: Option<String>,
}

/// The answer to `GET /v1/checkpoints/{id}/diff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointDiff {
    pub from: String,
    pub to: String,
    pub added: u64,
    pub changed: u64,
    pub deleted: u64,
    /// Sorted by path; folders that only hold changes are not listed themselves.
    pub changes: Vec<PathChange>,
    /// Some diffs were cut (or left out) to keep the answer small.
    pub truncated: bool,
}

/// Body of `POST /v1/checkpoints/{id}/restore`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreRequest {
    /// Kill the shell sessions that are running a command first, instead of answering
    /// `busy`.
    #[serde(default)]
    pub stop_commands: bool,
}

/// The answer to `POST /v1/checkpoints/{id}/restore`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RestoreResponse {
    /// The checkpoint the workspace now equals.
    pub id: String,
    /// A checkpoint of the workspace as it was just before, to undo the restore.
    pub before: String,
    /// Files, links and folders written or re-moded.
    pub written: u64,
    /// Paths removed.
    pub removed: u64,
    /// Shell sessions killed first (`stop_commands`).
    pub stopped_sessions: Vec<String>,
    pub ms: u64,
}

/// Query of `POST /v1/checkpoints/import`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}
