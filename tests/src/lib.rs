//! Cove's test harness: a spawner for real `coved` processes and helpers that read the
//! process table, and the fixture web site the browser tests load. Later: the scripted LLM
//! server.

pub mod daemon;
pub mod procs;
pub mod site;

pub use daemon::{DaemonBuilder, DaemonProcess};
pub use site::FixtureSite;
