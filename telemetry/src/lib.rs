//! OpenTelemetry for Cove.
//!
//! Spans are ordinary `tracing` spans with the target [`TARGET`]; when tracing is configured
//! (the standard `OTEL_*` environment, or `[telemetry]` in cove.toml) the `export` feature's
//! [`export::install`] sends them over OTLP, and nothing else. When it is not, those spans are
//! disabled at their call sites and cost a branch. The trace context leaves a process as a
//! W3C `traceparent` ([`traceparent`]) and, in coved, enters one ([`export::parent_from`]).

pub mod counts;
mod daemons;
#[cfg(feature = "export")]
pub mod export;
mod past;
mod settings;

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub use daemons::{collector_loopback_port, daemon_env};
pub use past::record_past_span;
pub use settings::{Protocol, Settings, SettingsError, TelemetryFile};

/// The target of every span Cove exports: the exporter's layer takes these and no other, so
/// logs stay logs and a span never depends on the log level.
pub const TARGET: &str = "cove::otel";

/// The variables that hold a collector's key (its headers): a daemon keeps them from the
/// processes it starts.
pub const SECRET_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
];

/// Prompt and completion text go into model-call spans only when this is set
/// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` or `capture_content`).
static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether model-call spans carry the messages' text.
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

#[cfg(feature = "export")]
fn set_capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// The span `make` makes when the current one is exported (a traced request's), and none
/// otherwise: work no caller traced starts no trace of its own.
pub fn in_trace(make: impl FnOnce() -> tracing::Span) -> tracing::Span {
    if tracing::Span::current().is_disabled() {
        tracing::Span::none()
    } else {
        make()
    }
}

/// The current span's trace context as a W3C `traceparent` header value; none when no span
/// is being exported.
pub fn traceparent() -> Option<String> {
    traceparent_of(&tracing::Span::current())
}

/// `span`'s trace context as a W3C `traceparent` header value; none when it is not exported.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let otel = context.span();
    let ids = otel.span_context();
    ids.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            ids.trace_id(),
            ids.span_id(),
            ids.trace_flags().to_u8()
        )
    })
}

/// Sets attribute `key` of `span` (when it is exported) to `value`: for what a `tracing`
/// field cannot hold, or is too costly to build when no one reads it.
pub fn set_attribute(
    span: &tracing::Span,
    key: &'static str,
    value: impl Into<opentelemetry::Value>,
) {
    if !span.is_disabled() {
        span.set_attribute(key, value);
    }
}

/// Sets attribute `key` of `span` to an array of strings.
pub fn set_strings(span: &tracing::Span, key: &'static str, values: Vec<String>) {
    let values = values
        .into_iter()
        .map(opentelemetry::StringValue::from)
        .collect();
    set_attribute(
        span,
        key,
        opentelemetry::Value::Array(opentelemetry::Array::String(values)),
    );
}

/// Whether `value` is a well-formed version-00 `traceparent` (what may go into a command's
/// environment).
pub fn is_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    parts.len() == 4
        && parts[0] == "00"
        && hex(parts[1], 32)
        && hex(parts[2], 16)
        && hex(parts[3], 2)
        && parts[1].bytes().any(|b| b != b'0')
        && parts[2].bytes().any(|b| b != b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_checked() {
        assert!(is_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01; rm -rf /",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            assert!(!is_traceparent(bad), "{bad}");
        }
    }

    #[test]
    fn no_span_no_traceparent() {
        assert_eq!(traceparent(), None);
    }
}
