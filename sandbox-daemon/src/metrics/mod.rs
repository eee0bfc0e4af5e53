//! What the daemon has done, for Prometheus (`GET /metrics`): every API route's requests by
//! answer and their latency, requests in flight, shell sessions and running commands, the
//! takeover, and the daemon's memory. Counted in memory since the daemon started.

pub mod http;

use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use cove_protocol::metrics::Recorded;

use crate::AppState;

/// Requests, by method, route and status.
const REQUESTS: &str = "coved_requests_total";
/// Time to the answer's head, by method and route.
const LATENCY: &str = "coved_request_duration_seconds";

/// The daemon's counts.
#[derive(Debug, Default)]
pub struct DaemonMetrics {
    recorded: Recorded,
}

/// Counts a request of route `route` (its path template) and how long its answer took.
pub async fn record(
    State((app, method, route)): State<(AppState, &'static str, &'static str)>,
    request: Request,
    next: Next,
) -> Response {
    let began = Instant::now();
    let response = next.run(request).await;
    let recorded = &app.metrics.recorded;
    let status = response.status().as_u16().to_string();
    recorded.add(REQUESTS, vec![method.into(), route.into(), status], 1.0);
    recorded.observe(LATENCY, vec![method.into(), route.into()], began.elapsed());
    response
}
