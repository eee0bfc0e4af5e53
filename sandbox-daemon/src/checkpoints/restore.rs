//! Making the workspace what a checkpoint recorded, from what it is now: only folders whose
//! trees differ are visited, each file is written beside its place and renamed over it (a
//! path is always either its old self or its new one), and folders get their modes last.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::CheckpointError;
use super::ignore::Ignore;
use super::index::Index;
use super::scan::{display, open_dir_at, push_name, seen};
use super::store::{Object, Store};
use super::tree::{Entry, Hash, Kind, Tree};

/// Temporary names of files being written; a restore cut short may leave some, which the
/// next one removes (they are in no checkpoint).
pub const TEMP_PREFIX: &str = ".cove-restore-";

/// What a restore did.
#[derive(Debug, Default)]
pub struct Applied {
    pub written: u64,
    pub removed: u64,
}

/// Makes the workspace open at `root` hold `target` where it holds `current` (a tree read
/// just before), and brings the index along.
pub fn apply(
    store: &Store,
    root: &OwnedFd,
    current: &Hash,
    target: &Hash,
    ignore: &Ignore,
    index: &mut Index,
) -> Result<Applied, CheckpointError> {
    let mut restorer = Restorer {
        store,
        ignore,
        index,
        removed: Vec::new(),
        out: Applied::default(),
        fault: Fault::from_env(),
    };
    if current != target {
        let now = store.tree(current)?;
        let then = store.tree(target)?;
        restorer.dir(root, &mut Vec::new(), &now, &then)?;
    }
    let removed = std::mem::take(&mut restorer.removed);
    if !removed.is_empty() {
        restorer.index.retain(|path, _| {
            !removed.iter().any(|gone| {
                path.starts_with(gone)
                    && (path.len() == gone.len() || path.get(gone.len()) == Some(&b'/'))
            })
        });
    }
    Ok(restorer.out)
}

struct Restorer<'a> {
    store: &'a Store,
    ignore: &'a Ignore,
    index: &'a mut Index,
    /// Paths removed (and all beneath them), to drop from the index.
    removed: Vec<Vec<u8>>,
    out: Applied,
    fault: Option<Fault>,
}

/// A fault the tests set off at a known point of a restore (`COVED_TEST_FAULT`), so that a
/// daemon killed or a disk failing midway is tested deterministically, not by timing.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// `restore-kill-after:N`: the daemon kills itself (SIGKILL) after N paths are written.
    KillAfter(u64),
    /// `restore-fail-after:N`: the N+1th write fails as a full disk would.
    FailAfter(u64),
}

impl Fault {
    fn from_env() -> Option<Fault> {
        let spec = std::env::var("COVED_TEST_FAULT").ok()?;
        let (kind, n) = spec.split_once(':')?;
        let n = n.parse().ok()?;
        match kind {
            "restore-kill-after" => Some(Fault::KillAfter(n)),
            "restore-fail-after" => Some(Fault::FailAfter(n)),
            _ => None,
        }
    }
}

fn failed(rel: &[u8]) -> impl FnOnce(rustix::io::Errno) -> CheckpointError + '_ {
    move |e| CheckpointError::Restore {
        path: display(rel),
        source: e.into(),
    }
}

