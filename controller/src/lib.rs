//! The Cove controller: the agent loop, model providers, tools, persistence and sandboxes.
//! The engine emits typed run events and never prints; the CLI renders them.

// Only the command line talks to people; everything else reports through events and errors.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
pub use cove_config as config;
pub mod context;
pub mod format;
pub use cove_llm as llm;
pub mod mcp;
pub mod permissions;
pub mod plan_answer;
pub mod plan_text;
pub use cove_store::private_files;
pub mod sandbox;
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod serve;
pub mod session;
pub mod skills;
pub use cove_store as store;
pub mod toolcall;
pub mod tools;
pub mod trust;
pub mod web;
