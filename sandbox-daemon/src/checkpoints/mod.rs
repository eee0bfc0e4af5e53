//! Checkpoints of the workspace: the whole of it (whatever changed it, the shell included)
//! recorded incrementally into a content-addressed store outside it, compared, restored
//! exactly (journalled, so a restore cut short is finished or undone at the next start), and
//! moved between sandboxes as a tar.

pub mod archive;
mod diff;
pub mod http;
mod ignore;
mod index;
mod pack;
mod restore;
mod scan;
mod store;
mod tree;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use cove_protocol::checkpoints::{
    CURRENT, CheckpointCreated, CheckpointDiff, CheckpointInfo, CheckpointList, RestoreResponse,
};
use serde::{Deserialize, Serialize};

use ignore::Ignore;
use index::Index;
use store::{Record, Store};

/// The smallest cap on the store when none is set.
const MIN_CAP: u64 = 1 << 30;
/// The journal of a restore under way, in the store's folder.
const JOURNAL: &str = "restore.json";

/// Why a checkpoint operation failed; each says what the caller does next.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("no checkpoint {0}; GET /v1/checkpoints lists them")]
    NotFound(String),
    #[error(
        "{0:?} is not a checkpoint id (they look like c12, or `current` where a diff allows it)"
    )]
    BadId(String),
    #[error(
        "a command is running in shell session(s) {}: it could change the workspace during the restore; wait for it, or ask again with stop_commands to kill those sessions first",
        .0.join(", ")
    )]
    Busy(Vec<String>),
    #[error("the archive was refused: {0}")]
    InvalidArchive(String),
    #[error("the archive could not be written: {0}")]
    ArchiveWrite(io::Error),
    #[error(
        "cannot read {path:?} in the workspace ({source}); make it readable, or list it in .coveignore"
    )]
    Unreadable { path: String, source: io::Error },
    #[error(
        "cannot restore {path:?} ({source}); the workspace was put back as it was where possible, and a restore left unfinished is finished or undone when coved next starts"
    )]
    Restore { path: String, source: io::Error },
    #[error(".coveignore cannot be read: {0}; fix it and try again")]
    BadIgnore(String),
    #[error("cannot open the workspace {path}: {source}")]
    Workspace { path: String, source: io::Error },
    #[error("the checkpoint store at {} failed: {source}", path.display())]
    Store { path: PathBuf, source: io::Error },
    #[error("the checkpoint store at {} is in use by another coved; give each daemon its own (--checkpoints)", .0.display())]
    InUse(PathBuf),
    #[error("the checkpoint store is damaged ({0}); move it away to start a new one")]
    Damaged(&'static str),
    #[error("the checkpoint store cannot be inside the workspace ({}); put it elsewhere with --checkpoints", .0.display())]
    StoreInWorkspace(PathBuf),
    #[error("the checkpoint operation's task failed: {0}")]
    Task(String),
}

impl From<tree::Damaged> for CheckpointError {
    fn from(e: tree::Damaged) -> Self {
        CheckpointError::Damaged(e.0)
    }
}

/// Where the store is and how large it may grow.
#[derive(Debug, Clone)]
pub struct CheckpointSettings {
    /// The store's folder, outside the workspace.
    pub dir: PathBuf,
    /// Bytes above which the oldest checkpoints not kept are dropped; by default twice the
    /// workspace, at least 1 GiB.
    pub cap: Option<u64>,
}

impl CheckpointSettings {
    /// The store of `workspace` in the daemon's state folder: one per workspace.
    pub fn in_state_dir(state_dir: &Path, workspace: &Path) -> CheckpointSettings {
        let key = tree::hex(&tree::hash(workspace.as_os_str().as_encoded_bytes()));
        CheckpointSettings {
            dir: state_dir.join("checkpoints").join(&key[..16]),
            cap: None,
        }
    }
}

/// A restore under way, written before the workspace is touched.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    target: u64,
    before: u64,
}

/// The daemon's checkpoints; the store is opened on first use. A clone shares the store.
#[derive(Clone)]
pub struct Checkpoints {
    workspace: PathBuf,
    settings: CheckpointSettings,
    store: Arc<Mutex<Option<Store>>>,
}

/// A checkpoint id as the wire shows it.
pub fn wire_id(id: u64) -> String {
    format!("c{id}")
}

/// A wire id as a number.
fn parse_id(id: &str) -> Result<u64, CheckpointError> {
    id.strip_prefix('c')
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| CheckpointError::BadId(id.to_string()))
}

