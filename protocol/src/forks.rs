//! Fork wire types: copies of the workspace inside the same sandbox, each served by the
//! daemon as a workspace of its own (requests carry [`FORK_HEADER`]), whose changes come
//! back as a diff and are merged into the workspace file by file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The request header that sends a request to a fork instead of the workspace: every route
/// of the API then works on the fork's own copy, shells and browser.
pub const FORK_HEADER: &str = "x-cove-fork";

/// Body of `POST /v1/forks`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateFork {
    /// The checkpoint the fork starts from (default: one taken now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

/// One fork.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForkInfo {
    /// `f` and hex digits.
    pub id: String,
    /// The workspace's checkpoint it started from.
    pub base: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// Files it started with.
    pub files: u64,
}

/// `GET /v1/forks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForkList {
    pub forks: Vec<ForkInfo>,
}

/// What merging a fork's changes into the workspace did, path by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApplyResponse {
    /// Taken as the fork has them: the workspace had not changed them since the fork began.
    pub applied: Vec<String>,
    /// Text files both changed, in different lines: both changes kept.
    pub merged: Vec<String>,
    /// The workspace has them as the fork does already.
    pub unchanged: Vec<String>,
    /// Left as the workspace has them: each with why.
    pub conflicts: Vec<Conflict>,
}

/// A path whose fork changes were not merged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Conflict {
    pub path: String,
    pub reason: String,
}
