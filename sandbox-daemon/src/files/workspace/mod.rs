//! The workspace root as a capability: every file operation resolves its path beneath the root
//! directory handle at open time (cap-std, which uses `openat2(RESOLVE_BENEATH)` where the
//! kernel has it and a component-by-component walk elsewhere). String checks only give early,
//! precise errors; the kernel-side resolution is what keeps a symlink from escaping.

mod path;
mod upload;

use path::normalize;
pub use path::{RelPath, map_io};
pub use upload::Upload;
use upload::{PendingRename, create_temp, remove_tree, replace_atomically, write_all_and_set_mode};

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt as _, OpenOptions, OpenOptionsExt as _};
use rustix::fs::OFlags;
use rustix::io::Errno;

use cove_protocol::files::{
    FileEntry, ListResponse, MAX_LIST_DEPTH, ReadResponse, StrReplaceResponse, WriteResponse,
};

use crate::random::random_hex;
use crate::timestamp::rfc3339;

/// Lines of context shown on each side of a `str_replace` edit.
const SNIPPET_CONTEXT: u64 = 4;

/// Most entries a listing returns.
pub const MAX_LIST_ENTRIES: usize = 10_000;

/// Mode of files created without one.
const DEFAULT_FILE_MODE: u32 = 0o644;

/// Symbolic links followed in a row, at most (as the kernel's own limit).
const MAX_LINK_HOPS: usize = 40;

/// What went wrong with a file request, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Use a path inside the workspace.
    #[error("{path:?}: {reason}")]
    OutsideWorkspace { path: String, reason: &'static str },
    /// Use another path.
    #[error("{path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
    /// Check the path (list the directory).
    #[error("{0:?}: no such file or directory")]
    NotFound(String),
    /// Change the file with rewrite or str_replace instead.
    #[error("{0:?} already exists; change it with rewrite or str_replace")]
    AlreadyExists(String),
    #[error("{0:?} is a directory")]
    IsDirectory(String),
    /// Read the file again and redo the edit.
    #[error(
        "{0:?} changed while it was being edited (another edit or a process wrote it); read it again and redo the edit"
    )]
    Conflict(String),
    /// Only regular files are read: a FIFO would block the reader, a device never ends.
    #[error(
        "{0:?} is not a regular file (a FIFO, socket or device); only regular files can be read"
    )]
    NotRegularFile(String),
    #[error("{0:?} is not a directory (or a parent of it is a file)")]
    NotDirectory(String),
    /// Pass `recursive=true`.
    #[error(
        "{0:?} is a directory that is not empty; pass recursive=true to delete it and its contents"
    )]
    DirectoryNotEmpty(String),
    #[error("{0:?}: permission denied")]
    PermissionDenied(String),
    /// Download the file raw instead.
    #[error("{path:?} is not UTF-8 text ({reason}); download it raw instead")]
    NotText { path: String, reason: String },
    /// Read a line range of a smaller file, or download it.
    #[error(
        "{path:?} is {size} bytes, over the {limit}-byte limit for text reads; download it instead"
    )]
    TooLarge { path: String, size: u64, limit: u64 },
    /// Send less.
    #[error("the upload is over the {limit}-byte limit")]
    PayloadTooLarge { limit: u64 },
    /// Fix the request.
    #[error("{0}")]
    InvalidRequest(String),
    /// Read the file and pick text that is there.
    #[error("old_str was not found in {0:?}; read the file to see its current text")]
    NoMatch(String),
    /// Include more surrounding text.
    #[error(
        "old_str occurs {count} times in {path:?}, at lines {lines}; include more surrounding text so it matches exactly once"
    )]
    MultipleMatches {
        path: String,
        count: usize,
        lines: String,
    },
    /// The filesystem failed; retrying may help.
    #[error("{path:?}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// What a write finds at its path.
enum Target {
    /// Nothing there yet.
    Absent { parent: Dir, name: String },
    /// A regular file (possibly reached through symbolic links that stay inside), with its mode.
    File {
        parent: Dir,
        name: String,
        mode: u32,
    },
}

