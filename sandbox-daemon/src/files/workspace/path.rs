//! A path inside the workspace as the API takes it, checked before anything touches the
//! disk, and what an I/O error on it means for the caller.

use super::*;

/// A checked relative path: no NUL, not absolute, no `..`; `"."` is the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelPath(pub(super) String);

impl RelPath {
    /// Checks `raw` and normalises away `.` components and repeated slashes.
    pub fn parse(raw: &str) -> Result<RelPath, FileError> {
        let outside = |reason| FileError::OutsideWorkspace {
            path: raw.to_string(),
            reason,
        };
        if raw.contains('\0') {
            return Err(outside("paths cannot contain NUL bytes"));
        }
        if raw.starts_with('/') {
            return Err(outside(
                "absolute paths are refused; give the path relative to the workspace root",
            ));
        }
        let mut parts = Vec::new();
        for part in raw.split('/') {
            match part {
                "" | "." => {}
                ".." => return Err(outside("`..` is refused; paths stay inside the workspace")),
                part => parts.push(part),
            }
        }
        if parts.is_empty() {
            return Ok(RelPath(".".to_string()));
        }
        Ok(RelPath(parts.join("/")))
    }

    /// The normalised path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The workspace root itself.
    pub fn is_root(&self) -> bool {
        self.0 == "."
    }

    /// Parent directory (`"."` at the top) and final component, or an error for the root.
    pub(super) fn split(&self) -> Result<(&str, &str), FileError> {
        if self.is_root() {
            return Err(FileError::InvalidPath {
                path: self.0.clone(),
                reason: "names the workspace root itself".into(),
            });
        }
        Ok(match self.0.rsplit_once('/') {
            Some((parent, name)) => (parent, name),
            None => (".", self.0.as_str()),
        })
    }

    pub(super) fn join(&self, name: &str) -> String {
        if self.is_root() {
            name.to_string()
        } else {
            format!("{}/{name}", self.0)
        }
    }
}

/// Maps an OS error on `path` to what it means for the caller.
pub fn map_io(path: &str, error: io::Error) -> FileError {
    // cap-std reports an escape (a symlink leading out, say) as PermissionDenied with no errno.
    if error.kind() == io::ErrorKind::PermissionDenied && error.raw_os_error().is_none() {
        return FileError::OutsideWorkspace {
            path: path.to_string(),
            reason: "resolves outside the workspace (through a symbolic link)",
        };
    }
    let path = path.to_string();
    match Errno::from_io_error(&error) {
        Some(Errno::XDEV) => FileError::OutsideWorkspace {
            path,
            reason: "resolves outside the workspace (through a symbolic link)",
        },
        Some(Errno::LOOP) => FileError::InvalidPath {
            path,
            reason: "too many levels of symbolic links".into(),
        },
        Some(Errno::NAMETOOLONG) => FileError::InvalidPath {
            path,
            reason: "name too long".into(),
        },
        Some(Errno::NOTDIR) => FileError::NotDirectory(path),
        Some(Errno::ISDIR) => FileError::IsDirectory(path),
        Some(Errno::NOTEMPTY) => FileError::DirectoryNotEmpty(path),
        Some(Errno::ACCESS | Errno::PERM | Errno::ROFS) => FileError::PermissionDenied(path),
        _ => match error.kind() {
            io::ErrorKind::NotFound => FileError::NotFound(path),
            io::ErrorKind::AlreadyExists => FileError::AlreadyExists(path),
            _ => FileError::Io {
                path,
                source: error,
            },
        },
    }
}

/// A relative path with `.` and `..` worked out by name; None for an absolute one or one
/// that climbs above the root.
pub(super) fn normalize(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            std::path::Component::RootDir | std::path::Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}