fn info(record: &Record) -> CheckpointInfo {
    CheckpointInfo {
        id: wire_id(record.id),
        parent: record.parent.map(wire_id),
        label: record.label.clone(),
        created_at: record.created_at.clone(),
        files: record.files,
        dirs: record.dirs,
        symlinks: record.symlinks,
        bytes: record.bytes,
        keep: record.keep,
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    started.elapsed().as_millis() as u64
}

/// Paths whose kind, content or mode differ between two indexes, or that are in one only.
fn count_changed(old: &Index, new: &Index) -> u64 {
    let differ = new
        .iter()
        .filter(|(path, seen)| {
            old.get(*path)
                .is_none_or(|o| o.kind != seen.kind || o.hash != seen.hash || o.mode != seen.mode)
        })
        .count();
    let gone = old.keys().filter(|path| !new.contains_key(*path)).count();
    (differ + gone) as u64
}

impl Checkpoints {
    /// Checkpoints of `workspace` kept as `settings` say.
    pub fn new(workspace: PathBuf, settings: CheckpointSettings) -> Checkpoints {
        Checkpoints {
            workspace,
            settings,
            store: Arc::new(Mutex::new(None)),
        }
    }

    /// Runs `op` on the blocking pool with the store open.
    async fn with_store<T: Send + 'static>(
        &self,
        op: impl FnOnce(&Work<'_>, &mut Store) -> Result<T, CheckpointError> + Send + 'static,
    ) -> Result<T, CheckpointError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.blocking(op))
            .await
            .map_err(|e| CheckpointError::Task(e.to_string()))?
    }

    /// Records the workspace as it is.
    pub async fn create(
        &self,
        label: Option<String>,
        keep: bool,
    ) -> Result<CheckpointCreated, CheckpointError> {
        self.with_store(move |work, store| work.create(store, label, keep))
            .await
    }

    /// Every checkpoint, oldest first.
    pub async fn list(&self) -> Result<CheckpointList, CheckpointError> {
        self.with_store(|work, store| {
            let ignore = Ignore::load(work.workspace)?;
            let workspace_bytes = store.latest().map_or(0, |r| r.bytes);
            Ok(CheckpointList {
                checkpoints: store.records.values().map(info).collect(),
                store_bytes: store.bytes(),
                store_cap: work.cap(workspace_bytes),
                ignored: ignore.patterns,
            })
        })
        .await
    }

    /// What differs from checkpoint `from` to checkpoint `to` (or the workspace now).
    pub async fn diff(&self, from: String, to: String) -> Result<CheckpointDiff, CheckpointError> {
        self.with_store(move |work, store| {
            let a = work.record(store, &from)?.root()?;
            let b = if to == CURRENT {
                let ignore = Ignore::load(work.workspace)?;
                let old = store.index.clone();
                scan::scan(work.workspace, store, &ignore, &old)?.root
            } else {
                work.record(store, &to)?.root()?
            };
            diff::diff(store, (&from, &a), (&to, &b))
        })
        .await
    }

    /// Makes the workspace what checkpoint `id` recorded.
    pub async fn restore(
        &self,
        id: String,
        stopped_sessions: Vec<String>,
    ) -> Result<RestoreResponse, CheckpointError> {
        self.with_store(move |work, store| {
            let started = Instant::now();
            let target = parse_id(&id)?;
            if !store.records.contains_key(&target) {
                return Err(CheckpointError::NotFound(id));
            }
            let label = format!("before restoring {id}");
            // The cap waits until the restore is done: it must not drop the target.
            let before = work.record_workspace(store, Some(label), false)?;
            let before = parse_id(&before.checkpoint.id)?;
            let applied = work.restore(store, target, before)?;
            let bytes = store.latest().map_or(0, |r| r.bytes);
            work.enforce_cap(store, bytes)?;
            Ok(RestoreResponse {
                id,
                before: wire_id(before),
                written: applied.written,
                removed: applied.removed,
                stopped_sessions,
                ms: elapsed_ms(started),
            })
        })
        .await
    }

    /// Checks that `id` names a checkpoint.
    pub async fn check(&self, id: String) -> Result<(), CheckpointError> {
        self.with_store(move |work, store| work.exists(store, &id))
            .await
    }

    /// Where the store is.
    pub fn dir(&self) -> &Path {
        &self.settings.dir
    }

    /// An unnamed file beside the store, for an archive coming in.
    pub fn spool(&self) -> Result<std::fs::File, CheckpointError> {
        let dir = self.settings.dir.join("tmp");
        std::fs::create_dir_all(&dir)
            .and_then(|()| tempfile::tempfile_in(&dir))
            .map_err(|source| CheckpointError::Store { path: dir, source })
    }

    /// Finishes, or else undoes, a restore a stopped daemon left under way. Nothing to do
    /// (one `stat`) when none was.
    pub fn recover(&self) -> Result<(), CheckpointError> {
        if !self.settings.dir.join(JOURNAL).exists() {
            return Ok(());
        }
        self.blocking(|work, store| {
            let path = store.dir().join(JOURNAL);
            let journal: Journal = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                .ok_or(CheckpointError::Damaged("the restore journal"))?;
            tracing::warn!(
                target = %wire_id(journal.target),
                before = %wire_id(journal.before),
                "a restore was cut short; finishing it"
            );
            work.restore(store, journal.target, journal.before)
                .map(|_| ())
        })
    }

    /// Runs `op` with the store open, on this thread (archive streams, imports).
    pub fn blocking<T>(
        &self,
        op: impl FnOnce(&Work<'_>, &mut Store) -> Result<T, CheckpointError>,
    ) -> Result<T, CheckpointError> {
        let mut guard = lock(&self.store);
        let work = Work {
            workspace: &self.workspace,
            settings: &self.settings,
        };
        let store = work.open(&mut guard)?;
        op(&work, store)
    }
}

