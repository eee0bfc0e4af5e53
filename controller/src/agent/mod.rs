//! The agent, as a library: [`Agent::start`] runs a thread and returns a [`RunHandle`] that
//! yields the run's typed events and takes the caller's inputs. It never prints.

pub mod answer;
mod config;
pub mod events;
mod handle;
mod permission;
pub mod prompt;
mod run;
pub mod takeover;
pub mod xml;

pub use config::AgentConfig;
pub use handle::{RunController, RunHandle};
pub use prompt::ToolMode;
pub use run::{Agent, RunError, RunOutcome};