/// The workspace root and the limits file operations obey.
#[derive(Debug)]
pub struct Workspace {
    root: Dir,
    root_path: PathBuf,
    max_read_bytes: u64,
    edits: EditLocks,
}

/// One lock per file being changed, by the path it resolves to: edits of one file (a model's
/// parallel tool calls) are applied one after another, so none is lost.
#[derive(Debug, Default)]
struct EditLocks {
    by_path: Mutex<HashMap<String, Weak<Mutex<()>>>>,
}

impl EditLocks {
    /// The lock of `key`, shared with every edit of it under way.
    fn of(&self, key: String) -> Arc<Mutex<()>> {
        let mut map = self.by_path.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lock) = map.get(&key).and_then(Weak::upgrade) {
            return lock;
        }
        let lock = Arc::new(Mutex::new(()));
        map.insert(key, Arc::downgrade(&lock));
        if map.len() > 1024 {
            map.retain(|_, lock| lock.strong_count() > 0);
        }
        lock
    }
}

/// What a file was when it was read: a write that finds anything else refuses to replace it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified_ns: i128,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt as _;
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

impl Workspace {
    /// Opens the root directory, which must exist.
    pub fn open(root: &Path, max_read_bytes: u64) -> io::Result<Workspace> {
        let dir = Dir::open_ambient_dir(root, ambient_authority())?;
        Ok(Workspace {
            root: dir,
            root_path: root.to_path_buf(),
            max_read_bytes,
            edits: EditLocks::default(),
        })
    }

    /// The root's path on the host.
    pub fn root_path(&self) -> &Path {
        &self.root_path
    }

    fn open_dir(&self, rel: &str) -> Result<Dir, FileError> {
        if rel == "." {
            return self.root.try_clone().map_err(|e| map_io(rel, e));
        }
        self.root.open_dir(rel).map_err(|e| map_io(rel, e))
    }

    /// Lists `path`, descending `depth - 1` levels below it. Symlinks are listed, not followed.
    pub fn list(&self, path: &str, depth: u32) -> Result<ListResponse, FileError> {
        let rel = RelPath::parse(path)?;
        if depth == 0 || depth > MAX_LIST_DEPTH {
            return Err(FileError::InvalidRequest(format!(
                "depth must be between 1 and {MAX_LIST_DEPTH}"
            )));
        }
        let dir = self.open_dir(rel.as_str())?;
        let mut entries = Vec::new();
        let truncated = walk(&dir, &rel, depth, &mut entries)?;
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(ListResponse { entries, truncated })
    }

