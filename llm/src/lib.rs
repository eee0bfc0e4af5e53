//! Talking to language models: one provider-neutral conversation format, one streaming
//! trait, and implementations for OpenAI-compatible Chat Completions and Anthropic Messages.

pub mod anthropic;
pub mod choice;
pub mod openai;
pub mod price;
pub mod profile;
pub mod retry;
pub mod served;
pub mod sse;

use std::pin::Pin;
use std::time::Duration;

use futures_util::Stream;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use cove_protocol::conversation::{ChatMessage, ContentPart, Role, ToolCall, Usage};

/// A tool the model may call natively.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One call to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub system: String,
    pub messages: Vec<ChatMessage>,
    /// Empty in XML tool mode: the tools are then described in the system prompt.
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    /// How many leading `messages` the next call sends again unchanged (the history); the
    /// rest (the browser state, images, the plan) is for this call only. Prompt-cache
    /// breakpoints go no further than these.
    pub stable_messages: usize,
    /// Keeps a thread's calls together in the provider's prompt cache (OpenAI's
    /// `prompt_cache_key`; sent only where the API takes it).
    pub cache_key: Option<String>,
}

impl ChatRequest {
    /// A one-off call: no message marked for the cache (nothing will repeat it), no key.
    pub fn new(
        model: impl Into<String>,
        system: impl Into<String>,
        messages: Vec<ChatMessage>,
        tools: Vec<ToolSpec>,
        max_tokens: u32,
    ) -> Self {
        ChatRequest {
            model: model.into(),
            system: system.into(),
            stable_messages: 0,
            messages,
            tools,
            max_tokens,
            cache_key: None,
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    Stop,
    Length,
    ToolCalls,
    /// A reason this code does not know (content filters, refusals).
    Other(String),
}

/// One step of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    /// A native tool call begins; its arguments follow as deltas.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallDelta {
        index: usize,
        arguments: String,
    },
    /// The call's arguments are complete.
    ToolCallEnd {
        index: usize,
    },
    Usage(Usage),
    /// The answer is complete. Always the last event of a stream that did not fail.
    Finish(StopReason),
}

/// A streamed answer.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// What went wrong talking to a model, by what the caller should do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// Set the variable; nothing else helps.
    #[error("no API key for {provider}: set {variable}")]
    MissingApiKey {
        provider: &'static str,
        variable: &'static str,
    },
    /// Check the key.
    #[error("{provider} refused the API key (HTTP {status}): {message}")]
    Unauthorized {
        provider: &'static str,
        status: u16,
        message: String,
    },
    /// Check the model name.
    #[error("{provider} has no model {model:?}: {message}")]
    ModelNotFound {
        provider: &'static str,
        model: String,
        message: String,
    },
    /// Retry when `retryable`, else fix the request.
    #[error("{provider} answered HTTP {status}: {message}")]
    Status {
        provider: &'static str,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The connection failed or dropped: retry.
    #[error("cannot reach {provider}: {message}")]
    Transport {
        provider: &'static str,
        message: String,
    },
    /// The answer stopped before its end: retry.
    #[error("{provider}'s answer was cut off before its end")]
    StreamCut { provider: &'static str },
    /// The provider reported an error inside the stream.
    #[error("{provider} reported an error mid-answer: {message}")]
    Provider {
        provider: &'static str,
        message: String,
        retryable: bool,
    },
    /// The prompt is longer than the model takes: send less (the run compresses harder).
    #[error("{provider} says the prompt is too long for the model: {message}")]
    ContextTooLong {
        provider: &'static str,
        message: String,
    },
    /// The server's address (from `variable`) is wrong: the message says what to write.
    #[error("{variable}={url} does not work: {why}")]
    BadBaseUrl {
        variable: &'static str,
        url: String,
        why: String,
    },
    /// The provider sent something this code cannot read.
    #[error("unreadable answer from {provider}: {message}")]
    Malformed {
        provider: &'static str,
        message: String,
    },
}

impl LlmError {
    /// Whether trying again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => {
                matches!(status, 408 | 409 | 425 | 429 | 500..=599)
            }
            LlmError::Transport { .. } | LlmError::StreamCut { .. } => true,
            LlmError::Provider { retryable, .. } => *retryable,
            _ => false,
        }
    }

    /// How long the provider asked to wait before retrying.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Whether an HTTP error says the prompt exceeded the model's window (each provider and
