//! Whether this machine can wall a sandbox in: bubblewrap installed, and the kernel letting
//! this user make namespaces. Asked once per process (a few milliseconds); a machine that
//! cannot is told so in one line, with its choices, and nothing runs unwalled unasked.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use super::SandboxError;

/// bubblewrap's executable, as it is named on `PATH`.
const BWRAP: &str = "bwrap";

/// bubblewrap, found on this process's `PATH`, if walls can go up here; the reason when
/// not.
pub fn check() -> Result<PathBuf, SandboxError> {
    static ANSWER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ANSWER
        .get_or_init(try_walls)
        .clone()
        .map_err(|why| SandboxError::NoIsolation { why })
}

fn find_bwrap() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(BWRAP))
        .find(|p| p.is_file())
}

fn try_walls() -> Result<PathBuf, String> {
    let bwrap = find_bwrap().ok_or_else(|| {
        "bubblewrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)".to_string()
    })?;
    let out = Command::new(&bwrap)
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--",
            "true",
        ])
        .env_clear()
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                "bubblewrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)"
                    .to_string()
            }
            _ => format!("bubblewrap cannot run: {e}"),
        })?;
    if out.status.success() {
        return Ok(bwrap);
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let first = said.lines().next().unwrap_or("no reason given").trim();
    let first = first.strip_prefix("bwrap: ").unwrap_or(first);
    Err(format!(
        "bubblewrap cannot make the sandbox's namespaces here ({first}); where the kernel forbids them to users: on Debian, sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04, an AppArmor profile for bwrap; inside a container, run Cove's sandboxes with Docker instead"
    ))
}

/// coved's process inside the walls bwrap `pid` put up (bwrap, then its init, then
/// coved), as this machine numbers it.
pub fn coved_inside(pid: i32) -> Option<i32> {
    let mut level = vec![pid];
    for _ in 0..3 {
        let mut next = Vec::new();
        for parent in level {
            let children =
                std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
                    .unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                let name =
                    std::fs::read_to_string(format!("/proc/{child}/comm")).unwrap_or_default();
                if name.trim() == "coved" {
                    return Some(child);
                }
                next.push(child);
            }
        }
        level = next;
    }
    None
}
