//! A workspace's web page as its browser would show it: its style sheets, pictures and
//! fonts load from beside it. The page's own address holds a short-lived capability
//! (`/view/{token}/{path}`), so what the page loads needs no cookie (a sandboxed page is an
//! origin of its own, and the session cookie is SameSite=Strict and sent only under the
//! page's secret path); the token reads that one
//! thread's workspace, for a while, and nothing else. The page still runs no scripts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::{IntoResponse, Response};
use cove_protocol::serve::FileContentQuery;

use super::ServeState;
use super::error::{ApiError, ApiQuery};
use super::workspace::{Shown, file_response, percent_encoded};

/// How long a view's address works.
const VIEW_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// The views handed out: token to thread and expiry.
#[derive(Default)]
pub(super) struct Views {
    open: Mutex<HashMap<String, (String, Instant)>>,
}

impl Views {
    /// A token for reading `thread`'s workspace for a while.
    fn mint(&self, thread: &str) -> String {
        let token = cove_core::store::new_id(32);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        open.retain(|_, (_, until)| *until > now);
        open.insert(token.clone(), (thread.to_string(), now + VIEW_LIFETIME));
        token
    }

    /// The thread `token` reads, while it works.
    fn thread_of(&self, token: &str) -> Option<String> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(token)
            .filter(|(_, until)| *until > Instant::now())
            .map(|(thread, _)| thread.clone())
    }
}

/// `GET /v1/threads/{id}/files/view?path=`: 303 to the page's view address.
pub(super) async fn open_view(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<FileContentQuery>,
) -> Result<Response, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let token = state.views.mint(&thread.id);
    let path: String = query
        .path
        .trim_start_matches('/')
        .split('/')
        .map(percent_encoded)
        .collect::<Vec<_>>()
        .join("/");
    Ok((
        StatusCode::SEE_OTHER,
        [(LOCATION, format!("/view/{token}/{path}"))],
    )
        .into_response())
}

/// `GET /view/{token}/{*path}`: a file of the workspace the token reads.
pub(super) async fn serve_view(
    State(state): State<Arc<ServeState>>,
    Path((token, path)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let Some(thread) = state.views.thread_of(&token) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "view_expired",
            "this view has expired: open the file again from the page",
        ));
    };
    let thread = state.store.thread_exact(&thread)?;
    file_response(&state, &thread, &path, Shown::Page).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_reads_its_thread_until_it_expires() {
        let views = Views::default();
        let token = views.mint("t1");
        assert_eq!(views.thread_of(&token).as_deref(), Some("t1"));
        assert_eq!(views.thread_of("nope"), None);
        views
            .open
            .lock()
            .unwrap()
            .insert("old".into(), ("t1".into(), Instant::now()));
        assert_eq!(views.thread_of("old"), None, "expired");
        assert_eq!(percent_encoded("a b.css"), "a%20b.css");
    }
}
