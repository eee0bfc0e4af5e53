//! Reading the workspace into trees: every folder opened beneath the one before it without
//! following links (nothing outside the workspace is reached, whatever is swapped in
//! meanwhile), and a file read again only when its size, times or inode changed since the
//! last checkpoint.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

use super::CheckpointError;
use super::ignore::Ignore;
use super::store::{Index, Seen, Store};
use super::tree::{self, Entry, Hash, Kind, Tree};

/// Files changed this close (ns) to a scan's start may change again with the same times.
const RACY_NS: i64 = 1_000_000_000;

/// The workspace as one scan read it.
#[derive(Debug, Default)]
pub struct Scanned {
    pub root: Hash,
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    pub bytes_added: u64,
    /// Paths of another kind (sockets, FIFOs, devices).
    pub skipped: Vec<String>,
    pub index: Index,
}

/// Reads the workspace at `root` into the store.
pub fn scan(
    root: &Path,
    store: &mut Store,
    ignore: &Ignore,
    old: &Index,
) -> Result<Scanned, CheckpointError> {
    let started_ns = now_ns();
    let fd = open_dir_path(root)?;
    let mut scanner = Scanner {
        store,
        ignore,
        old,
        racy_after: started_ns - RACY_NS,
        out: Scanned::default(),
    };
    let mut rel = Vec::new();
    let (hash, bytes) = scanner.dir(&fd, &mut rel)?;
    scanner.out.root = hash;
    scanner.out.bytes = bytes;
    Ok(scanner.out)
}

/// The workspace root, opened as a folder.
pub fn open_dir_path(root: &Path) -> Result<OwnedFd, CheckpointError> {
    rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| CheckpointError::Workspace {
        path: root.display().to_string(),
        source: e.into(),
    })
}

/// A folder beneath `parent`, never through a link.
pub fn open_dir_at(parent: &OwnedFd, name: &[u8]) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        OsStr::from_bytes(name),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Nanoseconds since the epoch.
fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The permission bits of a stat.
pub fn mode_bits(st: &Stat) -> u32 {
    st.st_mode & 0o7777
}

fn times(st: &Stat) -> (i64, i64) {
    (
        st.st_mtime * 1_000_000_000 + st.st_mtime_nsec as i64,
        st.st_ctime * 1_000_000_000 + st.st_ctime_nsec as i64,
    )
}

/// A path of the workspace, joined from its parts, as text for answers.
pub fn display(rel: &[u8]) -> String {
    String::from_utf8_lossy(rel).into_owned()
}

/// `rel` + `/` + `name`, in place; the length to truncate back to.
pub fn push_name(rel: &mut Vec<u8>, name: &[u8]) -> usize {
    let len = rel.len();
    if !rel.is_empty() {
        rel.push(b'/');
    }
    rel.extend_from_slice(name);
    len
}

struct Scanner<'a> {
    store: &'a mut Store,
    ignore: &'a Ignore,
    old: &'a Index,
    racy_after: i64,
    out: Scanned,
}

