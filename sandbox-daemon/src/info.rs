//! Health, identity and the OpenAPI document.

use axum::Json;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use cove_protocol::info::{HealthResponse, InfoResponse};

use crate::AppState;

/// `GET /health`
pub async fn health() -> Json<HealthResponse> {
    Json(HealthResponse {
        status: "ok".to_string(),
    })
}

/// `GET /v1/info`
pub async fn info(State(app): State<AppState>) -> Json<InfoResponse> {
    Json(app.info.clone())
}

/// `GET /v1/openapi.json`
pub async fn openapi(State(app): State<AppState>) -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], app.openapi.clone())
}