fn lock(store: &Mutex<Option<Store>>) -> MutexGuard<'_, Option<Store>> {
    store
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The workspace and settings an operation works with.
pub struct Work<'a> {
    workspace: &'a Path,
    settings: &'a CheckpointSettings,
}

impl Work<'_> {
    fn open<'s>(&self, slot: &'s mut Option<Store>) -> Result<&'s mut Store, CheckpointError> {
        if slot.is_none() {
            if self.settings.dir.starts_with(self.workspace) {
                return Err(CheckpointError::StoreInWorkspace(self.settings.dir.clone()));
            }
            *slot = Some(Store::open(&self.settings.dir)?);
        }
        slot.as_mut()
            .ok_or(CheckpointError::Damaged("the store did not open"))
    }

    fn cap(&self, workspace_bytes: u64) -> u64 {
        self.settings
            .cap
            .unwrap_or_else(|| workspace_bytes.saturating_mul(2).max(MIN_CAP))
    }

    fn record<'s>(&self, store: &'s Store, id: &str) -> Result<&'s Record, CheckpointError> {
        store
            .records
            .get(&parse_id(id)?)
            .ok_or_else(|| CheckpointError::NotFound(id.to_string()))
    }

    /// Scans the workspace and keeps it as a new checkpoint, the store kept under its cap.
    fn create(
        &self,
        store: &mut Store,
        label: Option<String>,
        keep: bool,
    ) -> Result<CheckpointCreated, CheckpointError> {
        let mut created = self.record_workspace(store, label, keep)?;
        created.dropped = self.enforce_cap(store, created.checkpoint.bytes)?;
        Ok(created)
    }

    /// Scans the workspace and keeps it as a new checkpoint.
    fn record_workspace(
        &self,
        store: &mut Store,
        label: Option<String>,
        keep: bool,
    ) -> Result<CheckpointCreated, CheckpointError> {
        let started = Instant::now();
        let ignore = Ignore::load(self.workspace)?;
        let old = std::mem::take(&mut store.index);
        let scanned = match scan::scan(self.workspace, store, &ignore, &old) {
            Ok(scanned) => scanned,
            Err(e) => {
                store.index = old;
                return Err(e);
            }
        };
        let changed = count_changed(&old, &scanned.index);
        let id = store.take_id();
        let record = Record {
            id,
            parent: store.head(),
            label,
            created_at: crate::timestamp::rfc3339(SystemTime::now()),
            root: tree::hex(&scanned.root),
            files: scanned.files,
            dirs: scanned.dirs,
            symlinks: scanned.symlinks,
            bytes: scanned.bytes,
            keep,
        };
        let checkpoint = info(&record);
        store.commit(record, scanned.index)?;
        Ok(CheckpointCreated {
            checkpoint,
            changed,
            bytes_added: scanned.bytes_added,
            ms: elapsed_ms(started),
            ignored: ignore.patterns,
            skipped: scanned.skipped,
            dropped: Vec::new(),
        })
    }

    /// Drops the oldest checkpoints not kept (never the newest, nor the one the workspace
    /// came from) while the store is over its cap; their ids.
    fn enforce_cap(
        &self,
        store: &mut Store,
        workspace_bytes: u64,
    ) -> Result<Vec<String>, CheckpointError> {
        let cap = self.cap(workspace_bytes);
        let mut dropped = Vec::new();
        while store.bytes() > cap {
            let newest = store.latest().map(|r| r.id);
            let head = store.head();
            let Some(oldest) = store
                .records
                .values()
                .find(|r| !r.keep && Some(r.id) != newest && Some(r.id) != head)
                .map(|r| r.id)
            else {
                tracing::warn!(
                    bytes = store.bytes(),
                    cap,
                    "the checkpoint store is over its cap and holds nothing it may drop"
                );
                break;
            };
            store.drop_record(oldest)?;
            store.collect_garbage()?;
            dropped.push(wire_id(oldest));
        }
        Ok(dropped)
    }

    /// Makes the workspace checkpoint `target` from what it is now (just recorded as
    /// `before`), journalled; undone on failure when it can be.
    fn restore(
        &self,
        store: &mut Store,
        target: u64,
        before: u64,
    ) -> Result<restore::Applied, CheckpointError> {
        let journal = serde_json::to_vec(&Journal { target, before }).unwrap_or_default();
        let journal_path = store.dir().join(JOURNAL);
        std::fs::write(&journal_path, journal).map_err(|source| CheckpointError::Store {
            path: journal_path.clone(),
            source,
        })?;
        let applied = match self.apply(store, target) {
            Ok(applied) => applied,
            Err(e) => {
                tracing::warn!(error = %e, "the restore failed; putting the workspace back");
                if let Err(back) = self.apply(store, before) {
                    tracing::error!(error = %back, "the workspace could not be put back; the next start tries again");
                    return Err(e);
                }
                let _ = std::fs::remove_file(&journal_path);
                return Err(e);
            }
        };
        let _ = std::fs::remove_file(&journal_path);
        Ok(applied)
    }

    /// Reads the workspace as it is and applies the differences to checkpoint `target`.
    fn apply(&self, store: &mut Store, target: u64) -> Result<restore::Applied, CheckpointError> {
        let wanted = store
            .records
            .get(&target)
            .ok_or(CheckpointError::Damaged("the restore's checkpoint is gone"))?
            .root()?;
        let ignore = Ignore::load(self.workspace)?;
        let old = std::mem::take(&mut store.index);
        let scanned = scan::scan(self.workspace, store, &ignore, &old);
        let scanned = match scanned {
            Ok(scanned) => scanned,
            Err(e) => {
                store.index = old;
                return Err(e);
            }
        };
        let mut index = scanned.index;
        let root = scan::open_dir_path(self.workspace)?;
        let applied = restore::apply(store, &root, &scanned.root, &wanted, &ignore, &mut index);
        store.index = index;
        let applied = applied?;
        store.set_head(target)?;
        store.save_index()?;
        Ok(applied)
    }

    /// Takes a tar as a new checkpoint (the workspace is not touched).
    pub fn import(
        &self,
        store: &mut Store,
        input: impl io::Read,
        label: Option<String>,
    ) -> Result<CheckpointCreated, CheckpointError> {
        let started = Instant::now();
        let imported = archive::import(store, input)?;
        let id = store.take_id();
        let record = Record {
            id,
            parent: None,
            label,
            created_at: crate::timestamp::rfc3339(SystemTime::now()),
            root: tree::hex(&imported.root),
            files: imported.files,
            dirs: imported.dirs,
            symlinks: imported.symlinks,
            bytes: imported.bytes,
            keep: false,
        };
        let checkpoint = info(&record);
        store.add_record(record)?;
        let dropped = self.enforce_cap(store, imported.bytes)?;
        Ok(CheckpointCreated {
            checkpoint,
            changed: imported.files + imported.dirs + imported.symlinks,
            bytes_added: imported.bytes_added,
            ms: elapsed_ms(started),
            ignored: Vec::new(),
            skipped: Vec::new(),
            dropped,
        })
    }

    /// Writes checkpoint `id` as a tar.
    pub fn export(
        &self,
        store: &Store,
        id: &str,
        out: impl io::Write,
    ) -> Result<(), CheckpointError> {
        let root = self.record(store, id)?.root()?;
        archive::export(store, &root, out)
    }

    /// The content of regular file `path` (relative, `/`-separated) at checkpoint `id`;
    /// none when it is not a regular file there.
    pub fn file_at(
        &self,
        store: &Store,
        id: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, CheckpointError> {
        let mut tree = store.tree(&self.record(store, id)?.root()?)?;
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        for (i, part) in parts.iter().enumerate() {
            let Some(entry) = tree.get(part.as_bytes()).cloned() else {
                return Ok(None);
            };
            if i + 1 == parts.len() {
                return match entry.kind {
                    tree::Kind::File => store.read_object(&entry.hash).map(Some),
                    _ => Ok(None),
                };
            }
            if entry.kind != tree::Kind::Dir {
                return Ok(None);
            }
            tree = store.tree(&entry.hash)?;
        }
        Ok(None)
    }

    /// Checks that `id` names a checkpoint.
    pub fn exists(&self, store: &Store, id: &str) -> Result<(), CheckpointError> {
        self.record(store, id).map(|_| ())
    }
}
