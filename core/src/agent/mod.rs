//! The agent, as a library: [`Agent::start`] runs a thread and returns a [`RunHandle`] that
//! yields the run's typed events and takes the caller's inputs. It never prints.

pub mod answer;
mod config;
mod control;
pub mod events;
mod family;
mod handle;
mod outcome;
mod permission;
pub mod prompt;
mod run;
mod spans;
pub mod takeover;
mod wake;
pub use crate::toolcall::xml;

pub use crate::toolcall::ToolMode;
pub use config::AgentConfig;
pub use handle::{RunController, RunHandle};
pub use outcome::{RunError, RunOutcome};
pub use run::Agent;