impl Restorer<'_> {
    /// Counts a path about to be written, and sets off the test's fault when it is due.
    fn step(&mut self, rel: &[u8]) -> Result<(), CheckpointError> {
        static FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let due = match self.fault {
            Some(Fault::KillAfter(n) | Fault::FailAfter(n)) => self.out.written >= n,
            None => false,
        };
        // Once per daemon: the undo that follows a failure must be able to run.
        if !due || FIRED.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        match self.fault {
            Some(Fault::KillAfter(_)) => {
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
                Ok(())
            }
            Some(Fault::FailAfter(_)) => Err(CheckpointError::Restore {
                path: display(rel),
                source: io::Error::from_raw_os_error(28),
            }),
            None => Ok(()),
        }
    }

    /// Makes the folder at `fd` (path `rel`) hold `then` where it holds `now`.
    fn dir(
        &mut self,
        fd: &OwnedFd,
        rel: &mut Vec<u8>,
        now: &Tree,
        then: &Tree,
    ) -> Result<(), CheckpointError> {
        for name in now.names_with(then) {
            let cut = push_name(rel, name);
            let done = self.entry(fd, rel, name, now.get(name), then.get(name));
            rel.truncate(cut);
            done?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        fd: &OwnedFd,
        rel: &mut Vec<u8>,
        name: &[u8],
        was: Option<&Entry>,
        wanted: Option<&Entry>,
    ) -> Result<(), CheckpointError> {
        let is_dir = wanted.or(was).is_some_and(|e| e.kind == Kind::Dir);
        // Left out now: left alone, whatever either side says.
        if self.ignore.ignores(rel, is_dir) {
            return Ok(());
        }
        let Some(wanted) = wanted else {
            remove(fd, name).map_err(failed(rel))?;
            self.removed.push(rel.clone());
            self.out.removed += 1;
            return Ok(());
        };
        if let Some(was) = was
            && was.kind == wanted.kind
            && was.hash == wanted.hash
            && was.mode == wanted.mode
        {
            return Ok(());
        }
        self.step(rel)?;
        match wanted.kind {
            Kind::Dir => self.folder(fd, rel, name, was, wanted),
            Kind::File => self.file(fd, rel, name, was, wanted),
            Kind::Symlink => self.symlink(fd, rel, name, was, wanted),
        }
    }

    fn folder(
        &mut self,
        fd: &OwnedFd,
        rel: &mut Vec<u8>,
        name: &[u8],
        was: Option<&Entry>,
        wanted: &Entry,
    ) -> Result<(), CheckpointError> {
        let now = match was {
            Some(was) if was.kind == Kind::Dir => self.store.tree(&was.hash)?,
            _ => Tree::default(),
        };
        let child = match open_dir_at(fd, name) {
            Ok(child) => child,
            Err(_) => {
                // Something else (or nothing) is there: a folder takes its place.
                match remove(fd, name) {
                    Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                    Err(e) => return Err(failed(rel)(e)),
                }
                rustix::fs::mkdirat(fd, OsStr::from_bytes(name), Mode::from_raw_mode(0o700))
                    .map_err(failed(rel))?;
                open_dir_at(fd, name).map_err(failed(rel))?
            }
        };
        // Writable while it is filled; its own mode comes last.
        rustix::fs::fchmod(&child, Mode::from_raw_mode(0o700)).map_err(failed(rel))?;
        let then = self.store.tree(&wanted.hash)?;
        self.dir(&child, rel, &now, &then)?;
        rustix::fs::fchmod(&child, Mode::from_raw_mode(wanted.mode)).map_err(failed(rel))?;
        self.seen(fd, rel, name, Kind::Dir, [0; 32])?;
        // A folder counts as written when it was made or its mode changed, not for what
        // changed inside it.
        if was.is_none_or(|w| w.kind != Kind::Dir || w.mode != wanted.mode) {
            self.out.written += 1;
        }
        Ok(())
    }

    fn file(
        &mut self,
        fd: &OwnedFd,
        rel: &[u8],
        name: &[u8],
        was: Option<&Entry>,
        wanted: &Entry,
    ) -> Result<(), CheckpointError> {
        let same_content = was.is_some_and(|w| w.kind == Kind::File && w.hash == wanted.hash);
        if same_content {
            rustix::fs::chmodat(
                fd,
                OsStr::from_bytes(name),
                Mode::from_raw_mode(wanted.mode),
                AtFlags::empty(),
            )
            .map_err(failed(rel))?;
        } else {
            if was.is_some_and(|w| w.kind == Kind::Dir) {
                remove(fd, name).map_err(failed(rel))?;
                self.removed.push(rel.to_vec());
            }
            let temp = temp_name();
            let made = rustix::fs::openat(
                fd,
                OsStr::from_bytes(&temp),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(failed(rel))?;
            let mut out = File::from(made);
            let written = match self.store.open_object(&wanted.hash)? {
                Object::Loose(mut object) => match rustix::fs::ioctl_ficlone(&out, &object) {
                    Ok(()) => Ok(0),
                    Err(_) => io::copy(&mut object, &mut out),
                },
                Object::Packed(mut part) => io::copy(&mut part, &mut out),
            };
            let moded = written.and_then(|_| {
                rustix::fs::fchmod(&out, Mode::from_raw_mode(wanted.mode)).map_err(io::Error::from)
            });
            drop(out);
            let renamed = moded.and_then(|()| {
                rustix::fs::renameat(fd, OsStr::from_bytes(&temp), fd, OsStr::from_bytes(name))
                    .map_err(io::Error::from)
            });
            if let Err(source) = renamed {
                let _ = rustix::fs::unlinkat(fd, OsStr::from_bytes(&temp), AtFlags::empty());
                return Err(CheckpointError::Restore {
                    path: display(rel),
                    source,
                });
            }
        }
        self.seen(fd, rel, name, Kind::File, wanted.hash)?;
        self.out.written += 1;
        Ok(())
    }

    fn symlink(
        &mut self,
        fd: &OwnedFd,
        rel: &[u8],
        name: &[u8],
        was: Option<&Entry>,
        wanted: &Entry,
    ) -> Result<(), CheckpointError> {
        if was.is_some_and(|w| w.kind == Kind::Dir) {
            remove(fd, name).map_err(failed(rel))?;
            self.removed.push(rel.to_vec());
        }
        let temp = temp_name();
        rustix::fs::symlinkat(
            OsStr::from_bytes(&wanted.target),
            fd,
            OsStr::from_bytes(&temp),
        )
        .map_err(failed(rel))?;
        if let Err(e) =
            rustix::fs::renameat(fd, OsStr::from_bytes(&temp), fd, OsStr::from_bytes(name))
        {
            let _ = rustix::fs::unlinkat(fd, OsStr::from_bytes(&temp), AtFlags::empty());
            return Err(failed(rel)(e));
        }
        self.seen(fd, rel, name, Kind::Symlink, wanted.hash)?;
        self.out.written += 1;
        Ok(())
    }

    /// The index learns what a path is now.
    fn seen(
        &mut self,
        fd: &OwnedFd,
        rel: &[u8],
        name: &[u8],
        kind: Kind,
        hash: Hash,
    ) -> Result<(), CheckpointError> {
        let st = rustix::fs::statat(fd, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(failed(rel))?;
        // Written just now: racy, so read again at the next checkpoint.
        self.index
            .insert(rel.to_vec(), seen(kind, &st, hash, i64::MIN));
        Ok(())
    }
}

fn temp_name() -> Vec<u8> {
    format!("{TEMP_PREFIX}{}", crate::random::random_hex(8)).into_bytes()
}

/// Removes `name` from the folder at `fd`, a whole folder included (made writable on the way).
pub fn remove(fd: &OwnedFd, name: &[u8]) -> Result<(), rustix::io::Errno> {
    let path = OsStr::from_bytes(name);
    let st = rustix::fs::statat(fd, path, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return rustix::fs::unlinkat(fd, path, AtFlags::empty());
    }
    let child = open_dir_at(fd, name)?;
    rustix::fs::fchmod(&child, Mode::from_raw_mode(0o700))?;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&child)? {
        let entry = entry?;
        let n = entry.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(n.to_vec());
        }
    }
    for n in names {
        match remove(&child, &n) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e),
        }
    }
    rustix::fs::unlinkat(fd, path, AtFlags::REMOVEDIR)
}
