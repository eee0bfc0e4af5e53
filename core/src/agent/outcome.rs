//! How a run ends: the outcome a caller reads, or the error that stopped it.

use crate::context::ContextError;
use crate::llm::LlmError;
use crate::store::{PauseKind, StoreError};

/// The pause of a run whose calls wait for the user's permission (what they are about).
pub(super) fn awaits_permission(summaries: &[String]) -> RunOutcome {
    RunOutcome::Paused {
        waits_for: PauseKind::Permission,
        text: format!("permission to {}", summaries.join("; ")),
        attachments: Vec::new(),
    }
}

/// How a run ended (when it did not fail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    Completed {
        text: Option<String>,
        attachments: Vec<String>,
    },
    /// Waiting for the user: their answer (`ask`), the browser handed back, or their
    /// approval of a plan.
    Paused {
        waits_for: PauseKind,
        text: String,
        attachments: Vec<String>,
    },
    /// A cap was reached (iterations, or the run's cost limit; an `error` event says which):
    /// `cove resume` continues.
    Stopped,
    /// The caller stopped it ([`RunHandle::stop`](super::RunHandle::stop)); tools in flight were abandoned.
    Interrupted,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The model could not be used (bad key, unknown model, retries exhausted).
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The conversation cannot be made to fit the model's window.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// The plan could not be stored.
    #[error(transparent)]
    Plan(#[from] crate::store::PlanError),
    /// A cost limit was set for a model whose price is unknown: give its price in
    /// `cove.toml`.
    #[error(
        "--max-cost needs the price of {model}, which Cove does not know: set [prices.\"{model}\"] (input and output, dollars per million tokens) in cove.toml"
    )]
    NoPrice { model: String },
    /// The run's task panicked (a bug: report it); `cove resume` continues the thread.
    #[error("the run crashed: {0}")]
    Crashed(String),
}
