//! How long the sandbox has been idle, for an operator's idle pause (`GET /v1/idle`): since
//! the last request ended (its answer sent whole: a download, a long poll and a streamed
//! preview count until their last byte), with none in flight, no command running in a
//! shell session and no one in the takeover view. Every request counts as use but the
//! liveness and identity checks (`/health`, `/v1/info`), the metrics (`/metrics`) and the
//! idle question itself, so looking at a sandbox never keeps it awake. A preview's WebSocket counts while it opens,
//! not while it stays open.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::Json;
use axum::body::{Body, Bytes, HttpBody};
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

    /// Requests being answered now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Acquire)
    }

    fn ended(&self) {
        self.last_ms.store(self.now_ms(), Ordering::Release);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Ends a request's count however its answer ends: sent whole, or its client gone.
struct InFlight(AppState);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.activity.ended();
    }
}

/// An answer's body, counted in flight until it is sent whole.
struct Counted {
    body: Body,
    _in_flight: InFlight,
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Counts every request as use, until its answer is sent whole, but `/health`, `/v1/info`,
/// `/metrics` and `/v1/idle`.
pub async fn track(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if matches!(path, "/health" | "/v1/info" | "/v1/idle" | "/metrics") {
        return next.run(request).await;
    }
    app.activity.in_flight.fetch_add(1, Ordering::AcqRel);
    let in_flight = InFlight(app.clone());
    let (parts, body) = next.run(request).await.into_parts();
    Response::from_parts(
        parts,
        Body::new(Counted {
            body,
            _in_flight: in_flight,
        }),
    )
}

/// `GET /v1/idle`
pub async fn idle(State(app): State<AppState>) -> Json<IdleResponse> {
    let activity = &app.activity;
    let mut busy = Vec::new();
    match activity.in_flight.load(Ordering::Acquire) {
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
        .saturating_sub(activity.last_ms.load(Ordering::Acquire));
    Json(IdleResponse {
        idle_secs: if busy.is_empty() {
            since as f64 / 1000.0
        } else {
            0.0
        },
        busy,
    })
}
