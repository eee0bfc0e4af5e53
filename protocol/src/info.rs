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

/// `GET /v1/idle`: how long the sandbox has been idle, for an operator's idle pause. Asking
/// does not count as using it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IdleResponse {
    /// Seconds since the last request ended, with none in flight and nothing below busy;
    /// 0 while busy.
    pub idle_secs: f64,
    /// What keeps it busy now: requests in flight (a long poll included), a command running
    /// in a shell session, a person in the takeover view. Empty when idle.
    pub busy: Vec<String>,
}

/// `POST /v1/token`: the token the daemon takes from now on, in place of the one this
/// request carries (which stops working at once). A sandbox made ahead of use (a pool's)
/// gets its own token as it is handed out; one restarted gets it again.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RotateToken {
    /// At least 32 characters, no whitespace.
    pub token: String,
}

impl std::fmt::Debug for RotateToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RotateToken(<redacted>)")
    }
}

/// The answer to `POST /v1/token`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenRotated {
    /// Always true: the old token is refused from now on.
    pub rotated: bool,
}
