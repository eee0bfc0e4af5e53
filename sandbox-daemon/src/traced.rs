//! Requests that carry a trace context (`traceparent`, as cove sends under its tool spans)
//! run in a server span under it, so the daemon's spans join the controller's trace. Without
//! the header, or when coved exports no spans, a request costs no span at all.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Runs a request of `route` (its path template) in a span under the caller's trace.
pub async fn join(
    State((method, route)): State<(&'static str, &'static str)>,
    request: Request,
    next: Next,
) -> Response {
    if !request.headers().contains_key("traceparent") {
        return next.run(request).await;
    }
    let span = tracing::info_span!(
        target: cove_telemetry::TARGET,
        "request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
    );
    if span.is_disabled() {
        return next.run(request).await;
    }
    if let Some(parent) = cove_telemetry::export::parent_from(request.headers()) {
        let _ = span.set_parent(parent);
    }
    let response = next.run(request).instrument(span.clone()).await;
    span.record(
        "http.response.status_code",
        i64::from(response.status().as_u16()),
    );
    response
}
