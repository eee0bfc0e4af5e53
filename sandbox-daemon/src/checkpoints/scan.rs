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
use super::index::{Index, Seen};
use super::store::Store;
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

/// Reads the workspace at `root` into the store: first the folders are walked and every
/// path stat'ed (files unchanged since the index are settled there), then the files to read
/// are read by as many threads as the machine has cores (up to 4), then the trees are made.
pub fn scan(
    root: &Path,
    store: &mut Store,
    ignore: &Ignore,
    old: &Index,
) -> Result<Scanned, CheckpointError> {
    store.begin_pack()?;
    match scan_into(root, store, ignore, old) {
        Ok(scanned) => {
            store.finish_pack()?;
            Ok(scanned)
        }
        Err(e) => {
            store.abandon_pack();
            Err(e)
        }
    }
}

fn scan_into(
    root: &Path,
    store: &Store,
    ignore: &Ignore,
    old: &Index,
) -> Result<Scanned, CheckpointError> {
    let started_ns = now_ns();
    let fd = open_dir_path(root)?;
    let mut walker = Walker {
        ignore,
        old,
        racy_after: started_ns - RACY_NS,
        jobs: Vec::new(),
        out: Scanned::default(),
    };
    let mut rel = Vec::new();
    let folder = walker.dir(&fd, &mut rel)?;
    let Walker { jobs, mut out, .. } = walker;
    let read = ingest(store, &fd, &jobs)?;
    for (job, done) in jobs.iter().zip(&read) {
        if let Some(done) = done {
            out.bytes_added += done.added;
            out.index.insert(
                job.clone(),
                seen(Kind::File, &done.stat, done.hash, started_ns - RACY_NS),
            );
        }
    }
    let (hash, bytes) = build(store, folder, &read, &mut out)?;
    out.root = hash;
    out.bytes = bytes;
    Ok(out)
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

/// A folder as the walk found it, waiting for the files to be read.
#[derive(Default)]
struct Folder {
    items: Vec<Item>,
}

enum Item {
    /// Known without reading (a link, or a file unchanged since the index).
    Ready(Entry),
    /// A file to read: the walk's job number.
    Read { name: Vec<u8>, job: usize },
    Dir {
        name: Vec<u8>,
        mode: u32,
        folder: Folder,
    },
}

/// A file read into the store.
struct Read {
    hash: Hash,
    added: u64,
    stat: Stat,
}

/// What the index keeps of a path stat'ed as `st`; racy when it changed after `racy_after`.
pub fn seen(kind: Kind, st: &Stat, hash: Hash, racy_after: i64) -> Seen {
    let (mtime_ns, ctime_ns) = times(st);
    Seen {
        kind,
        mode: mode_bits(st),
        size: st.st_size as u64,
        mtime_ns,
        ctime_ns,
        ino: st.st_ino,
        hash,
        racy: mtime_ns >= racy_after || ctime_ns >= racy_after,
    }
}

fn unreadable(rel: &[u8], source: std::io::Error) -> CheckpointError {
    CheckpointError::Unreadable {
        path: display(rel),
        source,
    }
}

struct Walker<'a> {
    ignore: &'a Ignore,
    old: &'a Index,
    racy_after: i64,
    /// Paths of the files to read.
    jobs: Vec<Vec<u8>>,
    out: Scanned,
}

impl Walker<'_> {
    /// Walks the folder open at `fd` (path `rel`).
    fn dir(&mut self, fd: &OwnedFd, rel: &mut Vec<u8>) -> Result<Folder, CheckpointError> {
        let mut names = Vec::new();
        let listing = rustix::fs::Dir::read_from(fd).map_err(|e| unreadable(rel, e.into()))?;
        for entry in listing {
            let entry = entry.map_err(|e| unreadable(rel, e.into()))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(name.to_vec());
            }
        }
        names.sort_unstable();
        let mut folder = Folder::default();
        for name in names {
            let cut = push_name(rel, &name);
            let item = self.entry(fd, rel, name);
            rel.truncate(cut);
            folder.items.extend(item?);
        }
        Ok(folder)
    }

    /// One entry of the folder at `fd`, or none when it is ignored, gone or of another kind.
    fn entry(
        &mut self,
        fd: &OwnedFd,
        rel: &mut Vec<u8>,
        name: Vec<u8>,
    ) -> Result<Option<Item>, CheckpointError> {
        let st = match rustix::fs::statat(fd, OsStr::from_bytes(&name), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            // Removed since the folder was listed.
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(unreadable(rel, e.into())),
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if self.ignore.ignores(rel, kind == FileType::Directory) {
            return Ok(None);
        }
        let item = match kind {
            FileType::Directory => {
                let child = match open_dir_at(fd, &name) {
                    Ok(child) => child,
                    Err(rustix::io::Errno::NOENT) => return Ok(None),
                    Err(e) => return Err(unreadable(rel, e.into())),
                };
                let folder = self.dir(&child, rel)?;
                self.out.dirs += 1;
                // Folders are in the index too (no hash of their own), so one made, removed
                // or re-moded counts as a change.
                self.out
                    .index
                    .insert(rel.clone(), seen(Kind::Dir, &st, [0; 32], self.racy_after));
                Item::Dir {
                    name,
                    mode: mode_bits(&st),
                    folder,
                }
            }
            FileType::Symlink => {
                let target = match rustix::fs::readlinkat(fd, OsStr::from_bytes(&name), Vec::new())
                {
                    Ok(target) => target.into_bytes(),
                    Err(rustix::io::Errno::NOENT) => return Ok(None),
                    Err(e) => return Err(unreadable(rel, e.into())),
                };
                let hash = tree::hash(&target);
                self.out
                    .index
                    .insert(rel.clone(), seen(Kind::Symlink, &st, hash, self.racy_after));
                self.out.symlinks += 1;
                Item::Ready(Entry {
                    name,
                    kind: Kind::Symlink,
                    mode: mode_bits(&st),
                    size: target.len() as u64,
                    hash,
                    target,
                })
            }
            FileType::RegularFile => match self.unchanged(rel, &st) {
                Some(hash) => {
                    self.out
                        .index
                        .insert(rel.clone(), seen(Kind::File, &st, hash, self.racy_after));
                    Item::Ready(Entry {
                        name,
                        kind: Kind::File,
                        mode: mode_bits(&st),
                        size: st.st_size as u64,
                        hash,
                        target: Vec::new(),
                    })
                }
                None => {
                    self.jobs.push(rel.clone());
                    Item::Read {
                        name,
                        job: self.jobs.len() - 1,
                    }
                }
            },
            _ => {
                self.out.skipped.push(display(rel));
                return Ok(None);
            }
        };
        Ok(Some(item))
    }

    /// The content hash of a file unchanged since the index saw it.
    fn unchanged(&self, rel: &[u8], st: &Stat) -> Option<Hash> {
        let (mtime, ctime) = times(st);
        let seen = self.old.get(rel)?;
        (seen.kind == Kind::File
            && !seen.racy
            && seen.size == st.st_size as u64
            && seen.mtime_ns == mtime
            && seen.ctime_ns == ctime
            && seen.ino == st.st_ino)
            .then_some(seen.hash)
    }
}

