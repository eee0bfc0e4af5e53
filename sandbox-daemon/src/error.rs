//! The error every handler answers with, rendered as the protocol's error envelope.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cove_protocol::{ErrorCode, ErrorEnvelope};

use crate::browser::BrowserError;
use crate::files::FileError;
use crate::shell::ShellError;

/// An error answer: a stable code, a message for the caller, and data some codes carry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<serde_json::Value>,
}

impl ApiError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            details: None,
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
        let mut envelope = ErrorEnvelope::new(self.code, self.message);
        envelope.error.details = self.details;
        (status, Json(envelope)).into_response()
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
            FileError::NotRegularFile(_) => ErrorCode::NotRegularFile,
            FileError::Conflict(_) => ErrorCode::Conflict,
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

impl From<crate::blocking::BlockingError> for ApiError {
    fn from(e: crate::blocking::BlockingError) -> Self {
        match e {
            crate::blocking::BlockingError::TimedOut => {
                ApiError::new(ErrorCode::Timeout, e.to_string())
            }
            crate::blocking::BlockingError::Failed(_) => ApiError::internal(e.to_string()),
        }
    }
}

impl From<BrowserError> for ApiError {
    fn from(e: BrowserError) -> Self {
        let (error, state) = match e {
            BrowserError::WithState { error, state } => (*error, Some(state)),
            other => (other, None),
        };
        let code = match &error {
            BrowserError::Unavailable(_) => ErrorCode::BrowserUnavailable,
            BrowserError::Timeout(_) => ErrorCode::Timeout,
            BrowserError::NavigationFailed(_) => ErrorCode::NavigationFailed,
            BrowserError::Stale(_) => ErrorCode::StaleElement,
            BrowserError::ElementNotFound(_) => ErrorCode::ElementNotFound,
            BrowserError::NotClickable(_) => ErrorCode::ElementNotClickable,
            BrowserError::WrongElementKind(_) => ErrorCode::WrongElementKind,
            BrowserError::NoMatch(_) => ErrorCode::NoMatch,
            BrowserError::TabNotFound(_) => ErrorCode::NotFound,
            BrowserError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            BrowserError::ContextLost
            | BrowserError::Script(_)
            | BrowserError::Internal(_)
            | BrowserError::WithState { .. } => ErrorCode::Internal,
        };
        let mut api = ApiError::new(code, error.to_string());
        api.details = state.map(|s| serde_json::json!({ "state": s }));
        api
    }
}
