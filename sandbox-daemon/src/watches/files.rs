//! A watch on a file or folder, through inotify: a folder and everything beneath it, a file
//! (through its folder, so a file replaced by a rename counts), or a path that does not
//! exist yet (through its nearest existing folder, followed down as folders appear).
//!
//! Changes are gathered until the tree has been quiet for a moment, so a copy of many files
//! fires once with all their paths, and a file is reported once it is written, not at its
//! first byte.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use cove_protocol::watches::Happened;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use tokio::io::unix::AsyncFd;

use super::WatchError;

/// A change counts once the tree has been quiet this long...
const QUIET: Duration = Duration::from_millis(30);
/// ...or this long after it began, for a tree that never quiets (a long download).
const MOST: Duration = Duration::from_millis(500);
/// Folders one watch follows beneath its root.
const MAX_DIRS: usize = 4096;
/// Paths named in the event.
const MAX_PATHS: usize = 50;
/// Folders not followed unless watched themselves: their churn is never what one waits for.
const SKIPPED: [&str; 2] = [".git", "node_modules"];

/// What a file watch looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    workspace: PathBuf,
    /// Absolute, beneath the workspace.
    path: PathBuf,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tree,
    File,
    Missing,
}

impl Target {
    /// The path a request names (relative to the workspace, or absolute within it).
    pub(super) fn resolve(workspace: &Path, raw: &str) -> Result<Target, WatchError> {
        let given = Path::new(raw.trim());
        if raw.trim().is_empty() || raw.contains('\0') {
            return Err(WatchError::Invalid(
                "path is empty or holds a NUL byte".into(),
            ));
        }
        if given.components().any(|c| c == Component::ParentDir) {
            return Err(WatchError::Outside(format!("{raw:?} (it uses ..)")));
        }
        let path = if given.is_absolute() {
            if !given.starts_with(workspace) {
                return Err(WatchError::Outside(format!("{raw:?}")));
            }
            given.to_path_buf()
        } else {
            workspace.join(given)
        };
        // Where the folders on the way really lead, as far as they exist: a symlinked folder
        // must not take the watch out of the workspace (a link itself is watched as a name
        // in its folder, never followed).
        let existing = path
            .parent()
            .into_iter()
            .flat_map(Path::ancestors)
            .find(|a| a.exists())
            .and_then(|a| std::fs::canonicalize(a).ok());
        let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        if existing.is_some_and(|real| !real.starts_with(&root)) {
            return Err(WatchError::Outside(format!(
                "{raw:?} (through a symbolic link)"
            )));
        }
        let kind = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => Kind::Tree,
            Ok(_) => Kind::File,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Kind::Missing,
            Err(e) => return Err(WatchError::Invalid(format!("cannot watch {raw:?}: {e}"))),
        };
        Ok(Target {
            workspace: workspace.to_path_buf(),
            path,
            kind,
        })
    }

    fn relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.workspace).unwrap_or(path);
        if rel.as_os_str().is_empty() {
            ".".to_string()
        } else {
            rel.to_string_lossy().into_owned()
        }
    }
}

/// One inotify event, owned.
struct Raw {
    wd: i32,
    mask: ReadFlags,
    name: Option<OsString>,
}

/// An inotify instance and the folders it watches.
struct Inotify {
    fd: AsyncFd<OwnedFd>,
    dirs: HashMap<i32, PathBuf>,
    buf: Vec<MaybeUninit<u8>>,
}

fn changes() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MODIFY
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::ATTRIB
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
        | WatchFlags::DONT_FOLLOW
}

