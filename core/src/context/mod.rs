//! What the model is sent besides the system prompt: the history fitted into the model's
//! window, the knowledge base, and the temporary message that carries the latest browser
//! state and images for one call only.

pub mod compress;
pub mod knowledge;
pub mod summarize;
mod temporary;
pub mod tokens;

pub use compress::{Budget, ContextError, Cuts, Entry, Fitted, Stats, fit, page_tokens};
pub use temporary::temporary_message;
pub use tokens::{Calibration, TokenCounter};

/// How a run keeps its history within the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ContextMode {
    /// Send everything; the provider refuses what does not fit (for comparisons).
    Off,
    /// Drop old arguments, truncate, omit (the default).
    #[default]
    Truncate,
    /// First replace older history with a summary the model writes, then truncate.
    Summarize,
}

impl ContextMode {
    /// Parses `off`, `truncate` or `summarize`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(ContextMode::Off),
            "truncate" => Some(ContextMode::Truncate),
            "summarize" | "summarise" => Some(ContextMode::Summarize),
            _ => None,
        }
    }

    /// The name `parse` takes.
    pub fn as_str(&self) -> &'static str {
        match self {
            ContextMode::Off => "off",
            ContextMode::Truncate => "truncate",
            ContextMode::Summarize => "summarize",
        }
    }
}

/// How runs manage their context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextSettings {
    pub mode: ContextMode,
    /// Tokens the knowledge section of the system prompt may take.
    pub knowledge_budget: usize,
    /// Keep each call's history a prefix of the next one's where it can ([`Cuts`]); off,
    /// every call is planned afresh ([`fit`]), as Cove did before (for comparisons).
    pub prefix_stable: bool,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings {
            mode: ContextMode::Truncate,
            knowledge_budget: knowledge::DEFAULT_BUDGET,
            prefix_stable: true,
        }
    }
}
