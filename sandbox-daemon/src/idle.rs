//! How long the sandbox has been idle, for an operator's idle pause (`GET /v1/idle`): since
//! the last request ended, with none in flight (a long poll is one), no command running in
//! a shell session and no one in the takeover view. Every request counts as use but the
//! liveness check and the idle question itself, so asking never keeps a sandbox awake.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use cove_protocol::info::IdleResponse;

use crate::AppState;

/// The daemon's use, as its requests tell it.
#[derive(Debug)]
pub struct Activity {
    start: Instant,
    in_flight: AtomicU64,
    /// Milliseconds from `start` to the end of the last request.
    last_ms: AtomicU64,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            start: Instant::now(),
            in_flight: AtomicU64::new(0),
            last_ms: AtomicU64::new(0),
        }
    }
}

impl Activity {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn ended(&self) {
        self.last_ms.store(self.now_ms(), Ordering::Relaxed);
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Ends a request's count however its handling ends (a client gone mid-request included).
struct InFlight<'a>(&'a Activity);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.ended();
    }
}

/// Counts every request as use, but `/health` and `/v1/idle`.
pub async fn track(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path == "/health" || path == "/v1/idle" {
        return next.run(request).await;
    }
    let activity = &app.activity;
    activity.in_flight.fetch_add(1, Ordering::Relaxed);
    let _counted = InFlight(activity);
    next.run(request).await
}

/// `GET /v1/idle`
pub async fn idle(State(app): State<AppState>) -> Json<IdleResponse> {
    let activity = &app.activity;
    let mut busy = Vec::new();
    match activity.in_flight.load(Ordering::Relaxed) {
        0 => {}
        1 => busy.push("a request in flight".to_string()),
        n => busy.push(format!("{n} requests in flight")),
    }
    for session in app.shell.list().sessions {
        if session.running {
            busy.push(format!(
                "session {} runs `{}`",
                session.name,
                session.command.unwrap_or_default()
            ));
        }
    }
    busy.extend(app.forks.running_commands());
    if app.takeover.is_active() {
        busy.push("a person has the browser (takeover)".to_string());
    }
    let since = activity
        .now_ms()
        .saturating_sub(activity.last_ms.load(Ordering::Relaxed));
    Json(IdleResponse {
        idle_secs: if busy.is_empty() {
            since as f64 / 1000.0
        } else {
            0.0
        },
        busy,
    })
}
