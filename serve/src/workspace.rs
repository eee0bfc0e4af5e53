//! A thread's workspace files over the API: listed and read through its sandbox. While a
//! run works in it, the run's sandbox answers; otherwise the server opens the sandbox (a
//! local one starts its coved) and closes it after a minute without use.
//!
//! Workspace files are what the agent made, often from the web: they are served so that
//! nothing in them can act as this server's page. Every answer is `nosniff`; HTML and SVG
//! come with `Content-Security-Policy: sandbox` (an origin of their own, no scripts);
//! anything not known to be safe to show (PDFs among them: the browser's viewer refuses a
//! sandbox, and a PDF may carry scripts) is an attachment.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cove_protocol::client::{ClientError, CovedClient};
use cove_protocol::files::{ListQuery, ListResponse};
use cove_protocol::serve::FileContentQuery;
use tokio::sync::Mutex;

use super::ServeState;
use super::error::{ApiError, ApiQuery};
use cove_core::store::Thread;
use cove_sandbox::{Sandbox, SandboxSpec, coved_log};

/// How long a sandbox opened for its files stays open unused.
const IDLE_LIMIT: Duration = Duration::from_secs(60);

/// A thread's sandbox opened to show its files, and when it was last used.
#[derive(Default)]
struct Slot {
    sandbox: Option<Sandbox>,
    used: Option<Instant>,
}

/// Sandboxes the server opened to show threads' files, by thread. Each thread's slot has
/// its own lock, so a slow start (a Docker container) holds up that thread only.
#[derive(Default)]
pub(super) struct Sandboxes {
    slots: std::sync::Mutex<HashMap<String, Arc<Mutex<Slot>>>>,
}

impl Sandboxes {
    fn slot(&self, thread: &str) -> Arc<Mutex<Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(thread.to_string())
            .or_default()
            .clone()
    }

    /// Closes `thread`'s, if open.
    pub(super) async fn close(&self, thread: &str) {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(thread);
        if let Some(slot) = slot {
            let sandbox = slot.lock().await.sandbox.take();
            if let Some(sandbox) = sandbox {
                sandbox.close().await;
            }
        }
    }

    /// Closes those unused for a minute (or all); one still opening is left alone.
    pub(super) async fn close_idle(&self, all: bool) {
        let slots: Vec<(String, Arc<Mutex<Slot>>)> = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(thread, slot)| (thread.clone(), slot.clone()))
            .collect();
        for (thread, slot) in slots {
            let Ok(mut slot) = slot.try_lock() else {
                continue;
            };
            let idle = all || slot.used.is_none_or(|used| used.elapsed() > IDLE_LIMIT);
            if !idle {
                continue;
            }
            if let Some(sandbox) = slot.sandbox.take() {
                sandbox.close().await;
            }
            drop(slot);
            self.slots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&thread);
        }
    }
}

/// A client of `thread`'s sandbox: the running run's, or one opened for the request.
pub(super) async fn sandbox_of(
    state: &Arc<ServeState>,
    thread: &Thread,
) -> Result<CovedClient, ApiError> {
    match state.live.get(&thread.id) {
        Some(Some(run)) => return Ok(run.sandbox),
        Some(None) => {
            return Err(ApiError::conflict(
                "starting",
                "the thread's run is opening its sandbox; ask again in a moment",
            ));
        }
        None => {}
    }
    let slot = state.sandboxes.slot(&thread.id);
    let mut slot = slot.lock().await;
    slot.used = Some(Instant::now());
    if let Some(sandbox) = &slot.sandbox {
        return Ok(sandbox.client.clone());
    }
    let spec = SandboxSpec::from_label(&thread.sandbox);
    let sandboxes = state.sandbox_layer();
    let token = sandboxes.token_for(&state.sandbox, &spec);
    let sandbox = sandboxes
        .open(spec, token, Some(&coved_log()))
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "sandbox_unavailable",
                format!("cannot open the thread's sandbox to read its files: {e}"),
            )
        })?;
    let client = sandbox.client.clone();
    slot.sandbox = Some(sandbox);
    Ok(client)
}

/// A sandbox's refusal, passed on with its code (not_found, path_outside_workspace, …).
pub(super) fn from_sandbox(error: ClientError) -> ApiError {
    match error {
        ClientError::Api {
            status,
            code,
            message,
            ..
        } => ApiError::new(
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
            code.as_str().to_string(),
            message,
        ),
        other => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "sandbox_unavailable",
            format!("the sandbox did not answer: {other}"),
        ),
    }
}

/// `GET /v1/threads/{id}/files`.
pub(super) async fn list(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<ListResponse>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let sandbox = sandbox_of(&state, &thread).await?;
    Ok(Json(sandbox.list(&query).await.map_err(from_sandbox)?))
}

