//! `GET /metrics` of `cove serve`, in the Prometheus text format: runs by state, model calls
//! with their tokens and cost by model, tool calls by tool and outcome, and the threads
//! waiting, summed from the store (so they agree with the stored runs across restarts); the
//! latencies of tool calls and model answers as histograms and the open event streams,
//! counted by this server since it started.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use cove_protocol::events::{EventKind, RunEvent};
use cove_protocol::metrics::{CONTENT_TYPE as TEXT_FORMAT, Exposition, Recorded, resident_bytes};

use super::ServeState;
use super::error::ApiError;

const TOOL_LATENCY: &str = "cove_tool_call_duration_seconds";
const MODEL_LATENCY: &str = "cove_model_answer_duration_seconds";

/// What this server counts as events pass (the rest is summed from the store).
#[derive(Debug, Default)]
pub(super) struct ServeMetrics {
    recorded: Recorded,
    /// Calls under way: (run, call) → (started, milliseconds since the epoch; tool).
    calls: Mutex<HashMap<(String, String), (u64, String)>>,
    /// Answers under way: run → started.
    answers: Mutex<HashMap<String, u64>>,
    /// Event streams open now.
    streams: Arc<AtomicUsize>,
}

/// Counts an event stream while it is open.
pub(super) struct OpenStream(Arc<AtomicUsize>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ServeMetrics {
    /// An event stream opens; it counts until the guard is dropped.
    pub(super) fn stream_opened(&self) -> OpenStream {
        self.streams.fetch_add(1, Ordering::AcqRel);
        OpenStream(self.streams.clone())
    }

    /// Times tool calls and model answers from the events that start and end them.
    pub(super) fn saw(&self, event: &RunEvent) {
        let at = event.timestamp_ms;
        let run = &event.run_id;
        let took = |since: u64| Duration::from_millis(at.saturating_sub(since));
        match &event.kind {
            EventKind::ToolStarted { call_id, tool, .. } => {
                lock(&self.calls).insert((run.clone(), call_id.clone()), (at, tool.clone()));
            }
            EventKind::ToolCompleted { call_id, .. } | EventKind::ToolFailed { call_id, .. } => {
                let started = lock(&self.calls).remove(&(run.clone(), call_id.clone()));
                if let Some((since, tool)) = started {
                    self.recorded.observe(TOOL_LATENCY, vec![tool], took(since));
                }
            }
            EventKind::AssistantResponseStart { .. } => {
                lock(&self.answers).insert(run.clone(), at);
            }
            EventKind::Finish { .. } => {
                if let Some(since) = lock(&self.answers).remove(run) {
                    self.recorded.observe(MODEL_LATENCY, vec![], took(since));
                }
            }
            EventKind::ThreadRunEnd { .. } => {
                lock(&self.answers).remove(run);
                lock(&self.calls).retain(|(r, _), _| r != run);
            }
            _ => {}
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `GET /metrics`
pub(super) async fn metrics(State(state): State<Arc<ServeState>>) -> Result<Response, ApiError> {
    let store = state.store.clone();
    let figures = tokio::task::spawn_blocking(move || store.figures())
        .await
        .map_err(|e| {
            ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("cannot sum the store: {e}"),
            )
        })??;
    let counted = &state.feeds.metrics;
    let mut page = Exposition::default();
    let pairs = |rows: &[(String, u64)]| -> Vec<(Vec<String>, f64)> {
        rows.iter()
            .map(|(k, n)| (vec![k.clone()], *n as f64))
            .collect()
    };
    page.gauge(
        "cove_runs",
        "Runs by state (running, paused, completed, stopped, failed).",
        &["state"],
        &pairs(&figures.runs),
    );
    page.gauge(
        "cove_waits",
        "Threads waiting now, by what for (ask, permission, plan, takeover, events).",
        &["kind"],
        &pairs(&figures.waits),
    );
    let by_model = |f: &dyn Fn(&cove_core::store::ModelFigures) -> f64| -> Vec<(Vec<String>, f64)> {
        figures
            .models
            .iter()
            .map(|m| (vec![m.model.clone()], f(m)))
            .collect()
    };
    page.counter(
        "cove_model_calls_total",
        "Model calls, by model.",
        &["model"],
        &by_model(&|m| m.calls as f64),
    );
    let mut tokens = Vec::new();
    for m in &figures.models {
        for (kind, n) in [
            ("input", m.input_tokens),
            ("cached", m.cached_tokens),
            ("output", m.output_tokens),
        ] {
            tokens.push((vec![m.model.clone(), kind.to_string()], n as f64));
        }
    }
    page.counter(
        "cove_tokens_total",
        "Tokens of model calls, by model and kind (input is the whole prompt; cached is the part of it read from the provider's cache).",
        &["model", "kind"],
        &tokens,
    );
    page.counter(
        "cove_cost_usd_total",
        "What model calls cost in US dollars, by model (calls of unknown price count 0).",
        &["model"],
        &by_model(&|m| m.cost_usd),
    );
    let tools: Vec<(Vec<String>, f64)> = figures
        .tool_calls
        .iter()
        .map(|(tool, outcome, n)| (vec![tool.clone(), outcome.clone()], *n as f64))
        .collect();
    page.counter(
        "cove_tool_calls_total",
        "Tool calls, by tool and outcome (ok, failed).",
        &["tool", "outcome"],
        &tools,
    );
    page.histogram(
        TOOL_LATENCY,
        "How long tool calls took, by tool (runs of this server since it started).",
        &["tool"],
        &counted.recorded.histogram(TOOL_LATENCY),
    );
    page.histogram(
        MODEL_LATENCY,
        "How long model answers took to stream whole, tool calls included (runs of this server since it started).",
        &[],
        &counted.recorded.histogram(MODEL_LATENCY),
    );
    page.gauge(
        "cove_event_streams",
        "Event streams (GET /v1/threads/{id}/events) open now.",
        &[],
        &[(vec![], counted.streams.load(Ordering::Acquire) as f64)],
    );
    page.counter(
        "cove_telemetry_spans_total",
        "Spans of the server's OpenTelemetry traces by what became of them: exported, failed (the collector refused them or was not reached), dropped (the queue was full).",
        &["outcome"],
        &cove_telemetry::counts::samples(),
    );
    if let Some(bytes) = resident_bytes() {
        page.gauge(
            "cove_resident_memory_bytes",
            "The server's resident memory.",
            &[],
            &[(vec![], bytes)],
        );
    }
    Ok(([(CONTENT_TYPE, TEXT_FORMAT)], page.finish()).into_response())
}
