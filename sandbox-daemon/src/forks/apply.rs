//! Merging a fork's changes into the workspace, path by path, by comparing three versions:
//! the base (the fork's checkpoint of where it began), the fork's, and the workspace's now.
//! What only the fork changed is taken; what both changed alike is left; text files both
//! changed in different lines are merged; anything else is a conflict, left as the
//! workspace has it and named.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use cove_protocol::checkpoints::{Change, CheckpointDiff, EntryKind, PathChange};
use cove_protocol::forks::{ApplyResponse, Conflict};

use super::ForkError;
use super::merge::merge;
use crate::checkpoints::Checkpoints;

/// What one path came to.
enum Outcome {
    Applied,
    Merged,
    Unchanged,
    Conflict(String),
}

/// Merges `changes` (the fork's, from checkpoint `began` of its store `own`) from the fork
/// at `fork_root` into the workspace at `workspace`.
pub(super) fn apply(
    changes: &CheckpointDiff,
    own: &Checkpoints,
    began: &str,
    fork_root: &Path,
    workspace: &Path,
) -> Result<ApplyResponse, ForkError> {
    let mut answer = ApplyResponse::default();
    // Folders first (made before their files, removed after them: the diff is sorted by
    // path, so a folder comes before what it holds).
    let (dirs, rest): (Vec<&PathChange>, Vec<&PathChange>) = changes
        .changes
        .iter()
        .partition(|c| c.kind == EntryKind::Dir);
    let (removed_dirs, made_dirs): (Vec<&PathChange>, Vec<&PathChange>) =
        dirs.into_iter().partition(|c| c.change == Change::Deleted);
    let mut steps: Vec<&PathChange> = made_dirs;
    steps.extend(rest);
    steps.extend(removed_dirs.into_iter().rev());
    for change in steps {
        let outcome = match change.kind {
            EntryKind::Dir => dir(change, workspace),
            EntryKind::Symlink => symlink(change, fork_root, workspace),
            EntryKind::File => {
                let base = own.blocking(|work, store| work.file_at(store, began, &change.path))?;
                file(change, base, fork_root, workspace)
            }
        }
        .map_err(|e| ForkError::Io(format!("{}: {e}", change.path)))?;
        let path = change.path.clone();
        match outcome {
            Outcome::Applied => answer.applied.push(path),
            Outcome::Merged => answer.merged.push(path),
            Outcome::Unchanged => answer.unchanged.push(path),
            Outcome::Conflict(reason) => answer.conflicts.push(Conflict { path, reason }),
        }
    }
    Ok(answer)
}

/// The content of a regular file at `path`: none when nothing is there; an error for
/// anything else (a folder, a link), which is never written through.
fn read_file(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => std::fs::read(path).map(Some),
        Ok(_) => Err(std::io::Error::other("not a regular file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `bytes` to `path` whole (beside it first, then renamed over it), with `mode`.
fn write_file(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(bytes)?;
    if let Some(mode) = mode {
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn mode_of(octal: Option<&String>) -> Option<u32> {
    octal.and_then(|m| u32::from_str_radix(m, 8).ok())
}

fn file(
    change: &PathChange,
    base: Option<Vec<u8>>,
    fork_root: &Path,
    workspace: &Path,
) -> std::io::Result<Outcome> {
    let target = workspace.join(&change.path);
    let Ok(here) = read_file(&target) else {
        return Ok(Outcome::Conflict(
            "the workspace has something other than a file there".into(),
        ));
    };
    let Ok(theirs) = read_file(&fork_root.join(&change.path)) else {
        return Ok(Outcome::Conflict(
            "the fork has something other than a file there".into(),
        ));
    };
    if here == theirs {
        return Ok(Outcome::Unchanged);
    }
    let mode = mode_of(change.mode_to.as_ref());
    if here == base {
        // Only the fork changed it.
        return match theirs {
            Some(bytes) => write_file(&target, &bytes, mode).map(|()| Outcome::Applied),
            None => std::fs::remove_file(&target).map(|()| Outcome::Applied),
        };
    }
    let conflict = |why: &str| Ok(Outcome::Conflict(why.to_string()));
    match (base, here, theirs) {
        (None, Some(_), Some(_)) => conflict("added here too, with other content"),
        (Some(_), None, Some(_)) => {
            conflict("deleted here since the fork began, changed in the fork")
        }
        (Some(_), Some(_), None) => {
            conflict("changed here since the fork began, deleted in the fork")
        }
        (Some(base), Some(here), Some(theirs)) => {
            let texts = (
                std::str::from_utf8(&base),
                std::str::from_utf8(&here),
                std::str::from_utf8(&theirs),
            );
            let (Ok(base), Ok(here), Ok(theirs)) = texts else {
                return conflict("changed here and in the fork, and not text");
            };
            match merge(base, here, theirs) {
                Some(merged) => {
                    let keep = std::fs::metadata(&target)
                        .ok()
                        .map(|m| m.permissions().mode());
                    write_file(&target, merged.as_bytes(), keep).map(|()| Outcome::Merged)
                }
                None => conflict("changed here and in the fork in the same lines"),
            }
        }
        _ => conflict("changed here and in the fork"),
    }
}

fn dir(change: &PathChange, workspace: &Path) -> std::io::Result<Outcome> {
    let target = workspace.join(&change.path);
    match change.change {
        Change::Added | Change::Changed => {
            if target.is_dir() {
                return Ok(Outcome::Unchanged);
            }
            std::fs::create_dir_all(&target)?;
            if let Some(mode) = mode_of(change.mode_to.as_ref()) {
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))?;
            }
            Ok(Outcome::Applied)
        }
        Change::Deleted => match std::fs::remove_dir(&target) {
            Ok(()) => Ok(Outcome::Applied),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Outcome::Unchanged),
            Err(_) => Ok(Outcome::Conflict(
                "deleted in the fork, but it holds files here".into(),
            )),
        },
    }
}

fn symlink(change: &PathChange, fork_root: &Path, workspace: &Path) -> std::io::Result<Outcome> {
    let target = workspace.join(&change.path);
    let here = std::fs::read_link(&target).ok();
    let theirs = std::fs::read_link(fork_root.join(&change.path)).ok();
    if here == theirs {
        return Ok(Outcome::Unchanged);
    }
    match (change.change, here, theirs) {
        (Change::Added, None, Some(link)) if std::fs::symlink_metadata(&target).is_err() => {
            std::os::unix::fs::symlink(link, &target).map(|()| Outcome::Applied)
        }
        _ => Ok(Outcome::Conflict(
            "a symbolic link the fork changed: not merged, make it by hand".into(),
        )),
    }
}
