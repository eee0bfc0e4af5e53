//! Idle pause: when a Docker sandbox Cove made opens and `idle_pause_secs` is set, a
//! watcher (`cove sandbox idle-watch NAME`, a process of its own, so it outlives the
//! command that opened the sandbox) asks the sandbox's coved how long it has been idle and
//! pauses it once it has been for that long, and waits while it is paused; it ends when the
//! sandbox is stopped or gone. One watcher per sandbox: each holds a lock beside the
//! database while it lives. An open sandbox holds its "in use" lock shared, and the watcher
//! pauses only with that lock taken whole, so nothing open is ever paused under its user.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rustix::fs::FlockOperation;

/// The lock a watcher of sandbox `name` holds, beside database `db`.
pub fn lock_path(db: &Path, name: &str) -> PathBuf {
    db.with_file_name("idle-watch").join(format!("{name}.lock"))
}

/// Takes the watcher's lock of sandbox `name`; none when another watcher holds it.
pub fn claim(db: &Path, name: &str) -> Option<OwnedFd> {
    lock(
        &lock_path(db, name),
        FlockOperation::NonBlockingLockExclusive,
    )
}

/// Takes sandbox `name`'s "in use" lock whole, for a pause; none while it is open.
pub fn unused(db: &Path, name: &str) -> Option<OwnedFd> {
    lock(
        &use_path(db, name),
        FlockOperation::NonBlockingLockExclusive,
    )
}

/// Holds sandbox `name` in use while the answer lives, waiting (up to a few seconds) for a
/// pause under way to finish first.
pub async fn in_use(db: &Path, name: &str) -> Option<OwnedFd> {
    let path = use_path(db, name);
    for _ in 0..250 {
        if let Some(held) = lock(&path, FlockOperation::NonBlockingLockShared) {
            return Some(held);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    None
}

fn use_path(db: &Path, name: &str) -> PathBuf {
    db.with_file_name("idle-watch").join(format!("{name}.use"))
}

fn lock(path: &Path, how: FlockOperation) -> Option<OwnedFd> {
    std::fs::create_dir_all(path.parent()?).ok()?;
    let lock: OwnedFd = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?
        .into();
    rustix::fs::flock(&lock, how).ok()?;
    Some(lock)
}

/// Starts `program`'s watcher of sandbox `name` (pausing it after `after_secs` idle) over
/// database `db`, unless one is watching it already.
pub fn start(program: &Path, db: &Path, name: &str, after_secs: u64) {
    // Free now means no watcher: let go at once, for the new one to take.
    if claim(db, name).is_none() {
        return;
    }
    let after = after_secs.to_string();
    let args = ["sandbox", "idle-watch", name, "--after", &after];
    if let Err(e) = spawn_helper(program, db, &args, Stdio::null()) {
        tracing::warn!(error = %e, sandbox = name, "the idle watcher did not start");
    }
}

/// Starts `program --db DB ARGS` (`cove` itself) as a process of its own that outlives
/// this one: out of the terminal's process group (Ctrl-C there is not for it), reaped when
/// it ends while this process lives (a server's), else by init.
pub(crate) fn spawn_helper(
    program: &Path,
    db: &Path,
    args: &[&str],
    stderr: Stdio,
) -> std::io::Result<()> {
    let mut child = tokio::process::Command::new(program)
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(false)
        .spawn()?;
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok(())
}
