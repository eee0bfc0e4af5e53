//! The thread's browser for the page: the picture each browser call left, and the link of a
//! takeover, so the person can drive the agent's browser.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use cove_protocol::serve::TakeoverLink;
use cove_protocol::takeover::StartTakeover;

use super::ServeState;
use super::error::ApiError;
use cove_core::store::RequestKind;

/// `GET /v1/threads/{id}/screenshots/{run}/{call}`: the JPEG.
pub(super) async fn screenshot(
    State(state): State<Arc<ServeState>>,
    Path((id, run, call)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    // A call's picture never changes.
    let jpeg = state.store.screenshot(&thread.id, &run, &call)?;
    jpeg_answer(jpeg, "private, max-age=86400, immutable")
}

/// `GET /v1/threads/{id}/screenshots/latest`.
pub(super) async fn latest_screenshot(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let jpeg = state.store.latest_screenshot(&thread.id)?;
    jpeg_answer(jpeg, "no-store")
}

fn jpeg_answer(jpeg: Option<Vec<u8>>, cache: &'static str) -> Result<Response, ApiError> {
    let jpeg = jpeg.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no screenshot: the thread's browser calls left none (yet)",
        )
    })?;
    Ok(([(CONTENT_TYPE, "image/jpeg"), (CACHE_CONTROL, cache)], jpeg).into_response())
}

/// `POST /v1/threads/{id}/takeover`: the takeover the agent asked for, or a new one of the
/// running thread's browser (the agent's browser calls wait until it is handed back).
pub(super) async fn takeover(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Json<TakeoverLink>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let Some(Some(run)) = state.live.get(&thread.id) else {
        return Err(ApiError::conflict(
            "not_running",
            format!(
                "thread {} is not running, so its browser is closed; resume it or send a message first",
                thread.id
            ),
        ));
    };
    let asked_by_agent = state
        .store
        .waiting_requests(&thread.id)?
        .iter()
        .any(|r| r.kind == RequestKind::Takeover);
    // coved answers with the takeover under way when there is one.
    let grant = run
        .sandbox
        .takeover_start(&StartTakeover {
            message: Some("You have the agent's browser. Press Done to hand it back.".into()),
            ttl_secs: None,
        })
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                e.code()
                    .map(|c| c.as_str().to_string())
                    .unwrap_or_else(|| "sandbox_unavailable".into()),
                format!("the sandbox could not hand over its browser: {e}"),
            )
        })?;
    // The link goes into the page: a web address, nothing else.
    if !(grant.url.starts_with("http://") || grant.url.starts_with("https://")) {
        return Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "sandbox_unavailable",
            "the sandbox gave a takeover link that is not a web address",
        ));
    }
    Ok(Json(TakeoverLink {
        url: grant.url,
        expires_at: Some(grant.expires_at),
        asked_by_agent,
    }))
}
