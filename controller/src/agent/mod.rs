//! The agent: the run loop and the processing of each model answer.

pub mod answer;
pub mod events;
pub mod prompt;
pub mod run;
pub mod takeover;
pub mod xml;

pub use prompt::ToolMode;
pub use run::{Agent, AgentConfig, RunError, RunOutcome};