/// Fewer files than this are read on the calling thread.
const PARALLEL_FROM: usize = 32;

/// Reads the files `jobs` names into the store, several at once; none for a file that is
/// gone (or became something else) since the walk.
fn ingest(
    store: &Store,
    root: &OwnedFd,
    jobs: &[Vec<u8>],
) -> Result<Vec<Option<Read>>, CheckpointError> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    if workers == 1 || jobs.len() < PARALLEL_FROM {
        return jobs.iter().map(|rel| read_one(store, root, rel)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Read>> = Vec::new();
    results.resize_with(jobs.len(), || None);
    let done = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(rel) = jobs.get(i) else {
                            return Ok(mine);
                        };
                        match read_one(store, root, rel) {
                            Ok(read) => mine.push((i, read)),
                            Err(e) => {
                                // The others stop at their next file.
                                next.store(jobs.len(), std::sync::atomic::Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CheckpointError::Task("a reader panicked".into())))
            })
            .collect::<Vec<_>>()
    });
    for part in done {
        for (i, read) in part? {
            results[i] = read;
        }
    }
    Ok(results)
}

/// Reads one file, opened beneath the root without following a link anywhere on its path.
fn read_one(store: &Store, root: &OwnedFd, rel: &[u8]) -> Result<Option<Read>, CheckpointError> {
    let file = match open_beneath(root, rel) {
        Ok(file) => File::from(file),
        // Gone, or a link or folder swapped in since the walk.
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
            return Ok(None);
        }
        Err(e) => return Err(unreadable(rel, e.into())),
    };
    // The times it is read at: a change after this is seen next time.
    let stat = rustix::fs::fstat(&file).map_err(|e| unreadable(rel, e.into()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    let (hash, added) = store.put_file(&file, stat.st_size as u64)?;
    Ok(Some(Read { hash, added, stat }))
}

/// Opens the file at `rel` beneath `root`: `openat2` refusing links and `..` where the kernel
/// has it (5.6+), else folder by folder without following links.
fn open_beneath(root: &OwnedFd, rel: &[u8]) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    match rustix::fs::openat2(
        root,
        OsStr::from_bytes(rel),
        flags,
        Mode::empty(),
        rustix::fs::ResolveFlags::BENEATH | rustix::fs::ResolveFlags::NO_SYMLINKS,
    ) {
        Err(rustix::io::Errno::NOSYS) => {}
        other => return other,
    }
    let mut parts = rel.split(|b| *b == b'/').peekable();
    let mut dir: Option<OwnedFd> = None;
    while let Some(part) = parts.next() {
        let at = dir.as_ref().unwrap_or(root);
        if parts.peek().is_none() {
            return rustix::fs::openat(at, OsStr::from_bytes(part), flags, Mode::empty());
        }
        dir = Some(open_dir_at(at, part)?);
    }
    Err(rustix::io::Errno::NOENT)
}

/// Makes the trees of a walked folder, deepest first; its hash and its files' bytes.
fn build(
    store: &Store,
    folder: Folder,
    read: &[Option<Read>],
    out: &mut Scanned,
) -> Result<(Hash, u64), CheckpointError> {
    let mut entries = Vec::with_capacity(folder.items.len());
    let mut total = 0;
    for item in folder.items {
        let entry = match item {
            Item::Ready(entry) => entry,
            Item::Read { name, job } => {
                let Some(done) = &read[job] else {
                    continue;
                };
                Entry {
                    name,
                    kind: Kind::File,
                    mode: mode_bits(&done.stat),
                    size: done.stat.st_size as u64,
                    hash: done.hash,
                    target: Vec::new(),
                }
            }
            Item::Dir { name, mode, folder } => {
                let (hash, size) = build(store, folder, read, out)?;
                Entry {
                    name,
                    kind: Kind::Dir,
                    mode,
                    size,
                    hash,
                    target: Vec::new(),
                }
            }
        };
        match entry.kind {
            Kind::File => {
                out.files += 1;
                total += entry.size;
            }
            Kind::Dir => total += entry.size,
            Kind::Symlink => {}
        }
        entries.push(entry);
    }
    let (hash, added) = store.put_tree(&Tree { entries })?;
    out.bytes_added += added;
    Ok((hash, total))
}
