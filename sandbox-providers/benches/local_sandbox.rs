//! The cost of the local sandbox's walls: how long a local sandbox takes to start (bubblewrap,
//! the egress proxy, coved confining itself, until it answers `/health`) and a command's
//! round trip (`POST /v1/shell/exec` of `true`), walled in and with `--sandbox host`'s none.
//! Prints one JSON object.
//!
//! `cargo bench -p cove-sandbox --bench local_sandbox` (release; COVE_BENCH_STARTS, COVE_BENCH_EXECS).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::time::Instant;

use cove_harness::stats::{ms, summary};
use cove_harness::workspace_binary;
use cove_protocol::client::CovedClient;
use cove_protocol::shell::ExecRequest;
use cove_sandbox::{Isolation, LocalDaemon, LocalSettings};
use serde_json::json;

fn main() {
    set_coved(&workspace_binary("coved").unwrap());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

#[allow(unsafe_code)]
fn set_coved(coved: &std::path::Path) {
    // SAFETY: called at the top of main, before the runtime or any other thread exists.
    unsafe { std::env::set_var("COVE_COVED_BIN", coved) };
}

fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn measure(isolation: &Isolation, starts: usize, execs: usize) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut start_times = Vec::new();
    let mut exec_times = Vec::new();
    for n in 0..starts {
        let workspace = dir.path().join(format!("ws-{n}"));
        std::fs::create_dir_all(&workspace).unwrap();
        let began = Instant::now();
        let daemon = LocalDaemon::start(&workspace, isolation, "127.0.0.1:0", None)
            .await
            .unwrap();
        let client = CovedClient::new(&daemon.url, daemon.token.clone()).unwrap();
        client.health().await.unwrap();
        start_times.push(ms(began.elapsed()));
        if n == 0 {
            // The session's shell starts on the first command: not part of a round trip.
            client.exec(&ExecRequest::new("true")).await.unwrap();
            for _ in 0..execs {
                let t = Instant::now();
                client.exec(&ExecRequest::new("true")).await.unwrap();
                exec_times.push(ms(t.elapsed()));
            }
        }
        daemon.stop().await;
    }
    json!({
        "start_ms": summary(start_times),
        "exec_round_trip_ms": summary(exec_times),
    })
}

async fn bench() {
    let starts = count("COVE_BENCH_STARTS", 20);
    let execs = count("COVE_BENCH_EXECS", 500);
    let walled = measure(&Isolation::Walled(LocalSettings::default()), starts, execs).await;
    let host = measure(&Isolation::Host, starts, execs).await;
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "bench": "local_sandbox",
            "walled": walled,
            "host": host,
        }))
        .unwrap()
    );
}