impl Inotify {
    #[allow(unsafe_code)]
    fn new() -> std::io::Result<Inotify> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        // SAFETY: an OwnedFd is open until it is dropped, which only the AsyncFd that owns it
        // can do, and always answers the same descriptor.
        let fd = unsafe { AsyncFd::register(fd) }.map_err(|e| e.into_parts().1)?;
        Ok(Inotify {
            fd,
            dirs: HashMap::new(),
            buf: vec![MaybeUninit::uninit(); 16 * 1024],
        })
    }

    fn add(&mut self, dir: &Path) -> std::io::Result<()> {
        let wd = inotify::add_watch(self.fd.get_ref(), dir, changes())?;
        self.dirs.insert(wd, dir.to_path_buf());
        Ok(())
    }

    /// Watches `dir` and the folders beneath it, as far as the cap allows.
    fn add_tree(&mut self, dir: &Path, root: &Path) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if self.dirs.len() >= MAX_DIRS {
                tracing::debug!(root = %root.display(), "file watch reached its folder cap");
                return;
            }
            if self.add(&dir).is_err() {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                let skipped = SKIPPED.iter().any(|s| entry.file_name() == *s);
                if is_dir && !skipped {
                    stack.push(entry.path());
                }
            }
        }
    }

    fn clear(&mut self) {
        for wd in std::mem::take(&mut self.dirs).into_keys() {
            let _ = inotify::remove_watch(self.fd.get_ref(), wd);
        }
    }

    /// The events ready now, waiting for the first.
    async fn read(&mut self) -> std::io::Result<Vec<Raw>> {
        loop {
            let mut guard = self.fd.readable().await?;
            let buf = &mut self.buf;
            let read = guard.try_io(|fd| {
                let mut reader = inotify::Reader::new(fd.get_ref(), buf);
                let mut out = Vec::new();
                loop {
                    match reader.next() {
                        Ok(event) => out.push(Raw {
                            wd: event.wd(),
                            mask: event.events(),
                            name: event
                                .file_name()
                                .map(|n| std::ffi::OsStr::from_bytes(n.to_bytes()).to_owned()),
                        }),
                        Err(rustix::io::Errno::AGAIN) if !out.is_empty() => return Ok(out),
                        Err(e) => return Err(std::io::Error::from(e)),
                    }
                }
            });
            match read {
                Ok(result) => return result,
                // Not ready after all; wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

/// Resolves when `target` changes.
pub(super) async fn changed(target: Target) -> Happened {
    match watch_target(&target).await {
        Ok(happened) => happened,
        Err(e) => Happened::Failed {
            reason: format!("cannot watch {}: {e}", target.relative(&target.path)),
        },
    }
}

async fn watch_target(target: &Target) -> std::io::Result<Happened> {
    let mut inotify = Inotify::new()?;
    match target.kind {
        Kind::Tree => inotify.add_tree(&target.path, &target.path),
        Kind::File => inotify.add(parent_of(&target.path))?,
        Kind::Missing => return appeared(target, inotify).await,
    }
    let mut seen = BTreeSet::new();
    // The first relevant change, then whatever follows until quiet.
    let began = loop {
        gather(target, &mut inotify, &mut seen).await?;
        if !seen.is_empty() {
            break tokio::time::Instant::now();
        }
    };
    loop {
        let until = (tokio::time::Instant::now() + QUIET).min(began + MOST);
        match tokio::time::timeout_at(until, gather(target, &mut inotify, &mut seen)).await {
            Ok(result) => result?,
            Err(_quiet) => break,
        }
    }
    let more = seen.len().saturating_sub(MAX_PATHS) as u64;
    Ok(Happened::Changed {
        paths: seen.into_iter().take(MAX_PATHS).collect(),
        more,
    })
}

fn parent_of(path: &Path) -> &Path {
    path.parent().unwrap_or(path)
}

/// Reads one batch of events, adding the paths that matter to `seen` and following new
/// folders.
async fn gather(
    target: &Target,
    inotify: &mut Inotify,
    seen: &mut BTreeSet<String>,
) -> std::io::Result<()> {
    for raw in inotify.read().await? {
        let Some(dir) = inotify.dirs.get(&raw.wd).cloned() else {
            continue;
        };
        if raw.mask.contains(ReadFlags::IGNORED) {
            inotify.dirs.remove(&raw.wd);
            continue;
        }
        let path = match &raw.name {
            Some(name) => dir.join(name),
            None => dir.clone(),
        };
        match target.kind {
            Kind::File if path != target.path => continue,
            Kind::Tree
                if raw.mask.contains(ReadFlags::ISDIR)
                    && raw.mask.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) =>
            {
                inotify.add_tree(&path, &target.path);
            }
            _ => {}
        }
        // A folder's own attribute change says nothing of its files.
        if raw.name.is_none() && raw.mask.contains(ReadFlags::ATTRIB) {
            continue;
        }
        seen.insert(target.relative(&path));
    }
    Ok(())
}

/// Resolves when a path that did not exist comes into being: its nearest existing folder
/// is watched, and the watch moves down as the folders on the way appear.
async fn appeared(target: &Target, mut inotify: Inotify) -> std::io::Result<Happened> {
    loop {
        if std::fs::symlink_metadata(&target.path).is_ok() {
            return Ok(Happened::Changed {
                paths: vec![target.relative(&target.path)],
                more: 0,
            });
        }
        let nearest = target
            .path
            .ancestors()
            .skip(1)
            .find(|a| a.is_dir())
            .unwrap_or(&target.workspace)
            .to_path_buf();
        if inotify.dirs.values().all(|d| *d != nearest) {
            inotify.clear();
            inotify.add(&nearest)?;
            // It may have appeared between the look and the watch.
            continue;
        }
        inotify.read().await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_in_the_workspace() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.txt"), "a").unwrap();
        assert_eq!(Target::resolve(root, "src").unwrap().kind, Kind::Tree);
        assert_eq!(Target::resolve(root, "src/a.txt").unwrap().kind, Kind::File);
        assert_eq!(
            Target::resolve(root, "out/report.json").unwrap().kind,
            Kind::Missing
        );
        let inside = root.join("src").to_string_lossy().into_owned();
        assert_eq!(Target::resolve(root, &inside).unwrap().kind, Kind::Tree);
        for bad in ["../x", "src/../../etc", "/etc/passwd"] {
            assert!(
                matches!(Target::resolve(root, bad), Err(WatchError::Outside(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            Target::resolve(root, " "),
            Err(WatchError::Invalid(_))
        ));
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        for bad in ["etc/ssh", "etc/nothing/here"] {
            assert!(
                matches!(Target::resolve(root, bad), Err(WatchError::Outside(_))),
                "{bad}"
            );
        }
        // The link itself, a name in the workspace, may be watched.
        assert_eq!(Target::resolve(root, "etc").unwrap().kind, Kind::File);
    }
}
