//! `GET /v1/threads/{id}/export`: a thread as one file to keep or share, as `cove export`
//! writes it, the server's own token blotted out besides the controller's secrets.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use cove_core::export::{self, Format, Secrets};
use cove_protocol::serve::ExportQuery;

use super::ServeState;
use super::error::{ApiError, ApiQuery};

/// `GET /v1/threads/{id}/export?format=`: the thread as one file, as `cove export` writes
/// it, with the server's own token blotted out too.
pub(super) async fn export(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let (format, media) = match query.format.as_deref().unwrap_or("html") {
        "html" => (Format::Html, "text/html; charset=utf-8"),
        "md" => (Format::Markdown, "text/markdown; charset=utf-8"),
        "json" => (Format::Json, "application/json"),
        other => {
            return Err(ApiError::bad(format!(
                "no export format {other:?}: html, md or json"
            )));
        }
    };
    let thread = state.store.thread_exact(&id)?;
    let store = state.store.clone();
    let token = state.auth.token.clone();
    let (text, file) = tokio::task::spawn_blocking(move || {
        let transcript = export::transcript(&store, &thread.id)?;
        let mut secrets = Secrets::of_controller(&store)?;
        secrets.add(&token);
        let file = format!("{}.{}", transcript.thread.id, format.extension());
        Ok::<_, cove_core::store::StoreError>((export::render(&transcript, format, &secrets), file))
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))??;
    Ok((
        [
            (CONTENT_TYPE, media.to_string()),
            (
                CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file}\""),
            ),
        ],
        text,
    )
        .into_response())
}