/// server words it differently).
pub fn is_context_overflow(status: u16, message: &str) -> bool {
    if status == 413 {
        return true;
    }
    let m = message.to_ascii_lowercase();
    status == 400
        && [
            "context_length_exceeded",
            "context length",
            "context window",
            "prompt is too long",
            "maximum context",
            "too many tokens",
            "input is too long",
            "reduce the length",
            "available context size",
            "exceed_context_size",
        ]
        .iter()
        .any(|needle| m.contains(needle))
}

/// The error of a refused call, by what its HTTP status and message say.
pub(crate) fn http_error(
    provider: &'static str,
    status: u16,
    model: &str,
    message: String,
    retry_after: Option<Duration>,
) -> LlmError {
    match status {
        401 | 403 => LlmError::Unauthorized {
            provider,
            status,
            message,
        },
        404 => LlmError::ModelNotFound {
            provider,
            model: model.to_string(),
            message,
        },
        code if is_context_overflow(code, &message) => LlmError::ContextTooLong {
            provider,
            message: format!("HTTP {code}: {message}"),
        },
        code => LlmError::Status {
            provider,
            status: code,
            message,
            retry_after,
        },
    }
}

/// A model provider that streams answers.
pub trait ChatProvider: Send + Sync {
    /// The provider's name, for messages.
    fn name(&self) -> &'static str;

    /// Starts a streamed answer.
    fn stream<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<EventStream, LlmError>>;
}

/// Reads a `retry-after` header: seconds, or an HTTP date.
pub fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Some(Duration::from_secs_f64(secs.max(0.0)));
    }
    let when = humantime::parse_rfc3339_weak(value)
        .ok()
        .or_else(|| httpdate(value))?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// Parses an IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`).
fn httpdate(value: &str) -> Option<std::time::SystemTime> {
    let mut parts = value.split_whitespace().skip(1);
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u64 = parts.next()?.parse().ok()?;
    let time = parts.next()?;
    let stamp = format!("{year:04}-{month:02}-{day:02}T{time}Z");
    humantime::parse_rfc3339(&stamp).ok()
}

/// Reads a provider's error body (`{"error": {"message": ...}}` or plain text).
fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let mut text = message.unwrap_or_else(|| body.trim().to_string());
    // llama.cpp states its window beside the message, not in it.
    if let Some(n_ctx) = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/n_ctx").or_else(|| v.get("n_ctx")))
        .and_then(serde_json::Value::as_u64)
    {
        text = format!("{text} (n_ctx: {n_ctx})");
    }
    let mut end = text.len().min(500);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// A request that got no answer, said shortly: the deepest cause and the server's origin
/// (reqwest's own text repeats the whole URL and every layer).
pub(crate) fn transport_error(provider: &'static str, error: &reqwest::Error) -> LlmError {
    let mut root: &dyn std::error::Error = error;
    while let Some(cause) = root.source() {
        root = cause;
    }
    let origin = error
        .url()
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default();
    let message = if error.is_timeout() {
        format!("no answer from {origin} in time")
    } else if origin.is_empty() {
        root.to_string()
    } else {
        format!("{root} at {origin}")
    };
    LlmError::Transport { provider, message }
}

/// An error with its causes ("error sending request: dns error: failed to lookup ..."): the
/// top-level message of an HTTP error rarely says what went wrong.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_overflows_are_told_apart_from_other_bad_requests() {
        assert!(is_context_overflow(
            400,
            "prompt is too long: 205668 tokens > 200000 maximum"
        ));
        assert!(is_context_overflow(
            400,
            "This model's maximum context length is 128000 tokens (context_length_exceeded)"
        ));
        assert!(is_context_overflow(413, "request_too_large"));
        assert!(!is_context_overflow(400, "messages: field required"));
        assert!(!is_context_overflow(500, "prompt is too long"));
    }
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(
            parse_retry_after(&h),
            Some(Duration::ZERO),
            "a past date means now"
        );
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(parse_retry_after(&h), None);
    }

    #[test]
    fn error_bodies_are_read_whatever_their_shape() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(r#"{"error":"model missing"}"#),
            "model missing"
        );
        assert_eq!(error_message("  plain  "), "plain");
    }

    #[test]
    fn only_transient_failures_are_retried() {
        let status = |status| LlmError::Status {
            provider: "p",
            status,
            message: String::new(),
            retry_after: None,
        };
        assert!(status(429).is_retryable());
        assert!(status(503).is_retryable());
        assert!(!status(400).is_retryable());
        assert!(LlmError::StreamCut { provider: "p" }.is_retryable());
        assert!(
            !LlmError::MissingApiKey {
                provider: "p",
                variable: "X"
            }
            .is_retryable()
        );
    }
}
