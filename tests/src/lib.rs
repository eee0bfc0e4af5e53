//! Cove's test harness: a spawner for real `coved` processes and helpers that read the
//! process table, the fixture web site the browser tests load, and the scripted model server
//! the controller's tests run against.

pub mod bins;
pub mod daemon;
pub mod llm;
pub mod procs;
pub mod site;

pub use bins::workspace_binary;
pub use daemon::{DaemonBuilder, DaemonProcess};
pub use llm::{Chunking, Fault, ScriptedLlm, Turn};
pub use site::FixtureSite;