impl Scanner<'_> {
    /// Reads the folder open at `fd` (path `rel`); its tree's hash and its files' bytes.
    fn dir(&mut self, fd: &OwnedFd, rel: &mut Vec<u8>) -> Result<(Hash, u64), CheckpointError> {
        let mut names = Vec::new();
        let listing = rustix::fs::Dir::read_from(fd).map_err(|e| self.unreadable(rel, e.into()))?;
        for entry in listing {
            let entry = entry.map_err(|e| self.unreadable(rel, e.into()))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(name.to_vec());
            }
        }
        names.sort_unstable();
        let mut entries = Vec::with_capacity(names.len());
        let mut total = 0;
        for name in names {
            let cut = push_name(rel, &name);
            let read = self.entry(fd, rel, name);
            rel.truncate(cut);
            if let Some(entry) = read? {
                if entry.kind != Kind::Symlink {
                    total += entry.size;
                }
                entries.push(entry);
            }
        }
        let (hash, added) = self.store.put_tree(&Tree { entries })?;
        self.out.bytes_added += added;
        Ok((hash, total))
    }

    /// One entry of the folder at `fd`, or none when it is ignored, gone or of another kind.
    fn entry(
        &mut self,
        fd: &OwnedFd,
        rel: &mut Vec<u8>,
        name: Vec<u8>,
    ) -> Result<Option<Entry>, CheckpointError> {
        let st = match rustix::fs::statat(fd, OsStr::from_bytes(&name), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            // Removed since the folder was listed.
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.unreadable(rel, e.into())),
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if self.ignore.ignores(rel, kind == FileType::Directory) {
            return Ok(None);
        }
        let mode = mode_bits(&st);
        let entry = match kind {
            FileType::Directory => {
                let child = match open_dir_at(fd, &name) {
                    Ok(child) => child,
                    Err(rustix::io::Errno::NOENT) => return Ok(None),
                    Err(e) => return Err(self.unreadable(rel, e.into())),
                };
                let (hash, size) = self.dir(&child, rel)?;
                self.out.dirs += 1;
                Entry {
                    name,
                    kind: Kind::Dir,
                    mode,
                    size,
                    hash,
                    target: Vec::new(),
                }
            }
            FileType::Symlink => {
                let target = match rustix::fs::readlinkat(fd, OsStr::from_bytes(&name), Vec::new())
                {
                    Ok(target) => target.into_bytes(),
                    Err(rustix::io::Errno::NOENT) => return Ok(None),
                    Err(e) => return Err(self.unreadable(rel, e.into())),
                };
                let hash = tree::hash(&target);
                self.remember(rel, Kind::Symlink, &st, hash);
                self.out.symlinks += 1;
                Entry {
                    name,
                    kind: Kind::Symlink,
                    mode,
                    size: target.len() as u64,
                    hash,
                    target,
                }
            }
            FileType::RegularFile => {
                let Some((hash, st)) = self.file(fd, rel, &name, st)? else {
                    return Ok(None);
                };
                self.out.files += 1;
                Entry {
                    name,
                    kind: Kind::File,
                    mode: mode_bits(&st),
                    size: st.st_size as u64,
                    hash,
                    target: Vec::new(),
                }
            }
            _ => {
                self.out.skipped.push(display(rel));
                return Ok(None);
            }
        };
        Ok(Some(entry))
    }

    /// A regular file's content hash, read only when it changed; the stat it was read at.
    fn file(
        &mut self,
        fd: &OwnedFd,
        rel: &[u8],
        name: &[u8],
        st: Stat,
    ) -> Result<Option<(Hash, Stat)>, CheckpointError> {
        let (mtime, ctime) = times(&st);
        if let Some(seen) = self.old.get(rel)
            && seen.kind == Kind::File
            && !seen.racy
            && seen.size == st.st_size as u64
            && seen.mtime_ns == mtime
            && seen.ctime_ns == ctime
            && seen.ino == st.st_ino
        {
            let hash = seen.hash;
            self.remember(rel, Kind::File, &st, hash);
            return Ok(Some((hash, st)));
        }
        let opened = rustix::fs::openat(
            fd,
            OsStr::from_bytes(name),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        );
        let file = match opened {
            Ok(file) => File::from(file),
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.unreadable(rel, e.into())),
        };
        // The times it is read at: a change after this is seen next time.
        let st = rustix::fs::fstat(&file).map_err(|e| self.unreadable(rel, e.into()))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Ok(None);
        }
        let (hash, added) = self.store.put_file(&file, st.st_size as u64)?;
        self.out.bytes_added += added;
        self.remember(rel, Kind::File, &st, hash);
        Ok(Some((hash, st)))
    }

    fn remember(&mut self, rel: &[u8], kind: Kind, st: &Stat, hash: Hash) {
        let (mtime_ns, ctime_ns) = times(st);
        self.out.index.insert(
            rel.to_vec(),
            Seen {
                kind,
                mode: mode_bits(st),
                size: st.st_size as u64,
                mtime_ns,
                ctime_ns,
                ino: st.st_ino,
                hash,
                racy: mtime_ns >= self.racy_after || ctime_ns >= self.racy_after,
            },
        );
    }

    fn unreadable(&self, rel: &[u8], source: std::io::Error) -> CheckpointError {
        CheckpointError::Unreadable {
            path: display(rel),
            source,
        }
    }
}
