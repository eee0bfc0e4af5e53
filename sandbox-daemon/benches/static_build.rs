//! `cargo bench -p coved --bench static_build`: the statically linked coved (crt-static,
//! the one the sandbox image carries) beside the dynamically linked one, both release
//! builds, printed as JSON: file size (stripped and as built), start to the first `/health`,
//! and resident memory when idle after a few requests and a shell command.
//!
//! Builds the static one itself (`RUSTFLAGS=-C target-feature=+crt-static`, `--target
//! x86_64-unknown-linux-gnu`), which takes a few minutes the first time.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cove_harness::stats::{ms, round, summary};
use cove_harness::{DaemonBuilder, procs};
use cove_protocol::shell::ExecRequest;
use serde_json::{Value, json};

const DYNAMIC: &str = env!("CARGO_BIN_EXE_coved");

fn static_build() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .current_dir(&root)
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "coved",
            "--target",
            "x86_64-unknown-linux-gnu",
        ])
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .status()
        .unwrap();
    assert!(status.success(), "the static build failed");
    root.join("target/x86_64-unknown-linux-gnu/release/coved")
}

fn stripped_size(binary: &Path) -> u64 {
    let copy = tempfile::NamedTempFile::new().unwrap();
    std::fs::copy(binary, copy.path()).unwrap();
    let status = std::process::Command::new("strip")
        .arg(copy.path())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::metadata(copy.path()).unwrap().len()
}

async fn measure(binary: &Path) -> Value {
    let mut startup = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let d = DaemonBuilder::new(binary)
            .env("COVED_LOG", "warn")
            .spawn()
            .await
            .unwrap();
        startup.push(ms(started.elapsed()));
        for _ in 0..5 {
            d.client.health().await.unwrap();
            d.client.info().await.unwrap();
        }
        d.client.exec(&ExecRequest::new("true")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        rss.push(procs::status_kib(d.pid(), "VmRSS").unwrap() as f64 / 1024.0);
    }
    json!({
        "size_mib": round(std::fs::metadata(binary).unwrap().len() as f64 / (1024.0 * 1024.0)),
        "stripped_mib": round(stripped_size(binary) as f64 / (1024.0 * 1024.0)),
        "spawn_to_ready_ms": summary(startup),
        "idle_rss_mib": summary(rss),
    })
}

#[tokio::main]
async fn main() {
    let statically = static_build();
    let dynamic = measure(Path::new(DYNAMIC)).await;
    let stat = measure(&statically).await;
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({"dynamic": dynamic, "static": stat})).unwrap()
    );
}
