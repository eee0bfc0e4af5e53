//! Cove's wire protocol: every type that crosses the HTTP boundary between the controller
//! (`cove`) and the sandbox daemon (`coved`), the route table with its OpenAPI document, and,
//! with the `client` feature, the typed async client for coved.

pub mod api;
pub mod browser;
pub mod checkpoints;
pub mod conversation;
pub mod error;
pub mod events;
pub mod files;
pub mod forks;
pub mod info;
pub mod metrics;
pub mod plan;
pub mod preview;
pub mod serve;
pub mod shell;
pub mod takeover;
pub mod vision;
pub mod watches;
pub mod web;

#[cfg(feature = "client")]
pub mod client;

pub use api::API_VERSION;
pub use error::{ErrorBody, ErrorCode, ErrorEnvelope};
