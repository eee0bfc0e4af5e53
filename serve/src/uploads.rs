//! Files a person attaches to a task or a reply: held by the server (`POST /v1/uploads`)
//! until the run that takes them starts, then put in the thread's workspace under
//! `uploads/` and named in the message the agent reads. A held file is let go only once it
//! is in the workspace, so a run that cannot start loses none.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::http::StatusCode;
use cove_protocol::client::CovedClient;
use cove_protocol::files::ListQuery;
use cove_protocol::serve::Upload;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::error::ApiError;
use cove_core::store::new_id;

/// The largest file one upload may hold.
pub(super) const MAX_UPLOAD_BYTES: u64 = 100 * 1024 * 1024;
/// Held files no task took are let go at the next start after this long.
const KEEP_UNUSED: Duration = Duration::from_secs(24 * 3600);
/// The workspace folder attachments land in.
const WORKSPACE_FOLDER: &str = "uploads";

/// Where held files wait: a folder per upload, the file under its own name.
pub(super) struct Uploads {
    dir: PathBuf,
}

/// A held file, taken for a run.
#[derive(Debug, Clone)]
pub(super) struct Staged {
    pub(super) name: String,
    pub(super) size: u64,
    path: PathBuf,
}

/// Why `name` cannot name an attachment, if it cannot.
fn bad_name(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        return Some("the name is empty");
    }
    if name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Some("the name must be a file name, without folders");
    }
    if name.len() > 255 {
        return Some("the name is longer than 255 bytes");
    }
    None
}

/// `size` for people: 812 B, 12.3 KB, 4.0 MB.
fn size_text(size: u64) -> String {
    match size {
        s if s < 1024 => format!("{s} B"),
        s if s < 1024 * 1024 => format!("{:.1} KB", s as f64 / 1024.0),
        s => format!("{:.1} MB", s as f64 / (1024.0 * 1024.0)),
    }
}

impl Uploads {
    /// Held files live under `dir`; those older than a day are let go now.
    pub(super) fn new(dir: PathBuf) -> Uploads {
        let uploads = Uploads { dir };
        uploads.sweep();
        uploads
    }

    fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age > KEEP_UNUSED);
            if old {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Holds `body` as the file `name` (at most [`MAX_UPLOAD_BYTES`]); nothing is left
    /// behind when it fails.
    pub(super) async fn put(&self, name: &str, body: Body) -> Result<Upload, ApiError> {
        if let Some(why) = bad_name(name) {
            return Err(ApiError::bad(format!("{why}: {name:?}")));
        }
        let id = new_id(12);
        let folder = self.dir.join(&id);
        let result = write(&folder, name, body).await;
        if result.is_err() {
            let _ = tokio::fs::remove_dir_all(&folder).await;
        }
        let size = result?;
        Ok(Upload {
            id,
            name: name.to_string(),
            size,
        })
    }

    /// The held files `ids` name, for a run; an id unknown here is the caller's error.
    pub(super) fn take(&self, ids: &[String]) -> Result<Vec<Staged>, ApiError> {
        ids.iter()
            .map(|id| {
                let unknown = || {
                    ApiError::bad(format!(
                        "no uploaded file {id:?}: upload it with POST /v1/uploads?name=NAME first (files not used within a day are let go)"
                    ))
                };
                if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(unknown());
                }
                let folder = self.dir.join(id);
                let entry = std::fs::read_dir(&folder)
                    .ok()
                    .and_then(|mut entries| entries.next())
                    .and_then(Result::ok)
                    .ok_or_else(unknown)?;
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                Ok(Staged {
                    name: entry.file_name().to_string_lossy().into_owned(),
                    size,
                    path: entry.path(),
                })
            })
            .collect()
    }

    /// Lets a held file go.
    fn remove(&self, staged: &Staged) {
        if let Some(folder) = staged.path.parent()
            && folder.starts_with(&self.dir)
        {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
}

async fn write(folder: &Path, name: &str, body: Body) -> Result<u64, ApiError> {
    let failed = |e: std::io::Error| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "failed",
            format!("cannot hold the file: {e}"),
        )
    };
    cove_core::private_files::dir_all(folder).map_err(failed)?;
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(folder.join(name))
        .await
        .map_err(failed)?;
    let mut size = 0u64;
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ApiError::bad(format!("the upload broke off: {e}")))?;
        size += chunk.len() as u64;
        if size > MAX_UPLOAD_BYTES {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!(
                    "a file may have at most {}; put larger files in the workspace another way",
                    size_text(MAX_UPLOAD_BYTES)
                ),
            ));
        }
        file.write_all(&chunk).await.map_err(failed)?;
    }
    file.flush().await.map_err(failed)?;
    Ok(size)
}

/// Puts the held files into the workspace's `uploads/` (a name taken there gets a number),
/// lets them go, and says where they are, for the message.
pub(super) async fn deliver(
    uploads: &Uploads,
    sandbox: &CovedClient,
    staged: &[Staged],
) -> Result<String, String> {
    let mut taken: Vec<String> = match sandbox
        .list(&ListQuery {
            path: WORKSPACE_FOLDER.into(),
            depth: 1,
        })
        .await
    {
        Ok(listing) => listing.entries.into_iter().map(|e| e.path).collect(),
        // No folder yet.
        Err(_) => Vec::new(),
    };
    let mut placed = Vec::new();
    for file in staged {
        let path = free_path(&file.name, &taken);
        let body = tokio::fs::File::open(&file.path)
            .await
            .map_err(|e| format!("cannot read the uploaded {}: {e}", file.name))?;
        sandbox
            .upload(&path, body)
            .await
            .map_err(|e| format!("cannot put {path} into the sandbox: {e}"))?;
        taken.push(path.clone());
        placed.push(format!("{path} ({})", size_text(file.size)));
    }
    for file in staged {
        uploads.remove(file);
    }
    Ok(format!(
        "Attached files, in the workspace: {}",
        placed.join(", ")
    ))
}

/// `uploads/NAME`, or `uploads/NAME-2.ext` and on when that is taken.
fn free_path(name: &str, taken: &[String]) -> String {
    let first = format!("{WORKSPACE_FOLDER}/{name}");
    if !taken.contains(&first) {
        return first;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem, format!(".{ext}")),
        _ => (name, String::new()),
    };
    (2..)
        .map(|n| format!("{WORKSPACE_FOLDER}/{stem}-{n}{ext}"))
        .find(|p| !taken.contains(p))
        .unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_file_names() {
        assert!(bad_name("report.csv").is_none());
        assert!(bad_name("").is_some());
        assert!(bad_name("..").is_some());
        assert!(bad_name("a/b").is_some());
        assert!(bad_name(&"x".repeat(300)).is_some());
    }

    #[test]
    fn a_taken_name_gets_a_number() {
        let taken = vec!["uploads/a.csv".to_string(), "uploads/a-2.csv".to_string()];
        assert_eq!(free_path("b.csv", &taken), "uploads/b.csv");
        assert_eq!(free_path("a.csv", &taken), "uploads/a-3.csv");
        assert_eq!(
            free_path("notes", &["uploads/notes".into()]),
            "uploads/notes-2"
        );
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size_text(812), "812 B");
        assert_eq!(size_text(12_600), "12.3 KB");
        assert_eq!(size_text(4 * 1024 * 1024), "4.0 MB");
    }
}
