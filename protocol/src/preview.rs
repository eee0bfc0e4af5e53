//! Workspace preview: how a person opens what the agent built. Files are served read-only
//! under `/preview/`, servers the agent starts inside the sandbox under `/proxy/{port}/`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/preview/expose`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExposeRequest {
    /// The port a server inside the sandbox listens on (on 127.0.0.1 or all addresses).
    pub port: u16,
}

/// The answer to `POST /v1/preview/expose`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExposeResponse {
    pub port: u16,
    /// Opens the server in a browser, at the root of its own origin (`http://p8000-3f9a1c2e.localhost:7700/`);
    /// carries the preview token (good for previews only, never for the API), which the first
    /// visit trades for a cookie of that origin.
    pub url: String,
    /// The workspace's files, read-only, on their own origin, with the same token.
    pub files_url: String,
    /// A process the agent started listens on the port now.
    pub listening: bool,
}
