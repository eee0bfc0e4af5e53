//! Forks outlive their daemon: each fork's folder keeps a record of it (`fork.json`), and
//! a daemon starting over the same checkpoint store takes up the forks it finds. A local
//! sandbox stops when its controller does, and a sub-agent paused on a question goes on in
//! its copy when the person answers.

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use cove_protocol::forks::ForkInfo;
use serde::{Deserialize, Serialize};

/// The record's name in a fork's folder.
const RECORD: &str = "fork.json";

/// What a fork's folder records of it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Record {
    pub(super) info: ForkInfo,
    /// Its own checkpoint of where it began.
    pub(super) began: String,
}

/// Writes a fork's record into its folder `dir`, whole or not at all, and on the disk
/// before it is answered (a record lost to a crash would lose the fork's work).
pub(super) fn write(dir: &Path, record: &Record) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
    let part = dir.join(format!("{RECORD}.part"));
    let mut file = File::create(&part)?;
    file.write_all(&json)?;
    file.sync_all()?;
    std::fs::rename(&part, dir.join(RECORD))?;
    File::open(dir)?.sync_all()
}

/// Claims the forks under `root` for this daemon while the lock it answers is held: a
/// second daemon over the same checkpoint store gets none, and takes up no forks.
pub(super) fn claim(root: &Path) -> Option<OwnedFd> {
    std::fs::create_dir_all(root).ok()?;
    let lock: OwnedFd = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join("lock"))
        .ok()?
        .into();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
    Some(lock)
}

/// The forks kept under `root`, each with its folder; a folder without a whole record (a
/// fork whose making was cut short) is removed.
pub(super) fn found(root: &Path) -> Vec<(PathBuf, Record)> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        let record = std::fs::read(dir.join(RECORD))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
            .filter(|r| dir.file_name().is_some_and(|name| *name == *r.info.id));
        match record {
            Some(record) => kept.push((dir, record)),
            None => {
                tracing::warn!(dir = %dir.display(), "removing a fork whose making was cut short");
                if let Err(e) = std::fs::remove_dir_all(&dir) {
                    tracing::warn!(error = %e, "the unfinished fork could not be removed");
                }
            }
        }
    }
    kept.sort_by(|a, b| a.1.info.created_at.cmp(&b.1.info.created_at));
    kept
}
