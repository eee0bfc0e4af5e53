//! HTTP handlers of the watches family.

use axum::Json;
use axum::extract::State;
use cove_protocol::ErrorCode;
use cove_protocol::watches::{CreateWatch, EventList, EventsQuery, WatchInfo, WatchList};

use super::WatchError;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiPath, ApiQuery};

impl From<WatchError> for ApiError {
    fn from(e: WatchError) -> Self {
        let code = match &e {
            WatchError::Invalid(_) => ErrorCode::InvalidRequest,
            WatchError::NotFound(_) => ErrorCode::NotFound,
            WatchError::TooMany(_) => ErrorCode::TooManyWatches,
            WatchError::Outside(_) => ErrorCode::PathOutsideWorkspace,
        };
        ApiError::new(code, e.to_string())
    }
}

/// `POST /v1/watches`
pub async fn create(
    State(app): State<AppState>,
    ApiJson(request): ApiJson<CreateWatch>,
) -> Result<Json<WatchInfo>, ApiError> {
    Ok(Json(app.watches.create(request, &app.shell)?))
}

/// `GET /v1/watches`
pub async fn list(State(app): State<AppState>) -> Json<WatchList> {
    Json(app.watches.list())
}

/// `DELETE /v1/watches/{id}`
pub async fn delete(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<WatchInfo>, ApiError> {
    Ok(Json(app.watches.delete(&id)?))
}

/// `GET /v1/events`
pub async fn events(
    State(app): State<AppState>,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> Json<EventList> {
    Json(
        app.watches
            .events(query.after.unwrap_or(0), query.wait_secs.unwrap_or(0))
            .await,
    )
}
