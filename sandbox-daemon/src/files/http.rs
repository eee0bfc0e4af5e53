//! HTTP handlers of the files family. Filesystem work runs on the blocking pool.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use cove_protocol::ErrorCode;
use cove_protocol::files::{
    ContentQuery, CreateRequest, DeleteQuery, DeleteResponse, ListQuery, ListResponse, ReadRequest,
    ReadResponse, RewriteRequest, StrReplaceRequest, StrReplaceResponse, WriteResponse,
};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::io::ReaderStream;

use super::{FileError, Workspace};
use crate::AppState;
use crate::body::{DRAIN_LIMIT, discard_rest};
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery};

async fn blocking<T: Send + 'static>(
    workspace: &Arc<Workspace>,
    op: impl FnOnce(&Workspace) -> Result<T, FileError> + Send + 'static,
) -> Result<T, ApiError> {
    let workspace = workspace.clone();
    crate::blocking::blocking(move || op(&workspace))
        .await?
        .map_err(ApiError::from)
}

/// `GET /v1/files/list`
pub async fn list(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<ListResponse>, ApiError> {
    Ok(Json(
        blocking(&app.workspace, move |w| w.list(&q.path, q.depth)).await?,
    ))
}

/// `POST /v1/files/read`
pub async fn read(
    State(app): State<AppState>,
    ApiJson(r): ApiJson<ReadRequest>,
) -> Result<Json<ReadResponse>, ApiError> {
    Ok(Json(
        blocking(&app.workspace, move |w| {
            w.read(&r.path, r.start_line, r.end_line)
        })
        .await?,
    ))
}

/// `POST /v1/files/create`
pub async fn create(
    State(app): State<AppState>,
    ApiJson(r): ApiJson<CreateRequest>,
) -> Result<Json<WriteResponse>, ApiError> {
    let mode = r.mode.map(|m| m.0);
    Ok(Json(
        blocking(&app.workspace, move |w| {
            w.create(&r.path, r.content.as_bytes(), mode)
        })
        .await?,
    ))
}

/// `POST /v1/files/rewrite`
pub async fn rewrite(
    State(app): State<AppState>,
    ApiJson(r): ApiJson<RewriteRequest>,
) -> Result<Json<WriteResponse>, ApiError> {
    Ok(Json(
        blocking(&app.workspace, move |w| {
            w.rewrite(&r.path, r.content.as_bytes())
        })
        .await?,
    ))
}

/// `POST /v1/files/str_replace`
pub async fn str_replace(
    State(app): State<AppState>,
    ApiJson(r): ApiJson<StrReplaceRequest>,
) -> Result<Json<StrReplaceResponse>, ApiError> {
    Ok(Json(
        blocking(&app.workspace, move |w| {
            w.str_replace(&r.path, &r.old_str, &r.new_str)
        })
        .await?,
    ))
}

/// `DELETE /v1/files`
pub async fn delete(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<DeleteQuery>,
) -> Result<Json<DeleteResponse>, ApiError> {
    let path = q.path.clone();
    blocking(&app.workspace, move |w| w.delete(&q.path, q.recursive)).await?;
    Ok(Json(DeleteResponse { path }))
}

/// `GET /v1/files/content`: streams the file.
pub async fn download(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<ContentQuery>,
) -> Result<Response, ApiError> {
    let (file, len) = blocking(&app.workspace, move |w| w.open_for_download(&q.path)).await?;
    let stream = ReaderStream::new(tokio::fs::File::from_std(file));
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    Ok(response)
}

/// `PUT /v1/files/content`: streams the body into a temporary file, then renames it into
/// place, so an interrupted or oversized upload leaves the old file untouched.
pub async fn upload(
    State(app): State<AppState>,
    ApiQuery(q): ApiQuery<ContentQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<WriteResponse>, ApiError> {
    let limit = app.limits.max_upload_bytes;
    let too_large = || ApiError::from(FileError::PayloadTooLarge { limit });
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
    let mut upload = match blocking(&app.workspace, move |w| w.begin_upload(&q.path)).await {
        Ok(upload) => upload,
        Err(e) => {
            discard_rest(&mut stream).await;
            return Err(e);
        }
    };
    let path = upload.path().to_string();
    let file = upload
        .take_file()
        .ok_or_else(|| ApiError::internal("upload has no file"))?;
    let mut file = tokio::fs::File::from_std(file);
    let mut total: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                ErrorCode::InvalidRequest,
                format!("upload interrupted: {e}"),
            )
        })?;
        total += chunk.len() as u64;
        if total > limit {
            discard_rest(&mut stream).await;
            return Err(too_large());
        }
        file.write_all(&chunk)
            .await
            .map_err(|e| ApiError::from(super::workspace::map_io(&path, e)))?;
    }
    file.sync_all()
        .await
        .map_err(|e| ApiError::from(super::workspace::map_io(&path, e)))?;
    drop(file);
    let workspace = app.workspace.clone();
    crate::blocking::blocking(move || workspace.commit(upload)).await??;
    Ok(Json(WriteResponse { path, bytes: total }))
}
