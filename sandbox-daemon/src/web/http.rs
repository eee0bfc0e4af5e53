//! HTTP handlers of the web family.

use axum::Json;
use axum::extract::State;
use cove_protocol::ErrorCode;
use cove_protocol::web::{FetchRequest, FetchResponse, SearchRequest, SearchResponse};

use super::WebError;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiJson;

/// `POST /v1/web/fetch`
pub async fn fetch(
    State(app): State<AppState>,
    ApiJson(request): ApiJson<FetchRequest>,
) -> Result<Json<FetchResponse>, ApiError> {
    Ok(Json(
        app.web.fetch(&app.workspace, &app.browser, request).await?,
    ))
}

/// `POST /v1/web/search`
pub async fn search(
    State(app): State<AppState>,
    ApiJson(request): ApiJson<SearchRequest>,
) -> Result<Json<SearchResponse>, ApiError> {
    Ok(Json(app.web.search(&app.browser, request).await?))
}

impl From<WebError> for ApiError {
    fn from(e: WebError) -> Self {
        match e {
            WebError::InvalidRequest(m) => ApiError::new(ErrorCode::InvalidRequest, m),
            WebError::Timeout(m) => ApiError::new(ErrorCode::Timeout, m),
            e @ (WebError::Unreachable(_) | WebError::Status { .. } | WebError::Unreadable(_)) => {
                ApiError::new(ErrorCode::FetchFailed, e.to_string())
            }
            e @ WebError::NotAPage { .. } => ApiError::new(ErrorCode::NotAPage, e.to_string()),
            e @ WebError::TooLarge { .. } => ApiError::new(ErrorCode::PageTooLarge, e.to_string()),
            WebError::Blocked(m) => ApiError::new(ErrorCode::SearchBlocked, m),
            WebError::Browser(e) => ApiError::from(e),
            WebError::File(e) => ApiError::from(e),
            WebError::Internal(m) => ApiError::internal(m),
        }
    }
}
