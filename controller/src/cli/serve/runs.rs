//! The runs `cove serve` owns: each in a task of the server, not of a connection, so
//! closing or reloading a page never stops one. A thread runs one run at a time; its
//! events go to the feed, its inputs (a reply to a takeover, permission decisions, stop)
//! through its controller.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cove_protocol::events::{EventKind, RunEvent};

use super::ServeState;
use super::api::ApiError;
use crate::agent::RunController;
use crate::cli::run::prepare;
use crate::llm::ChatMessage;
use crate::store::Thread;

/// The threads running now, with what answers each (none while its sandbox opens) under
/// the number of the claim that started it.
#[derive(Default)]
pub(super) struct Live {
    runs: Mutex<HashMap<String, (u64, Option<RunController>)>>,
    claims: std::sync::atomic::AtomicU64,
}

impl Live {
    /// The controller of `thread`'s run, if one is running (`Some(None)` while it starts).
    pub(super) fn get(&self, thread: &str) -> Option<Option<RunController>> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(thread)
            .map(|(_, controller)| controller.clone())
    }

    /// Claims `thread` for a new run; none while another run has it.
    fn claim(&self, thread: &str) -> Option<u64> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if runs.contains_key(thread) {
            return None;
        }
        let claim = self
            .claims
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        runs.insert(thread.to_string(), (claim, None));
        Some(claim)
    }

    fn set(&self, thread: &str, claim: u64, controller: RunController) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = runs.get_mut(thread).filter(|(c, _)| *c == claim) {
            entry.1 = Some(controller);
        }
    }

    /// Gives the thread up, if `claim` still holds it (a later run may have it already).
    fn release(&self, thread: &str, claim: u64) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if runs.get(thread).is_some_and(|(c, _)| *c == claim) {
            runs.remove(thread);
        }
    }

    /// Every running thread's controller (to stop them when the server stops).
    pub(super) fn all(&self) -> Vec<RunController> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter_map(|(_, controller)| controller.clone())
            .collect()
    }

    /// How many threads run now.
    pub(super) fn count(&self) -> usize {
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Starts `thread`'s next run with `input` in a task of the server; refused while it runs.
pub(super) fn launch(
    state: &Arc<ServeState>,
    thread: Thread,
    input: Option<ChatMessage>,
    plan_first: bool,
) -> Result<(), ApiError> {
    let Some(claim) = state.live.claim(&thread.id) else {
        return Err(ApiError::conflict(
            "running",
            format!(
                "thread {} is running; stop it first, or answer what it asks",
                thread.id
            ),
        ));
    };
    let state = state.clone();
    tokio::spawn(async move {
        let id = thread.id.clone();
        run(&state, thread, input, plan_first, claim).await;
        state.live.release(&id, claim);
    });
    Ok(())
}

async fn run(
    state: &Arc<ServeState>,
    thread: Thread,
    input: Option<ChatMessage>,
    plan_first: bool,
    claim: u64,
) {
    let inv = &state.inv;
    let prepared = match prepare(
        inv,
        &thread,
        input.is_some(),
        &state.sandbox,
        &state.flags,
        plan_first,
    )
    .await
    {
        Ok(prepared) => prepared,
        Err(e) => {
            failed_to_start(state, &thread, e.to_string());
            return;
        }
    };
    let mut handle = match prepared.agent.start(&thread, input) {
        Ok(handle) => handle,
        Err(e) => {
            failed_to_start(state, &thread, e.to_string());
            prepared.close().await;
            return;
        }
    };
    state.live.set(&thread.id, claim, handle.controller());
    while let Some(event) = handle.next_event().await {
        if matches!(event.kind, EventKind::ThreadRunEnd { .. }) {
            // Whoever sees the run's end may start the next: the thread is free first (its
            // sandbox closes behind).
            state.live.release(&thread.id, claim);
        }
        if let Err(e) = state.feeds.publish(&inv.store, event) {
            tracing::error!(error = %e, thread = %thread.id, "cannot store an event");
        }
    }
    if let Err(e) = handle.outcome().await {
        tracing::warn!(error = %e, thread = %thread.id, "the run failed");
    }
    prepared.close().await;
}

/// A run that could not start (no sandbox, no model key) is an `error` event of the thread,
/// so the page shows why.
fn failed_to_start(state: &ServeState, thread: &Thread, message: String) {
    let event = RunEvent {
        seq: 0,
        thread_id: thread.id.clone(),
        run_id: String::new(),
        timestamp_ms: u64::try_from(crate::store::now_ms()).unwrap_or(0),
        kind: EventKind::Error {
            message: format!("the run could not start: {message}"),
            fatal: true,
        },
    };
    if let Err(e) = state.feeds.publish(&state.inv.store, event) {
        tracing::error!(error = %e, "cannot store an event");
    }
}
