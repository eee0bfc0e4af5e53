//! Cove's test harness: a spawner for real `coved` processes and helpers that read the
//! process table, the fixture web site the browser tests load, and the scripted model server
//! the controller's tests run against.

pub mod bins;
pub mod browser_text;
pub mod closed_port;
pub mod daemon;
pub mod docker;
pub mod firefox;
pub mod hostile_web;
pub mod images;
pub mod kube_api;
pub mod live;
pub mod llm;
pub mod mcp_servers;
pub mod openapi;
pub mod otlp;
pub mod person;
pub mod preview;
pub mod procs;
pub mod prometheus;
pub mod prompt_cache;
pub mod real_site;
pub mod received;
pub mod recorder;
pub mod site;
pub mod stats;
pub mod tree;
pub mod viewer;
pub mod web_site;

pub use bins::workspace_binary;
pub use closed_port::ClosedPort;
pub use daemon::{DaemonBuilder, DaemonProcess};
pub use live::LiveClient;
pub use llm::{Chunking, Fault, ScriptedLlm, Turn};
pub use site::FixtureSite;
pub use viewer::Viewer;

/// About 19.5 KB of distinct log lines: a tool result as big as the controller keeps, for
/// long-run tests and benchmarks.
pub fn log_text() -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < 19_400 {
        out.push_str(&format!(
            "line {i}: worker {} finished job {} in {} ms with status ok\n",
            i % 7,
            i * 13,
            (i * 37) % 1000
        ));
        i += 1;
    }
    out
}

/// Quotes `s` for a POSIX shell as a single word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
