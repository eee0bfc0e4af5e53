//! An upload in progress (written to a temporary file beside its place, renamed into it
//! once whole, removed if abandoned), and the atomic writes and deletions on disk.

use super::*;

#[derive(Debug)]
pub(super) struct PendingRename {
    pub(super) parent: Dir,
    pub(super) temp_name: String,
    pub(super) name: String,
    pub(super) mode: u32,
}

/// An upload in progress. Dropping it without [`Upload::commit`] removes the temporary file.
#[derive(Debug)]
pub struct Upload {
    pub(super) path: String,
    pub(super) file: Option<std::fs::File>,
    pub(super) pending: Option<PendingRename>,
}

impl Upload {
    /// The destination, relative to the root.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The file to write the bytes into.
    pub fn take_file(&mut self) -> Option<std::fs::File> {
        self.file.take()
    }

    /// Moves the finished upload into place (see [`Workspace::commit`]).
    pub(super) fn commit(mut self) -> Result<(), FileError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let PendingRename {
            parent,
            temp_name,
            name,
            mode,
        } = pending;
        let result = parent
            .open(&temp_name)
            .and_then(|f| {
                f.into_std()
                    .set_permissions(std::fs::Permissions::from_mode(mode))
            })
            .and_then(|()| parent.rename(&temp_name, &parent, &name));
        if let Err(e) = result {
            let _ = parent.remove_file(&temp_name);
            return Err(map_io(&self.path, e));
        }
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(pending) = &self.pending {
            let _ = pending.parent.remove_file(&pending.temp_name);
        }
    }
}

pub(super) fn write_all_and_set_mode(
    mut file: std::fs::File,
    content: &[u8],
    mode: u32,
) -> io::Result<()> {
    file.write_all(content)?;
    // The umask may have cleared bits the caller asked for.
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.sync_all()
}

pub(super) fn create_temp(parent: &Dir) -> io::Result<(String, std::fs::File)> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    let mut last_error = None;
    for _ in 0..8 {
        let name = format!(".coved-{}.tmp", random_hex(8));
        match parent.open_with(&name, &options) {
            Ok(file) => return Ok((name, file.into_std())),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

pub(super) fn replace_atomically(
    parent: &Dir,
    name: &str,
    content: &[u8],
    mode: u32,
) -> io::Result<()> {
    let (temp_name, file) = create_temp(parent)?;
    let result = write_all_and_set_mode(file, content, mode)
        .and_then(|()| parent.rename(&temp_name, parent, name));
    if result.is_err() {
        let _ = parent.remove_file(&temp_name);
    }
    result
}

/// Deletes the directory `name` in `parent` and everything in it while holding at most two
/// directories open, however deep the tree (a descriptor per level would run out past a
/// few thousand): each subdirectory met is first moved up into the directory being deleted,
/// so the tree flattens as it goes, and is emptied in a later pass. Symbolic links are
/// removed, never followed.
pub(super) fn remove_tree(parent: &Dir, name: &str) -> io::Result<()> {
    use std::os::unix::fs::DirEntryExt as _;
    let top = parent.open_dir(name)?;
    loop {
        let mut subdirs = Vec::new();
        for entry in top.entries()? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                subdirs.push((entry.file_name(), entry.ino()));
            } else {
                top.remove_file(entry.file_name())?;
            }
        }
        if subdirs.is_empty() {
            break;
        }
        for (sub, ino) in subdirs {
            let dir = top.open_dir(&sub)?;
            // Another process may have swapped the entry for a link since it was listed.
            if dir.dir_metadata()?.ino() != ino {
                return Err(io::Error::other(
                    "the tree changed while it was being deleted; try again",
                ));
            }
            for entry in dir.entries()? {
                let entry = entry?;
                if entry.file_type()?.is_dir() {
                    let flat = format!(".coved-rm-{}", random_hex(8));
                    dir.rename(entry.file_name(), &top, &flat)?;
                } else {
                    dir.remove_file(entry.file_name())?;
                }
            }
            drop(dir);
            top.remove_dir(&sub)?;
        }
    }
    drop(top);
    parent.remove_dir(name)
}
