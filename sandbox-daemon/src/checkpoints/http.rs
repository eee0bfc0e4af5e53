//! HTTP handlers of the checkpoints family. The store's work runs on the blocking pool; an
//! archive streams out as it is written, and an import is spooled beside the store first.

use std::io::{Seek, SeekFrom};

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use cove_protocol::ErrorCode;
use cove_protocol::checkpoints::{
    CheckpointCreated, CheckpointDiff, CheckpointList, CreateCheckpoint, DiffQuery, ImportQuery,
    RestoreRequest, RestoreResponse,
};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::io::{ReaderStream, SyncIoBridge};

use super::CheckpointError;
use crate::AppState;
use crate::body::{DRAIN_LIMIT, discard_rest};
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiPath, ApiQuery};

impl From<CheckpointError> for ApiError {
    fn from(e: CheckpointError) -> Self {
        let code = match &e {
            CheckpointError::NotFound(_) => ErrorCode::NotFound,
            CheckpointError::BadId(_) | CheckpointError::BadIgnore(_) => ErrorCode::InvalidRequest,
            CheckpointError::Busy(_) => ErrorCode::Busy,
            CheckpointError::InvalidArchive(_) => ErrorCode::InvalidArchive,
            CheckpointError::Unreadable { .. } => ErrorCode::PermissionDenied,
            CheckpointError::ArchiveWrite(_)
            | CheckpointError::Restore { .. }
            | CheckpointError::Workspace { .. }
            | CheckpointError::Store { .. }
            | CheckpointError::InUse(_)
            | CheckpointError::Damaged(_)
            | CheckpointError::StoreInWorkspace(_)
            | CheckpointError::Task(_) => ErrorCode::Internal,
        };
        ApiError::new(code, e.to_string())
    }
}

/// `POST /v1/checkpoints`
pub async fn create(
    State(app): State<AppState>,
    ApiJson(request): ApiJson<CreateCheckpoint>,
) -> Result<Json<CheckpointCreated>, ApiError> {
    Ok(Json(
        app.checkpoints.create(request.label, request.keep).await?,
    ))
}

/// `GET /v1/checkpoints`
pub async fn list(State(app): State<AppState>) -> Result<Json<CheckpointList>, ApiError> {
    Ok(Json(app.checkpoints.list().await?))
}

/// `GET /v1/checkpoints/{id}/diff`
pub async fn diff(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<DiffQuery>,
) -> Result<Json<CheckpointDiff>, ApiError> {
    Ok(Json(app.checkpoints.diff(id, query.to).await?))
}

/// `POST /v1/checkpoints/{id}/restore`
pub async fn restore(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<RestoreRequest>,
) -> Result<Json<RestoreResponse>, ApiError> {
    let running: Vec<String> = app
        .shell
        .list()
        .sessions
        .into_iter()
        .filter(|s| s.running)
        .map(|s| s.name)
        .collect();
    if !running.is_empty() {
        if !request.stop_commands {
            return Err(CheckpointError::Busy(running).into());
        }
        for name in &running {
            // Gone meanwhile is as good as stopped.
            let _ = app.shell.delete(name).await;
        }
    }
    Ok(Json(app.checkpoints.restore(id, running).await?))
}

/// `GET /v1/checkpoints/{id}/archive`
pub async fn archive(
    State(app): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    app.checkpoints.check(id.clone()).await?;
    let (reader, writer) = tokio::io::duplex(256 * 1024);
    let checkpoints = app.checkpoints.clone();
    let name = id.clone();
    tokio::task::spawn_blocking(move || {
        let out = SyncIoBridge::new(writer);
        let written = checkpoints.blocking(|work, store| work.export(store, &name, out));
        if let Err(e) = written {
            // The reader sees the stream end early; a tar cut short does not read whole.
            tracing::warn!(checkpoint = %name, error = %e, "the archive was cut short");
        }
    });
    let mut response = Body::from_stream(ReaderStream::new(reader)).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-tar"));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{id}.tar\"")) {
        headers.insert(CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// `POST /v1/checkpoints/import`
pub async fn import(
    State(app): State<AppState>,
    ApiQuery(query): ApiQuery<ImportQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<CheckpointCreated>, ApiError> {
    let limit = app.limits.max_upload_bytes;
    let too_large = || {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("the archive is over the upload cap of {limit} bytes"),
        )
    };
    let mut stream = body.into_data_stream();
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit) {
        if declared.is_some_and(|len| len <= limit.saturating_add(DRAIN_LIMIT)) {
            discard_rest(&mut stream).await;
        }
        return Err(too_large());
    }
    let spool = app.checkpoints.spool().map_err(ApiError::from)?;
    let mut file = tokio::fs::File::from_std(spool);
    let mut total: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::invalid_request(format!("the archive's upload broke off: {e}"))
        })?;
        total += chunk.len() as u64;
        if total > limit {
            discard_rest(&mut stream).await;
            return Err(too_large());
        }
        file.write_all(&chunk)
            .await
            .map_err(|e| ApiError::internal(format!("cannot spool the archive: {e}")))?;
    }
    let mut file = file.into_std().await;
    let checkpoints = app.checkpoints.clone();
    let created = tokio::task::spawn_blocking(move || {
        file.seek(SeekFrom::Start(0))
            .map_err(|e| CheckpointError::InvalidArchive(e.to_string()))?;
        let reader = std::io::BufReader::new(file);
        checkpoints.blocking(|work, store| work.import(store, reader, query.label))
    })
    .await
    .map_err(|e| ApiError::internal(format!("the import's task failed: {e}")))??;
    Ok(Json(created))
}