    /// Opens a regular file for reading. The open itself does not block: a FIFO with no
    /// writer would otherwise hold the calling thread forever.
    fn open_regular(&self, rel: &RelPath) -> Result<(std::fs::File, std::fs::Metadata), FileError> {
        let path = rel.as_str();
        let mut options = OpenOptions::new();
        options
            .read(true)
            .custom_flags(OFlags::NONBLOCK.bits() as i32);
        let file = self
            .root
            .open_with(path, &options)
            .map_err(|e| map_io(path, e))?
            .into_std();
        let meta = file.metadata().map_err(|e| map_io(path, e))?;
        if meta.is_dir() {
            return Err(FileError::IsDirectory(path.to_string()));
        }
        if !meta.is_file() {
            return Err(FileError::NotRegularFile(path.to_string()));
        }
        let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| map_io(path, e.into()))?;
        rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK)
            .map_err(|e| map_io(path, e.into()))?;
        Ok((file, meta))
    }

    fn load_text(&self, rel: &RelPath) -> Result<String, FileError> {
        self.load_stamped_text(rel).map(|(text, _)| text)
    }

    fn load_stamped_text(&self, rel: &RelPath) -> Result<(String, Stamp), FileError> {
        let path = rel.as_str();
        let (mut file, meta) = self.open_regular(rel)?;
        let stamp = Stamp::of(&meta);
        let meta_len = meta.len();
        if meta_len > self.max_read_bytes {
            return Err(FileError::TooLarge {
                path: path.to_string(),
                size: meta_len,
                limit: self.max_read_bytes,
            });
        }
        let mut bytes = Vec::with_capacity(meta_len as usize);
        file.read_to_end(&mut bytes).map_err(|e| map_io(path, e))?;
        if let Some(at) = bytes.iter().position(|b| *b == 0) {
            return Err(FileError::NotText {
                path: path.to_string(),
                reason: format!("NUL byte at offset {at}"),
            });
        }
        let text = String::from_utf8(bytes).map_err(|e| FileError::NotText {
            path: path.to_string(),
            reason: format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
        })?;
        Ok((text, stamp))
    }

    /// The lock of the file `rel` names: by the path it resolves to (through symbolic links
    /// that stay inside), so two names of one file share it.
    fn edit_lock(&self, rel: &RelPath) -> Arc<Mutex<()>> {
        let key = self
            .lock_key(rel)
            .unwrap_or_else(|| rel.as_str().to_string());
        self.edits.of(key)
    }

    /// The path `rel` names with symbolic links followed: its directory canonicalized, and a
    /// link in its last component read and followed. (Canonicalizing the file itself would
    /// go through the file's descriptor, which names a file being replaced by a rename
    /// "x (deleted)".) None when the path cannot be resolved inside the workspace.
    fn lock_key(&self, rel: &RelPath) -> Option<String> {
        let mut current = rel.as_str().to_string();
        for _ in 0..MAX_LINK_HOPS {
            let (parent, name) = match current.rsplit_once('/') {
                Some((parent, name)) => (parent.to_string(), name.to_string()),
                None => (".".to_string(), current.clone()),
            };
            let parent_path = if parent == "." {
                std::path::PathBuf::new()
            } else {
                self.root.canonicalize(&parent).ok()?
            };
            let dir = self.open_dir(&parent).ok()?;
            let is_link = dir
                .symlink_metadata(&name)
                .is_ok_and(|m| m.file_type().is_symlink());
            if !is_link {
                return Some(parent_path.join(name).to_string_lossy().into_owned());
            }
            let target = dir.read_link_contents(&name).ok()?;
            current = normalize(&parent_path.join(target))?;
        }
        None
    }

    /// Reads a text file, or lines `start_line..=end_line` of it.
    pub fn read(
        &self,
        path: &str,
        start_line: Option<u64>,
        end_line: Option<u64>,
    ) -> Result<ReadResponse, FileError> {
        let rel = RelPath::parse(path)?;
        let text = self.load_text(&rel)?;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let total = lines.len() as u64;
        let start = start_line.unwrap_or(1);
        let end = end_line.unwrap_or(total).min(total);
        if start == 0 || end_line == Some(0) {
            return Err(FileError::InvalidRequest("line numbers start at 1".into()));
        }
        if start_line.is_some() && start > total.max(1) {
            return Err(FileError::InvalidRequest(format!(
                "start_line {start} is past the end of {}: it has {total} lines",
                rel.as_str()
            )));
        }
        if end_line.is_some_and(|e| e < start) {
            return Err(FileError::InvalidRequest(format!(
                "end_line {} is before start_line {start}",
                end_line.unwrap_or_default()
            )));
        }
        let content: String = lines
            .iter()
            .skip((start - 1) as usize)
            .take(end.saturating_sub(start - 1) as usize)
            .copied()
            .collect();
        Ok(ReadResponse {
            path: rel.as_str().to_string(),
            content,
            total_lines: total,
        })
    }

    /// What is at `rel` now. A symbolic link is resolved beneath the root, so one that leads
    /// outside is refused and one that stays inside names its target file.
    fn target(&self, rel: &RelPath, create_parents: bool) -> Result<Target, FileError> {
        let path = rel.as_str();
        let (parent, name) = self.parent_of(rel, create_parents)?;
        let meta = match parent.symlink_metadata(&name) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Target::Absent { parent, name });
            }
            Err(e) => return Err(map_io(path, e)),
        };
        if meta.is_dir() {
            return Err(FileError::IsDirectory(path.to_string()));
        }
        if !meta.is_symlink() {
            return Ok(Target::File {
                parent,
                name,
                mode: meta.mode() & 0o7777,
            });
        }
        let resolved = match self.root.canonicalize(path) {
            Ok(resolved) => resolved,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(FileError::InvalidPath {
                    path: path.to_string(),
                    reason: "is a dangling symbolic link".into(),
                });
            }
            Err(e) => return Err(map_io(path, e)),
        };
        let resolved = RelPath::parse(&resolved.to_string_lossy())?;
        let (parent, name) = self.parent_of(&resolved, false)?;
        let meta = parent
            .symlink_metadata(&name)
            .map_err(|e| map_io(path, e))?;
        if meta.is_dir() {
            return Err(FileError::IsDirectory(path.to_string()));
        }
        Ok(Target::File {
            parent,
            name,
            mode: meta.mode() & 0o7777,
        })
    }

    fn parent_of(&self, rel: &RelPath, create: bool) -> Result<(Dir, String), FileError> {
        let (parent, name) = rel.split()?;
        if create
            && parent != "."
            && let Err(e) = self.root.create_dir_all(parent)
        {
            // EEXIST hides what is in the way: a file, or a link leading out. Opening the
            // parent beneath the root says which.
            return Err(match self.open_dir(parent) {
                Err(why) => why,
                Ok(_) if e.kind() == io::ErrorKind::AlreadyExists => {
                    FileError::NotDirectory(parent.to_string())
                }
                Ok(_) => map_io(parent, e),
            });
        }
        Ok((self.open_dir(parent)?, name.to_string()))
    }

    /// Creates a new file with `content`; fails if anything is already at `path`.
    pub fn create(
        &self,
        path: &str,
        content: &[u8],
        mode: Option<u32>,
    ) -> Result<WriteResponse, FileError> {
        let rel = RelPath::parse(path)?;
        let (parent, name) = match self.target(&rel, true)? {
            Target::Absent { parent, name } => (parent, name),
            Target::File { .. } => return Err(FileError::AlreadyExists(rel.as_str().to_string())),
        };
        let mode = mode.unwrap_or(DEFAULT_FILE_MODE);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true).mode(mode);
        let file = parent
            .open_with(&name, &options)
            .map_err(|e| map_io(rel.as_str(), e))?;
        let written = write_all_and_set_mode(file.into_std(), content, mode);
        if let Err(e) = written {
            // Leave nothing half-written behind.
            let _ = parent.remove_file(&name);
            return Err(map_io(rel.as_str(), e));
        }
        Ok(WriteResponse {
            path: rel.as_str().to_string(),
            bytes: content.len() as u64,
        })
    }

    /// Replaces an existing file's content atomically (a temporary file renamed over it),
    /// keeping its mode. Through a symbolic link that stays inside, the link's target is
    /// replaced and the link kept.
    pub fn rewrite(&self, path: &str, content: &[u8]) -> Result<WriteResponse, FileError> {
        let rel = RelPath::parse(path)?;
        let lock = self.edit_lock(&rel);
        let _editing = lock.lock().unwrap_or_else(|p| p.into_inner());
        self.replace_existing(&rel, content, None)
    }

    /// Writes `content` over the file at `rel`, if it is still the one `expected` describes.
    fn replace_existing(
        &self,
        rel: &RelPath,
        content: &[u8],
        expected: Option<Stamp>,
    ) -> Result<WriteResponse, FileError> {
        match self.target(rel, false)? {
            Target::Absent { .. } => Err(FileError::NotFound(rel.as_str().to_string())),
            Target::File { parent, name, mode } => {
                if let Some(expected) = expected {
                    // Something outside the API (the agent's shell, say) may have written it.
                    let now = parent.symlink_metadata(&name).map(|m| Stamp {
                        dev: m.dev(),
                        ino: m.ino(),
                        len: m.len(),
                        modified_ns: i128::from(m.mtime()) * 1_000_000_000
                            + i128::from(m.mtime_nsec()),
                    });
                    if now.ok() != Some(expected) {
                        return Err(FileError::Conflict(rel.as_str().to_string()));
                    }
                }
                replace_atomically(&parent, &name, content, mode)
                    .map_err(|e| map_io(rel.as_str(), e))?;
                Ok(WriteResponse {
                    path: rel.as_str().to_string(),
                    bytes: content.len() as u64,
                })
            }
        }
    }

    /// Replaces the single occurrence of `old` with `new`.
    pub fn str_replace(
        &self,
        path: &str,
        old: &str,
        new: &str,
    ) -> Result<StrReplaceResponse, FileError> {
        if old.is_empty() {
            return Err(FileError::InvalidRequest("old_str is empty".into()));
        }
        let rel = RelPath::parse(path)?;
        // Held from the read to the rename: no other edit of this file lands in between.
        let lock = self.edit_lock(&rel);
        let _editing = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (text, stamp) = self.load_stamped_text(&rel)?;
        let positions: Vec<usize> = text.match_indices(old).map(|(i, _)| i).take(50).collect();
        let line_of = |at: usize| text[..at].matches('\n').count() as u64 + 1;
        let at = match positions.as_slice() {
            [] => return Err(FileError::NoMatch(rel.as_str().to_string())),
            [at] => *at,
            many => {
                let count = text.matches(old).count();
                let lines: Vec<String> = many.iter().map(|p| line_of(*p).to_string()).collect();
                return Err(FileError::MultipleMatches {
                    path: rel.as_str().to_string(),
                    count,
                    lines: lines.join(", "),
                });
            }
        };
        let mut updated = String::with_capacity(text.len() + new.len());
        updated.push_str(&text[..at]);
        updated.push_str(new);
        updated.push_str(&text[at + old.len()..]);
        self.replace_existing(&rel, updated.as_bytes(), Some(stamp))?;

        let first = line_of(at);
        let last = first + new.matches('\n').count() as u64;
        let snippet_start = first.saturating_sub(SNIPPET_CONTEXT).max(1);
        let snippet: String = updated
            .split_inclusive('\n')
            .skip((snippet_start - 1) as usize)
            .take((last + SNIPPET_CONTEXT + 1 - snippet_start) as usize)
            .collect();
        Ok(StrReplaceResponse {
            path: rel.as_str().to_string(),
            snippet,
            snippet_start_line: snippet_start,
            replaced_at_line: first,
        })
    }

    /// Deletes a file or symbolic link (never what it points to), or a directory.
    pub fn delete(&self, path: &str, recursive: bool) -> Result<(), FileError> {
        let rel = RelPath::parse(path)?;
        let (parent, name) = self.parent_of(&rel, false)?;
        let p = rel.as_str();
        let meta = parent.symlink_metadata(&name).map_err(|e| map_io(p, e))?;
        let result = if meta.is_dir() {
            if recursive {
                remove_tree(&parent, &name)
            } else {
                parent.remove_dir(&name)
            }
        } else {
            parent.remove_file(&name)
        };
        result.map_err(|e| map_io(p, e))
    }

    /// Opens a regular file for download. Returns the file and its length.
    pub fn open_for_download(&self, path: &str) -> Result<(std::fs::File, u64), FileError> {
        let (file, meta) = self.open_regular(&RelPath::parse(path)?)?;
        Ok((file, meta.len()))
    }

    /// Moves a finished upload into place, in turn with the edits of that file.
    pub fn commit(&self, upload: Upload) -> Result<(), FileError> {
        let rel = RelPath::parse(upload.path())?;
        let lock = self.edit_lock(&rel);
        let _editing = lock.lock().unwrap_or_else(|p| p.into_inner());
        upload.commit()
    }

    /// Prepares an upload to `path`: a temporary file beside its destination, renamed over
    /// it on commit, so a failed upload leaves the old content untouched.
    pub fn begin_upload(&self, path: &str) -> Result<Upload, FileError> {
        let rel = RelPath::parse(path)?;
        let p = rel.as_str().to_string();
        let (parent, name, mode) = match self.target(&rel, true)? {
            Target::Absent { parent, name } => (parent, name, DEFAULT_FILE_MODE),
            Target::File { parent, name, mode } => (parent, name, mode),
        };
        let (temp_name, file) = create_temp(&parent).map_err(|e| map_io(&p, e))?;
        Ok(Upload {
            path: p,
            file: Some(file),
            pending: Some(PendingRename {
                parent,
                temp_name,
                name,
                mode,
            }),
        })
    }
}

