//! The workspace's files, read-only, as a static web site: at `files-<run>.<base>` for browsers,
//! and at `/preview/` on the daemon's origin for the API token's holder. A directory shows its
//! `index.html`, or a listing; paths stay inside the workspace exactly as the file API's do
//! (the same confinement beneath the root handle), and only regular files are served.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use tokio_util::io::ReaderStream;

use crate::AppState;
use crate::files::FileError;
use crate::files::workspace::Workspace;

/// The media type of a file, by its extension.
pub fn media_type(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" | "map" => "application/json",
        "txt" | "md" | "log" | "py" | "rs" | "sh" | "toml" | "yaml" | "yml" => {
            "text/plain; charset=utf-8"
        }
        "csv" => "text/csv; charset=utf-8",
        "xml" => "application/xml",
        "xhtml" => "application/xhtml+xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "wasm" => "application/wasm",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        _ => "application/octet-stream",
    }
}

/// `text` made safe inside HTML text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn not_found(path: &str) -> Response {
    super::text(
        StatusCode::NOT_FOUND,
        &format!("404: no file {path} in the workspace\n"),
    )
}

async fn blocking<T: Send + 'static>(
    workspace: &Arc<Workspace>,
    op: impl FnOnce(&Workspace) -> Result<T, FileError> + Send + 'static,
) -> Option<Result<T, FileError>> {
    let workspace = workspace.clone();
    crate::blocking::blocking(move || op(&workspace)).await.ok()
}

/// Where the files are served, which decides how far their HTML is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// `files-<run>.<base>`: an origin of their own.
    Own,
    /// `/preview/` on the daemon's origin, for the API token's holder.
    Daemon,
}

/// A request to the files' origin: the path is the file.
pub async fn site(app: AppState, request: Request) -> Response {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return method_not_allowed();
    }
    // A worker would outlive the page and see every later visit to the files, links with
    // their token included; a file site has no need of one.
    if request.headers().contains_key("service-worker") {
        return super::text(
            StatusCode::FORBIDDEN,
            "403: the workspace's files register no service worker\n",
        );
    }
    let url_path = request.uri().path().to_string();
    let raw = url_path.strip_prefix('/').unwrap_or(&url_path);
    match decode(raw) {
        Some(path) => serve(app, path, &url_path, Origin::Own).await,
        None => bad_path(),
    }
}

/// `/preview/{path}` on the daemon's origin, for the API token's holder.
pub async fn on_daemon_origin(app: AppState, raw: String, request: Request) -> Response {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return method_not_allowed();
    }
    // A service worker registered here would control the API's origin.
    if request.headers().contains_key("service-worker") {
        return super::text(
            StatusCode::FORBIDDEN,
            "403: no service worker is served from the daemon's origin\n",
        );
    }
    match decode(&raw) {
        Some(path) => serve(app, path, request.uri().path(), Origin::Daemon).await,
        None => bad_path(),
    }
}

fn method_not_allowed() -> Response {
    super::text(
        StatusCode::METHOD_NOT_ALLOWED,
        "405: the workspace preview is read-only\n",
    )
}

fn bad_path() -> Response {
    super::text(StatusCode::BAD_REQUEST, "400: the path is not UTF-8\n")
}

/// A URL path, percent-decoded.
fn decode(raw: &str) -> Option<String> {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .ok()
        .map(|p| p.into_owned())
}

async fn serve(app: AppState, path: String, url_path: &str, origin: Origin) -> Response {
    let is_dir_url = path.is_empty() || path.ends_with('/');
    let target = path.clone();
    let opened = blocking(&app.workspace, move |w| w.open_for_download(&target)).await;
    match opened {
        Some(Ok((file, len))) => {
            if is_dir_url && !path.is_empty() {
                return not_found(&path);
            }
            stream_file(file, len, media_type(&path), origin)
        }
        Some(Err(FileError::IsDirectory(_))) => {
            if !is_dir_url {
                // Relative links inside the directory's page need the slash.
                let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
                let location = format!("{url_path}/");
                if let Ok(location) = HeaderValue::from_str(&location) {
                    response.headers_mut().insert(LOCATION, location);
                }
                return response;
            }
            directory(app, path, origin).await
        }
        Some(Err(FileError::OutsideWorkspace { .. })) => super::text(
            StatusCode::FORBIDDEN,
            &format!("403: {path} is outside the workspace\n"),
        ),
        Some(Err(e @ FileError::NotRegularFile(_))) => {
            super::text(StatusCode::FORBIDDEN, &format!("403: {e}\n"))
        }
        Some(Err(_)) | None => not_found(&path),
    }
}

fn stream_file(file: std::fs::File, len: u64, media: &'static str, origin: Origin) -> Response {
    let stream = ReaderStream::new(tokio::fs::File::from_std(file));
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(media));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    // The agent rewrites files as it works: never serve a stale copy.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    // An SVG or XML file needs no script to be seen, and a downloaded one may carry some.
    // HTML keeps its scripts on the files' own origin (a site the agent built must load its
    // own files); on the daemon's origin nothing previewed runs at all.
    let sandboxed = matches!(
        media,
        "image/svg+xml" | "application/xml" | "application/xhtml+xml"
    ) || (origin == Origin::Daemon && media.starts_with("text/html"));
    if sandboxed {
        headers.insert(
            "content-security-policy",
            HeaderValue::from_static("sandbox"),
        );
    }
    response
}

async fn directory(app: AppState, dir: String, origin: Origin) -> Response {
    let index = format!("{dir}index.html");
    let target = index.clone();
    if let Some(Ok((file, len))) =
        blocking(&app.workspace, move |w| w.open_for_download(&target)).await
    {
        return stream_file(file, len, media_type(&index), origin);
    }
    let target = dir.clone();
    let Some(Ok(listing)) = blocking(&app.workspace, move |w| w.list(&target, 1)).await else {
        return not_found(&dir);
    };
    let shown = if dir.is_empty() { "/" } else { dir.as_str() };
    let mut rows = String::new();
    if !dir.is_empty() {
        rows.push_str("<li><a href=\"../\">../</a></li>");
    }
    for entry in &listing.entries {
        let name = entry.path.rsplit('/').next().unwrap_or(&entry.path);
        let slash = if entry.is_dir { "/" } else { "" };
        // `./` keeps a name like `javascript:x` a path, not a scheme.
        rows.push_str(&format!(
            "<li><a href=\"./{href}{slash}\">{text}{slash}</a></li>",
            href = escape(&percent_encode(name)),
            text = escape(name),
        ));
    }
    Html(format!(
        "<!doctype html><meta charset=utf-8><meta name=viewport content=\"width=device-width\"><title>Workspace {title}</title><body style=\"font:15px system-ui,sans-serif;margin:1.5rem\"><h1 style=\"font-size:18px\">Workspace {title}</h1><ul>{rows}</ul>",
        title = escape(shown),
    ))
    .into_response()
}

/// Percent-encodes what may not stand in a URL path segment.
fn percent_encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_follow_the_extension() {
        assert_eq!(media_type("a/index.HTML"), "text/html; charset=utf-8");
        assert_eq!(media_type("app.mjs"), "text/javascript; charset=utf-8");
        assert_eq!(media_type("Makefile"), "application/octet-stream");
    }

    #[test]
    fn names_are_encoded_for_links() {
        assert_eq!(percent_encode("a b#c?.html"), "a%20b%23c%3F.html");
        assert_eq!(escape("<a href=\"x\">"), "&lt;a href=&quot;x&quot;&gt;");
    }
}
