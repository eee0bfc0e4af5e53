//! The Cove engine: the agent loop, its context, tools, permissions, MCP, skills and web
//! tools, and the session layer every front end calls (`session`). It takes an opened
//! sandbox client and never opens sandboxes itself; it emits typed run events and never
//! prints: the front ends (`cove`, `cove-serve`) render them.

// Only the front ends talk to people; the engine reports through events and errors.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub use cove_config as config;
pub mod context;
pub mod export;
pub mod format;
pub use cove_llm as llm;
pub mod mcp;
pub mod permissions;
pub mod plan_answer;
pub mod plan_text;
pub use cove_store::private_files;
pub mod session;
pub mod skills;
pub use cove_store as store;
pub mod toolcall;
pub mod tools;
pub mod trust;
pub mod web;
