//! Extractors that answer bad input with the error envelope instead of axum's plain text.

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::response::IntoResponse;
use cove_protocol::ErrorCode;
use serde::de::DeserializeOwned;

use crate::AppState;
use crate::body::{BodyError, read_limited};
use crate::error::ApiError;

/// A JSON body, read under the daemon's request-size cap. The content type is not checked,
/// so `curl -d` works as is.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.limits.max_request_bytes as u64;
        let bytes = read_limited(req.into_body().into_data_stream(), limit)
            .await
            .map_err(|e| match e {
                BodyError::TooLarge { .. } => {
                    ApiError::new(ErrorCode::PayloadTooLarge, e.to_string())
                }
                BodyError::Interrupted(_) => ApiError::invalid_request(e.to_string()),
            })?;
        // An empty body is an empty object: actions without parameters take a bare POST.
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        serde_json::from_slice(bytes)
            .map(ApiJson)
            .map_err(|e| ApiError::invalid_request(format!("invalid JSON body: {e}")))
    }
}

/// A query string.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| ApiQuery(q))
            .map_err(|r: QueryRejection| ApiError::invalid_request(r.body_text()))
    }
}

/// Path parameters.
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(p)| ApiPath(p))
            .map_err(|r: PathRejection| {
                let status = r.status();
                let message = r.body_text();
                if status.is_server_error() {
                    tracing::error!(%message, "path extraction failed");
                    let _ = r.into_response();
                    ApiError::internal(message)
                } else {
                    ApiError::invalid_request(message)
                }
            })
    }
}
