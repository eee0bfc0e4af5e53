//! The error every handler answers with, rendered as the protocol's error envelope.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cove_protocol::{ErrorCode, ErrorEnvelope};

use crate::files::FileError;
use crate::shell::ShellError;

/// An error answer: a stable code and a message for the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    /// The request is malformed.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    /// The daemon failed; not the caller's fault.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::warn!(code = %self.code, message = %self.message, "request failed");
        }
        (status, Json(ErrorEnvelope::new(self.code, self.message))).into_response()
    }
}

impl From<ShellError> for ApiError {
    fn from(e: ShellError) -> Self {
        let code = match &e {
            ShellError::InvalidName(_) | ShellError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            ShellError::NotFound(_) => ErrorCode::NotFound,
            ShellError::Busy { .. } => ErrorCode::SessionBusy,
            ShellError::NoRunningCommand(_) => ErrorCode::NoRunningCommand,
            ShellError::TooManySessions(_) => ErrorCode::TooManySessions,
            // Only escapes when a fresh shell died before its first command as well.
            ShellError::Unavailable(_) | ShellError::Exited(_) => ErrorCode::ShellUnavailable,
            ShellError::Io(_) => ErrorCode::Internal,
        };
        ApiError::new(code, e.to_string())
    }
}

impl From<FileError> for ApiError {
    fn from(e: FileError) -> Self {
        let code = match &e {
            FileError::OutsideWorkspace { .. } => ErrorCode::PathOutsideWorkspace,
            FileError::InvalidPath { .. } => ErrorCode::InvalidPath,
            FileError::NotFound(_) => ErrorCode::NotFound,
            FileError::AlreadyExists(_) => ErrorCode::AlreadyExists,
            FileError::IsDirectory(_) => ErrorCode::IsDirectory,
            FileError::NotDirectory(_) => ErrorCode::NotDirectory,
            FileError::DirectoryNotEmpty(_) => ErrorCode::DirectoryNotEmpty,
            FileError::PermissionDenied(_) => ErrorCode::PermissionDenied,
            FileError::NotText { .. } => ErrorCode::NotText,
            FileError::TooLarge { .. } => ErrorCode::FileTooLarge,
            FileError::PayloadTooLarge { .. } => ErrorCode::PayloadTooLarge,
            FileError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            FileError::NoMatch(_) => ErrorCode::NoMatch,
            FileError::MultipleMatches { .. } => ErrorCode::MultipleMatches,
            FileError::Io { .. } => ErrorCode::Internal,
        };
        ApiError::new(code, e.to_string())
    }
}
