//! The Cove controller: the agent loop, model providers, tools, persistence and sandboxes.
//! The engine emits typed run events and never prints; the CLI renders them.

pub mod agent;
pub mod context;
pub mod llm;
pub mod store;
pub mod tools;
