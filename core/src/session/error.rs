//! Why the engine could not make, prepare or run a thread, sorted by what the caller does
//! next: each front end maps the kind to its own answer (an exit code, an HTTP status).

use cove_protocol::client::ClientError;

use crate::agent::RunError;
use crate::config::ConfigError;
use crate::llm::LlmError;
use crate::llm::choice::ChoiceError;
use crate::store::{PlanError, StoreError};

/// A failure of the engine's session layer: one line for a person, its kind for the caller.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The input is wrong (a setting, a task, a name): fix it and ask again.
    #[error("{0}")]
    Invalid(String),
    /// Name something that exists (the message says how to list them).
    #[error("{0}")]
    NotFound(String),
    /// The thread waits for an answer to its question: reply.
    #[error("{0}")]
    Waiting(String),
    /// The thread is a sub-agent its parent's run takes up: answer or resume the parent.
    #[error("{0}")]
    SubAgent(String),
    /// The thread's plan waits for approval: approve or reject it.
    #[error("{0}")]
    AwaitingApproval(String),
    /// Calls wait for permission: decide them, then resume.
    #[error("{0}")]
    AwaitingPermission(String),
    /// Something still running is in the way (a command in the sandbox's shell): wait for
    /// it, or ask again to stop it.
    #[error("{0}")]
    Busy(String),
    /// Set something up first (the message says what: a key, a file).
    #[error("{0}")]
    Setup(String),
    /// A service did not answer: try again once it is up.
    #[error("{0}")]
    Unreachable(String),
    /// The work failed; the message says why.
    #[error("{0}")]
    Failed(String),
}

impl From<StoreError> for SessionError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NoThread(_) => SessionError::NotFound(e.to_string()),
            StoreError::TooNew { .. } | StoreError::Open { .. } => {
                SessionError::Setup(e.to_string())
            }
            StoreError::Migration { .. } | StoreError::Sql(_) | StoreError::Corrupt(_) => {
                SessionError::Failed(e.to_string())
            }
        }
    }
}

impl From<PlanError> for SessionError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Store(e) => e.into(),
            // The user's edit or answer does not fit the plan's state: it changed nothing.
            other => SessionError::Failed(format!("{other}; nothing was changed")),
        }
    }
}

impl From<LlmError> for SessionError {
    fn from(e: LlmError) -> Self {
        match e {
            LlmError::MissingApiKey { .. }
            | LlmError::Unauthorized { .. }
            | LlmError::BadBaseUrl { .. } => SessionError::Setup(e.to_string()),
            LlmError::ModelNotFound { .. } => SessionError::Invalid(e.to_string()),
            LlmError::Transport { .. } => SessionError::Unreachable(e.to_string()),
            _ => SessionError::Failed(e.to_string()),
        }
    }
}

impl From<ChoiceError> for SessionError {
    fn from(e: ChoiceError) -> Self {
        SessionError::Invalid(e.to_string())
    }
}

impl From<ConfigError> for SessionError {
    fn from(e: ConfigError) -> Self {
        SessionError::Setup(e.to_string())
    }
}

impl From<ClientError> for SessionError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Transport { .. } => SessionError::Unreachable(e.to_string()),
            ClientError::Api { .. } | ClientError::Decode { .. } | ClientError::InvalidInput(_) => {
                SessionError::Failed(e.to_string())
            }
        }
    }
}

impl From<RunError> for SessionError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Llm(e) => e.into(),
            RunError::Store(e) => e.into(),
            RunError::NoPrice { .. } => SessionError::Invalid(e.to_string()),
            RunError::Context(_) | RunError::Crashed(_) | RunError::Plan(_) => {
                SessionError::Failed(e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_key_is_set_up_and_a_dropped_connection_is_unreachable() {
        let key: SessionError = LlmError::MissingApiKey {
            provider: "openai",
            variable: "OPENAI_API_KEY",
        }
        .into();
        assert!(matches!(key, SessionError::Setup(_)), "{key:?}");
        let gone: SessionError = RunError::Llm(LlmError::Transport {
            provider: "openai",
            message: "connection refused".into(),
        })
        .into();
        assert!(matches!(gone, SessionError::Unreachable(_)), "{gone:?}");
        let thread: SessionError = StoreError::NoThread("x".into()).into();
        assert!(matches!(thread, SessionError::NotFound(_)), "{thread:?}");
    }
}
