//! HTTP handlers of the forks family.

use axum::Json;
use axum::extract::State;
use cove_protocol::checkpoints::CheckpointDiff;
use cove_protocol::forks::{ApplyResponse, CreateFork, ForkInfo, ForkList};

use crate::AppState;
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiPath};

/// `POST /v1/forks`
pub async fn create(
    State(app): State<AppState>,
    ApiJson(request): ApiJson<CreateFork>,
) -> Result<Json<ForkInfo>, ApiError> {
    Ok(Json(app.forks.create(&app.checkpoints, request).await?))
}

/// `GET /v1/forks`
pub async fn list(State(app): State<AppState>) -> Json<ForkList> {
    Json(app.forks.list())
}

/// `GET /v1/forks/{id}/changes`
pub async fn changes(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<CheckpointDiff>, ApiError> {
    Ok(Json(app.forks.changes(&id).await?))
}

/// `POST /v1/forks/{id}/apply`
pub async fn apply(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ApplyResponse>, ApiError> {
    let root = app.workspace.root_path().to_path_buf();
    Ok(Json(app.forks.apply(&id, root).await?))
}

/// `DELETE /v1/forks/{id}`
pub async fn delete(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ForkInfo>, ApiError> {
    Ok(Json(app.forks.delete(&id).await?))
}
