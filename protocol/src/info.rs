//! Health and identity of a daemon.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /health`: answered without auth, as soon as the daemon listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HealthResponse {
    /// Always `"ok"` when the daemon answers at all.
    pub status: String,
}

/// `GET /v1/info`: what this daemon is and can do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InfoResponse {
    /// Always `"coved"`.
    pub name: String,
    /// The daemon's crate version.
    pub version: String,
    /// The API version served under `/v1`.
    pub api_version: String,
    /// Endpoint families this daemon serves: `shell`, `files`, `browser`, `vision`, `takeover`.
    pub capabilities: Vec<String>,
    /// Absolute path of the workspace root inside the sandbox.
    pub workspace: String,
}
