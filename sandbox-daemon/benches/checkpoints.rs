//! `cargo bench -p coved --bench checkpoints`: checkpoints of a 10,000-file, 200 MB
//! workspace over coved's API, printed as JSON.
//!
//! - `first_checkpoint`: the first checkpoint, its time and throughput (target >= 300 MB/s),
//!   beside `cp -a` of the same workspace in the same run (`copy_floor`): the store writes
//!   every byte once, so on a filesystem without reflinks a copy is the floor, and both move
//!   with how much the disk is still writing back (each is measured after a `sync`)
//! - `checkpoint_unchanged_ms`: a checkpoint when nothing changed (every file's stat read,
//!   none read), p50
//! - `checkpoint_10_changed_ms`: a checkpoint after 10 files changed, p50 (target <= 50 ms)
//! - `restore_10_changed_ms`: a restore to the checkpoint before 10 files changed (the
//!   workspace recorded first, so the restore can be undone), p50 (target <= 100 ms)
//! - `store_growth`: 100 checkpoints, each after a small edit of one file: what they added
//!   to the store, as a share of the workspace (target <= 2 %)

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::path::Path;
use std::time::Instant;

use cove_harness::DaemonBuilder;
use cove_harness::stats::{ms, round, summary};
use cove_protocol::checkpoints::{CreateCheckpoint, RestoreRequest};
use cove_protocol::client::CovedClient;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_coved");
const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;
const FILE_BYTES: usize = 20 * 1024;
const RUNS: usize = 15;

/// Distinct, incompressible-looking content for file `n` (xorshift).
fn content(n: u64, salt: u64) -> Vec<u8> {
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt ^ 0xDEAD_BEEF;
    let mut out = Vec::with_capacity(FILE_BYTES);
    while out.len() < FILE_BYTES {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(FILE_BYTES);
    out
}

fn file(root: &Path, n: usize) -> std::path::PathBuf {
    root.join(format!(
        "d{:03}/f{:03}.dat",
        n / FILES_PER_DIR,
        n % FILES_PER_DIR
    ))
}

fn fill(root: &Path) {
    for d in 0..DIRS {
        std::fs::create_dir_all(root.join(format!("d{d:03}"))).unwrap();
    }
    for n in 0..DIRS * FILES_PER_DIR {
        std::fs::write(file(root, n), content(n as u64, 0)).unwrap();
    }
}

/// Rewrites 10 files spread over the workspace.
fn change_ten(root: &Path, round: u64) {
    for k in 0..10 {
        let n = (k * 997 + round as usize * 31) % (DIRS * FILES_PER_DIR);
        std::fs::write(file(root, n), content(n as u64, round + 1)).unwrap();
    }
}

/// Writes back what is dirty, so that neither measure pays for the other's writes.
fn sync() {
    std::process::Command::new("sync").status().unwrap();
}

/// `cp -a` of the workspace beside it: what the filesystem's own copy takes.
fn copy_floor(root: &Path) -> f64 {
    let copy = root.with_file_name("copy-floor");
    sync();
    let started = Instant::now();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(root)
        .arg(&copy)
        .status()
        .unwrap();
    let took = ms(started.elapsed());
    assert!(status.success());
    std::fs::remove_dir_all(&copy).unwrap();
    took
}

async fn checkpoint(c: &CovedClient) -> cove_protocol::checkpoints::CheckpointCreated {
    c.create_checkpoint(&CreateCheckpoint::default())
        .await
        .unwrap()
}

#[tokio::main]
async fn main() {
    let d = DaemonBuilder::new(BIN)
        .env("COVED_LOG", "warn")
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    let root = d.workspace.clone();
    fill(&root);
    let total_bytes = (DIRS * FILES_PER_DIR * FILE_BYTES) as f64;

    let copy_ms = copy_floor(&root);
    sync();
    let started = Instant::now();
    let first = checkpoint(c).await;
    let first_ms = ms(started.elapsed());

    let mut unchanged = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let made = checkpoint(c).await;
        unchanged.push(ms(started.elapsed()));
        assert_eq!(made.changed, 0, "{made:?}");
    }

    let mut creates = Vec::new();
    for round in 0..RUNS as u64 {
        change_ten(&root, round);
        let started = Instant::now();
        let made = checkpoint(c).await;
        creates.push(ms(started.elapsed()));
        assert_eq!(made.changed, 10, "{made:?}");
    }

    let mut restores = Vec::new();
    for round in 0..RUNS as u64 {
        let base = checkpoint(c).await.checkpoint.id;
        change_ten(&root, 1000 + round);
        let started = Instant::now();
        let done = c
            .restore_checkpoint(&base, &RestoreRequest::default())
            .await
            .unwrap();
        restores.push(ms(started.elapsed()));
        assert_eq!(done.written, 10, "{done:?}");
    }

    let store_before = c.checkpoints().await.unwrap().store_bytes;
    for round in 0..100u64 {
        // A small edit: a line appended to one file.
        let path = file(&root, (round as usize * 7919) % (DIRS * FILES_PER_DIR));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(format!("edit {round}\n").as_bytes());
        std::fs::write(&path, bytes).unwrap();
        checkpoint(c).await;
    }
    let store_after = c.checkpoints().await.unwrap().store_bytes;
    let growth = (store_after - store_before) as f64;

    let figures = json!({
        "workspace": { "files": DIRS * FILES_PER_DIR, "bytes": total_bytes },
        "first_checkpoint": {
            "ms": round(first_ms),
            "mb_per_s": round(total_bytes / 1e6 / (first_ms / 1000.0)),
            "bytes_added": first.bytes_added,
        },
        "copy_floor": {
            "ms": round(copy_ms),
            "mb_per_s": round(total_bytes / 1e6 / (copy_ms / 1000.0)),
        },
        "checkpoint_unchanged_ms": summary(unchanged),
        "checkpoint_10_changed_ms": summary(creates),
        "restore_10_changed_ms": summary(restores),
        "store_growth": {
            "checkpoints": 100,
            "bytes_added": growth,
            "share_of_workspace_percent": round(growth / total_bytes * 100.0),
        },
    });
    println!("{}", serde_json::to_string_pretty(&figures).unwrap());
}
