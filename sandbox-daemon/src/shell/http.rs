//! HTTP handlers of the shell family.

use axum::Json;
use axum::extract::State;
use cove_protocol::shell::{
    DeleteSessionResponse, ExecRequest, ExecResponse, InputRequest, InputResponse, OutputQuery,
    OutputResponse, SessionList, Signal, SignalRequest, SignalResponse,
};
use rustix::process::Signal as OsSignal;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiPath, ApiQuery};

/// `POST /v1/shell/exec`
pub async fn exec(
    State(app): State<AppState>,
    headers: axum::http::HeaderMap,
    ApiJson(request): ApiJson<ExecRequest>,
) -> Result<Json<ExecResponse>, ApiError> {
    let traceparent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .filter(|v| cove_telemetry::is_traceparent(v));
    Ok(Json(app.shell.exec(&request, traceparent).await?))
}

/// `GET /v1/shell/sessions`
pub async fn sessions(State(app): State<AppState>) -> Json<SessionList> {
    Json(app.shell.list())
}

/// `GET /v1/shell/sessions/{name}/output`
pub async fn output(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<OutputQuery>,
) -> Result<Json<OutputResponse>, ApiError> {
    Ok(Json(app.shell.output(&name, query.since.unwrap_or(0))?))
}

/// `GET /v1/shell/sessions/{name}/recording`
pub async fn recording(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let cast = app.shell.recording(&name)?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/x-asciicast")],
        cast,
    )
        .into_response())
}

/// `POST /v1/shell/sessions/{name}/input`
pub async fn input(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<InputRequest>,
) -> Result<Json<InputResponse>, ApiError> {
    let bytes_written = app.shell.input(&name, request.text, request.enter).await?;
    Ok(Json(InputResponse {
        session: name,
        bytes_written,
    }))
}

/// `POST /v1/shell/sessions/{name}/signal`
pub async fn signal(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<SignalRequest>,
) -> Result<Json<SignalResponse>, ApiError> {
    let os_signal = match request.signal {
        Signal::Int => OsSignal::INT,
        Signal::Term => OsSignal::TERM,
        Signal::Kill => OsSignal::KILL,
    };
    let process_group = app.shell.signal(&name, os_signal).await?;
    Ok(Json(SignalResponse {
        session: name,
        signal: request.signal,
        process_group,
    }))
}

/// `DELETE /v1/shell/sessions/{name}`
pub async fn delete(
    State(app): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<DeleteSessionResponse>, ApiError> {
    Ok(Json(app.shell.delete(&name).await?))
}