/// How a file may be shown: its type, and whether it needs a sandbox of its own.
fn shown_as(path: &str) -> Option<(&'static str, bool)> {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let name = path.rsplit('/').next().unwrap_or(path);
    Some(match ext.as_str() {
        "html" | "htm" => ("text/html; charset=utf-8", true),
        "svg" => ("image/svg+xml", true),
        "png" => ("image/png", false),
        "jpg" | "jpeg" => ("image/jpeg", false),
        "gif" => ("image/gif", false),
        "webp" => ("image/webp", false),
        "txt" | "md" | "markdown" | "csv" | "tsv" | "json" | "jsonl" | "log" | "py" | "rs"
        | "js" | "mjs" | "ts" | "tsx" | "jsx" | "css" | "sh" | "bash" | "yaml" | "yml" | "toml"
        | "ini" | "cfg" | "conf" | "xml" | "sql" | "c" | "h" | "cpp" | "hpp" | "go" | "java"
        | "kt" | "rb" | "php" | "pl" | "r" | "lua" | "swift" | "diff" | "patch" | "env"
        | "gitignore" | "dockerfile" | "mk" | "tex" | "rst" | "org" => {
            ("text/plain; charset=utf-8", false)
        }
        _ if matches!(
            name,
            "Makefile" | "Dockerfile" | "README" | "LICENSE" | "todo" | "Procfile"
        ) =>
        {
            ("text/plain; charset=utf-8", false)
        }
        _ => return None,
    })
}

/// `filename*=` of Content-Disposition (RFC 6266 / 5987).
fn disposition(kind: &str, path: &str) -> HeaderValue {
    let name = path.rsplit('/').next().unwrap_or(path);
    let encoded = percent_encoded(name);
    HeaderValue::from_str(&format!("{kind}; filename*=UTF-8''{encoded}"))
        .unwrap_or(HeaderValue::from_static("attachment"))
}

/// `text` with every byte but RFC 3986's unreserved ones percent-encoded: safe in a header's
/// `filename*` and in one segment of a URL path.
pub(super) fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `GET /v1/threads/{id}/files/content?path=&download=`.
pub(super) async fn content(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<FileContentQuery>,
) -> Result<Response, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let how = if query.download {
        Shown::Download
    } else {
        Shown::Inline
    };
    file_response(&state, &thread, &query.path, how).await
}

/// How a workspace file is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    /// An attachment, to save.
    Download,
    /// Shown when its type is safe to show, its source for code and style sheets.
    Inline,
    /// As a browser renders a page it opened: style sheets and fonts as such, for the
    /// page's own HTML (see `view`).
    Page,
}

/// The CSP of a workspace page: an origin of its own and no scripts; in `Page` mode its
/// style sheets, pictures and fonts may come from beside it.
const SANDBOXED: &str =
    "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:";
const SANDBOXED_PAGE: &str = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; media-src 'self'";

/// `path` of `thread`'s workspace as `how` says.
pub(super) async fn file_response(
    state: &Arc<ServeState>,
    thread: &Thread,
    path: &str,
    how: Shown,
) -> Result<Response, ApiError> {
    let sandbox = sandbox_of(state, thread).await?;
    let upstream = sandbox
        .download_response(path)
        .await
        .map_err(from_sandbox)?;
    let length = upstream.headers().get(CONTENT_LENGTH).cloned();
    let shown = match how {
        Shown::Download => None,
        Shown::Inline => shown_as(path),
        Shown::Page => rendered_as(path).or_else(|| shown_as(path)),
    };
    let mut response = Response::new(Body::from_stream(upstream.bytes_stream())).into_response();
    let headers = response.headers_mut();
    if let Some(length) = length {
        headers.insert(CONTENT_LENGTH, length);
    }
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    if how == Shown::Page {
        // A view's address holds its key: a link followed from the page must not send it
        // on as the Referer.
        headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    }
    match shown {
        Some((mime, sandboxed)) => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(mime));
            headers.insert(CONTENT_DISPOSITION, disposition("inline", path));
            if sandboxed {
                headers.insert(
                    "content-security-policy",
                    HeaderValue::from_static(if how == Shown::Page {
                        SANDBOXED_PAGE
                    } else {
                        SANDBOXED
                    }),
                );
            }
        }
        None => {
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            headers.insert(CONTENT_DISPOSITION, disposition("attachment", path));
        }
    }
    Ok(response)
}

/// What a page's own resources are, as its browser takes them: style sheets and fonts.
/// Scripts are not among them: a workspace page never runs any.
fn rendered_as(path: &str) -> Option<(&'static str, bool)> {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    Some(match ext.as_str() {
        "css" => ("text/css; charset=utf-8", false),
        "woff2" => ("font/woff2", false),
        "woff" => ("font/woff", false),
        "ttf" => ("font/ttf", false),
        "otf" => ("font/otf", false),
        "ico" => ("image/x-icon", false),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_and_svg_are_sandboxed_and_unknown_types_are_attachments() {
        assert_eq!(
            shown_as("site/index.HTML"),
            Some(("text/html; charset=utf-8", true))
        );
        assert_eq!(shown_as("logo.svg"), Some(("image/svg+xml", true)));
        assert_eq!(
            shown_as("report.md"),
            Some(("text/plain; charset=utf-8", false))
        );
        assert_eq!(
            shown_as("src/Makefile"),
            Some(("text/plain; charset=utf-8", false))
        );
        assert_eq!(shown_as("a.exe"), None);
        assert_eq!(shown_as("paper.pdf"), None);
        assert_eq!(shown_as("noext"), None);
    }

    #[test]
    fn file_names_are_encoded_for_the_header() {
        assert_eq!(
            disposition("attachment", "out/r é.csv"),
            "attachment; filename*=UTF-8''r%20%C3%A9.csv"
        );
    }
}
