//! Files and folders only their owner may read: Cove's data folder (0700), its database,
//! logs and attachments (0600), local workspaces (0700). Another user of the machine must
//! not read a conversation, a sandbox's token or the agent's work.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates `path` and its missing parents, each 0700; an existing folder is left as it is.
pub fn dir_all(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// Opens `path` to append, created 0600 if missing.
pub fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// Writes `bytes` to `path` whole or not at all (a file beside it, renamed over it), 0600.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        dir_all(parent)?;
    }
    let mut staged = path.as_os_str().to_owned();
    staged.push(".new");
    let staged = std::path::PathBuf::from(staged);
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&staged)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&staged, path)
}

/// Takes group and other permissions off `path` if it has any; returns whether it had.
pub fn tighten(path: &Path, mode: u32) -> io::Result<bool> {
    let meta = std::fs::metadata(path)?;
    let current = meta.permissions().mode() & 0o777;
    if current & !mode == 0 {
        return Ok(false);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(current & mode))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_and_files_are_made_for_their_owner_only() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("a/b/c");
        dir_all(&deep).unwrap();
        for dir in ["a", "a/b", "a/b/c"] {
            let mode = std::fs::metadata(root.path().join(dir))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "{dir}");
        }
        let log = deep.join("log");
        append(&log).unwrap();
        assert_eq!(
            std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(tighten(&log, 0o600).unwrap());
        assert!(!tighten(&log, 0o600).unwrap());
        assert_eq!(
            std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
