//! `GET /metrics`: the Prometheus text format.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use cove_protocol::metrics::{CONTENT_TYPE as TEXT_FORMAT, Exposition, resident_bytes};

use super::{LATENCY, REQUESTS};
use crate::AppState;

/// `GET /metrics`
pub async fn metrics(State(app): State<AppState>) -> Response {
    let recorded = &app.metrics.recorded;
    let sessions = app.shell.list().sessions;
    let running = sessions.iter().filter(|s| s.running).count();
    let mut page = Exposition::default();
    page.counter(
        REQUESTS,
        "API requests answered, by method, route (its path template) and status.",
        &["method", "route", "status"],
        &recorded.counter(REQUESTS),
    );
    page.histogram(
        LATENCY,
        "Time from a request to its answer's head, by method and route (shell commands and browser actions are their routes).",
        &["method", "route"],
        &recorded.histogram(LATENCY),
    );
    page.gauge(
        "coved_requests_in_flight",
        "Requests being answered now (the liveness, identity and idle checks aside).",
        &[],
        &[(vec![], app.activity.in_flight() as f64)],
    );
    page.gauge(
        "coved_shell_sessions",
        "Shell sessions open.",
        &[],
        &[(vec![], sessions.len() as f64)],
    );
    page.gauge(
        "coved_shell_commands_running",
        "Shell sessions running a command now.",
        &[],
        &[(vec![], running as f64)],
    );
    page.gauge(
        "coved_takeover_active",
        "1 while a person has the browser.",
        &[],
        &[(vec![], if app.takeover.is_active() { 1.0 } else { 0.0 })],
    );
    page.counter(
        "coved_telemetry_spans_total",
        "Spans of the daemon's OpenTelemetry traces by what became of them: exported, failed (the collector refused them or was not reached), dropped (the queue was full).",
        &["outcome"],
        &cove_telemetry::counts::samples(),
    );
    if let Some(bytes) = resident_bytes() {
        page.gauge(
            "coved_resident_memory_bytes",
            "The daemon's resident memory (its browser and shells are processes of their own).",
            &[],
            &[(vec![], bytes)],
        );
    }
    ([(CONTENT_TYPE, TEXT_FORMAT)], page.finish()).into_response()
}
