//! Spans of what happened between runs (a question answered, a plan approved, a permission
//! given while no run was live), recorded afterwards with their real start and end.

use std::borrow::Cow;
use std::time::SystemTime;

use opentelemetry::KeyValue;
use opentelemetry::trace::{Span as _, TraceContextExt, Tracer as _};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Records a finished span `name` under `parent`, from `start` to `end`. Nothing happens when
/// `parent` is not exported.
pub fn record_past_span(
    parent: &tracing::Span,
    name: impl Into<Cow<'static, str>>,
    start: SystemTime,
    end: SystemTime,
    attributes: Vec<KeyValue>,
) {
    if parent.is_disabled() {
        return;
    }
    let context = parent.context();
    if !context.span().span_context().is_valid() {
        return;
    }
    let tracer = opentelemetry::global::tracer("cove");
    let mut span = tracer
        .span_builder(name)
        .with_start_time(start)
        .with_attributes(attributes)
        .start_with_context(&tracer, &context);
    span.end_with_timestamp(end.max(start));
}
