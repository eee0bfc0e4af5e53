//! Cove's test harness: a spawner for real `coved` processes and helpers that read the
//! process table. Later: the fixture web site and the scripted LLM server.

pub mod daemon;
pub mod procs;

pub use daemon::{DaemonBuilder, DaemonProcess};
