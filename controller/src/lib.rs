//! The Cove controller: the agent loop, model providers, tools, persistence and sandboxes.
//! The engine emits typed run events and never prints; the CLI renders them.

pub mod agent;
pub mod cli;
pub mod config;
pub mod context;
pub mod llm;
pub mod sandbox;
pub mod store;
pub mod tools;
