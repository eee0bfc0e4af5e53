//! The errors of `cove serve`'s API, `{"error": {"code", "message"}}` with the message
//! saying what to do, and the extractors that answer a bad request in that envelope.

use std::borrow::Cow;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use cove_core::session::SessionError;
use cove_core::store::{DecideError, PlanError, StoreError};
use cove_sandbox::choice::SandboxesError;

/// An error answer.
#[derive(Debug)]
pub(super) struct ApiError {
    status: StatusCode,
    code: Cow<'static, str>,
    message: String,
}

impl ApiError {
    pub(super) fn new(
        status: StatusCode,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
        }
    }

    pub(super) fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }

    pub(super) fn bad(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": {"code": self.code, "message": self.message}})),
        )
            .into_response()
    }
}

/// A JSON body (an empty one reads as `{}`); one that does not parse is the caller's error,
/// said in this API's envelope.
pub(super) struct ApiJson<T>(pub(super) T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|e| ApiError::bad(e.body_text()))?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        serde_json::from_slice(text)
            .map(ApiJson)
            .map_err(|e| ApiError::bad(format!("the JSON body does not fit: {e}")))
    }
}

/// A query string, likewise.
pub(super) struct ApiQuery<T>(pub(super) T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        Query::<T>::try_from_uri(&parts.uri)
            .map(|q| ApiQuery(q.0))
            .map_err(|e| ApiError::bad(e.body_text()))
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NoThread(id) => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no thread {id:?}; GET /v1/threads lists them"),
            ),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                other.to_string(),
            ),
        }
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::Invalid(m) => ApiError::bad(in_api_words(&m)),
            SessionError::NotFound(m) => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", in_api_words(&m))
            }
            SessionError::Setup(m) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "setup", in_api_words(&m))
            }
            SessionError::Busy(m) => ApiError::conflict("busy", in_api_words(&m)),
            SessionError::SubAgent(m) => ApiError::conflict("sub_agent", in_api_words(&m)),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "failed",
                in_api_words(&other.to_string()),
            ),
        }
    }
}

impl From<SandboxesError> for ApiError {
    fn from(e: SandboxesError) -> Self {
        match e {
            SandboxesError::Invalid(m) => ApiError::bad(in_api_words(&m)),
            SandboxesError::NotFound(m) => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", in_api_words(&m))
            }
            SandboxesError::Store(e) => e.into(),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "failed",
                in_api_words(&other.to_string()),
            ),
        }
    }
}

/// A message the command line words with its flags (`--sandbox must be …`), with the
/// fields of this API instead: a client of the server never typed a flag.
fn in_api_words(message: &str) -> String {
    const FIELDS: [(&str, &str); 6] = [
        ("--sandbox-token", "the server's sandbox token"),
        ("--stop-commands", "stop_commands"),
        ("--sandbox", "sandbox"),
        ("--tool-calls", "tool_calls"),
        ("--model", "model"),
        ("--max-cost", "max_cost"),
    ];
    let mut out = message.to_string();
    for (flag, field) in FIELDS {
        out = out.replace(flag, field);
    }
    out
}

impl From<PlanError> for ApiError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Store(s) => s.into(),
            PlanError::Malformed(m) => ApiError::bad(m),
            other => ApiError::conflict("no_plan_waiting", other.to_string()),
        }
    }
}

impl From<DecideError> for ApiError {
    fn from(e: DecideError) -> Self {
        match e {
            e @ DecideError::NoRequest { .. } => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
            }
            e @ DecideError::AlreadyDecided { .. } => {
                ApiError::conflict("already_answered", e.to_string())
            }
            e @ DecideError::NotOffered { .. } => ApiError::bad(e.to_string()),
            DecideError::Store(s) => s.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn command_line_flags_are_said_as_the_apis_fields() {
        assert_eq!(
            super::in_api_words(
                "--sandbox must be `local`, not \"x\"; --tool-calls must be native"
            ),
            "sandbox must be `local`, not \"x\"; tool_calls must be native"
        );
    }
}