/// Appends the entries under `dir` (which is `rel`) to `out`; true if the cap was reached.
fn walk(dir: &Dir, rel: &RelPath, depth: u32, out: &mut Vec<FileEntry>) -> Result<bool, FileError> {
    let entries = dir.entries().map_err(|e| map_io(rel.as_str(), e))?;
    for entry in entries {
        if out.len() >= MAX_LIST_ENTRIES {
            return Ok(true);
        }
        let entry = entry.map_err(|e| map_io(rel.as_str(), e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = rel.join(&name);
        // Entries can vanish between readdir and stat; skip those.
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        out.push(FileEntry {
            path: path.clone(),
            is_dir: file_type.is_dir(),
            is_symlink: file_type.is_symlink(),
            size: meta.len(),
            modified: meta.modified().ok().map(|t| rfc3339(t.into_std())),
        });
        if file_type.is_dir() && depth > 1 {
            let sub = entry.open_dir().map_err(|e| map_io(&path, e))?;
            if walk(&sub, &RelPath(path), depth - 1, out)? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_normalised() {
        assert_eq!(RelPath::parse("a/./b//c/").unwrap().as_str(), "a/b/c");
        assert_eq!(RelPath::parse("").unwrap().as_str(), ".");
        assert_eq!(RelPath::parse("./").unwrap().as_str(), ".");
        assert!(RelPath::parse(".").unwrap().is_root());
    }

    #[test]
    fn a_file_changed_since_it_was_read_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path(), 1 << 20).unwrap();
        ws.create("a.txt", b"one\n", None).unwrap();
        let rel = RelPath::parse("a.txt").unwrap();
        let (_, stamp) = ws.load_stamped_text(&rel).unwrap();
        // Another writer (the agent's shell) replaces it in between.
        std::fs::write(dir.path().join("a.txt"), "two, longer\n").unwrap();
        let refused = ws.replace_existing(&rel, b"edited\n", Some(stamp));
        assert!(
            matches!(refused, Err(FileError::Conflict(_))),
            "{refused:?}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "two, longer\n"
        );
        let (_, fresh) = ws.load_stamped_text(&rel).unwrap();
        ws.replace_existing(&rel, b"edited\n", Some(fresh)).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "edited\n"
        );
    }

    #[test]
    fn two_names_of_one_file_share_its_edit_lock() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path(), 1 << 20).unwrap();
        ws.create("real.txt", b"x", None).unwrap();
        std::os::unix::fs::symlink("real.txt", dir.path().join("alias.txt")).unwrap();
        let a = ws.edit_lock(&RelPath::parse("real.txt").unwrap());
        let b = ws.edit_lock(&RelPath::parse("./alias.txt").unwrap());
        assert!(Arc::ptr_eq(&a, &b));
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("../real.txt", dir.path().join("sub/up.txt")).unwrap();
        let c = ws.edit_lock(&RelPath::parse("sub/up.txt").unwrap());
        assert!(Arc::ptr_eq(&a, &c));
        assert_eq!(normalize(Path::new("a/../b/./c")), Some("b/c".into()));
        assert_eq!(normalize(Path::new("../x")), None);
        assert_eq!(normalize(Path::new("/etc/passwd")), None);
    }

    #[test]
    fn escapes_are_refused_before_touching_the_disk() {
        for bad in ["/etc/passwd", "..", "../x", "a/../../x", "a/..", "a\0b"] {
            assert!(
                matches!(RelPath::parse(bad), Err(FileError::OutsideWorkspace { .. })),
                "{bad:?}"
            );
        }
    }
}
