//! The runs `cove serve` owns: each in a task of the server, not of a connection, so
//! closing or reloading a page never stops one. A thread runs one run at a time; its
//! events go to the feed (the browser's picture after each browser call kept beside them),
//! its inputs (a reply to a takeover, permission decisions, stop) through its controller.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cove_protocol::client::CovedClient;
use cove_protocol::events::{EventKind, RunEvent};

use super::ServeState;
use super::error::ApiError;
use super::uploads::Staged;
use cove_core::agent::RunController;
use cove_core::llm::ChatMessage;
use cove_core::session::{self, PreparedRun, RunStart, SandboxView};
use cove_core::store::Thread;
use cove_sandbox::{Sandbox, SandboxSpec, coved_log};

/// How long the server waits for the browser's picture after a browser call.
const SCREENSHOT_WAIT: Duration = Duration::from_secs(5);

/// What answers a live run, and the sandbox it works in.
#[derive(Clone)]
pub(super) struct LiveRun {
    pub(super) controller: RunController,
    pub(super) sandbox: CovedClient,
}

/// One running thread: the claim that started its run, what answers the run (none while
/// its sandbox opens) and whether it was stopped before it began.
struct Entry {
    claim: u64,
    run: Option<LiveRun>,
    cancelled: Arc<AtomicBool>,
}

/// The threads running now.
#[derive(Default)]
pub(super) struct Live {
    runs: Mutex<HashMap<String, Entry>>,
    claims: AtomicU64,
}

impl Live {
    /// `thread`'s run, if one is running (`Some(None)` while it starts).
    pub(super) fn get(&self, thread: &str) -> Option<Option<LiveRun>> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(thread)
            .map(|entry| entry.run.clone())
    }

    /// Claims `thread` for a new run; none while another run has it.
    fn claim(&self, thread: &str) -> Option<(u64, Arc<AtomicBool>)> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if runs.contains_key(thread) {
            return None;
        }
        let claim = self.claims.fetch_add(1, Ordering::Relaxed);
        let cancelled = Arc::new(AtomicBool::new(false));
        runs.insert(
            thread.to_string(),
            Entry {
                claim,
                run: None,
                cancelled: cancelled.clone(),
            },
        );
        Some((claim, cancelled))
    }

    fn set(&self, thread: &str, claim: u64, run: LiveRun) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = runs.get_mut(thread).filter(|e| e.claim == claim) {
            entry.run = Some(run);
        }
    }

    /// Gives the thread up, if `claim` still holds it (a later run may have it already).
    fn release(&self, thread: &str, claim: u64) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if runs.get(thread).is_some_and(|e| e.claim == claim) {
            runs.remove(thread);
        }
    }

    /// Stops `thread`'s run, or keeps it from beginning if it is still starting; false when
    /// it has none.
    pub(super) fn stop(&self, thread: &str) -> bool {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = runs.get(thread) else {
            return false;
        };
        entry.cancelled.store(true, Ordering::SeqCst);
        if let Some(run) = &entry.run {
            run.controller.stop();
        }
        true
    }

    /// Stops every run (the server is stopping).
    pub(super) fn stop_all(&self) {
        let threads: Vec<String> = self
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        for thread in threads {
            self.stop(&thread);
        }
    }

    /// How many threads run now.
    pub(super) fn count(&self) -> usize {
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// A thread held for a run about to start: taken before what the run acts on is recorded
/// (an approval, a decision), so nothing is recorded for a run that cannot start. Dropped
/// without starting, it lets the thread go.
pub(super) struct Claim {
    state: Arc<ServeState>,
    thread: String,
    id: u64,
    cancelled: Arc<AtomicBool>,
    started: bool,
}

impl Claim {
    /// Holds `thread`; refused while a run has it.
    pub(super) fn take(state: &Arc<ServeState>, thread: &str) -> Result<Claim, ApiError> {
        let Some((id, cancelled)) = state.live.claim(thread) else {
            return Err(ApiError::conflict(
                "running",
                format!("thread {thread} is running; stop it first, or answer what it asks"),
            ));
        };
        Ok(Claim {
            state: state.clone(),
            thread: thread.to_string(),
            id,
            cancelled,
            started: false,
        })
    }

    /// Starts the thread's next run with `input` in a task of the server.
    pub(super) fn start(mut self, thread: Thread, input: Input, plan_first: bool) {
        self.started = true;
        let state = self.state.clone();
        let (claim, cancelled) = (self.id, self.cancelled.clone());
        tokio::spawn(async move {
            let id = thread.id.clone();
            let failed = run(&state, thread.clone(), input, plan_first, claim, &cancelled).await;
            // Free before the failure is told, so whoever hears it can start the next run.
            state.live.release(&id, claim);
            if let Err(why) = failed {
                failed_to_start(&state, &thread, why);
            }
        });
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.started {
            self.state.live.release(&self.thread, self.id);
        }
    }
}

/// What a new run starts with: the person's message and the files they attached to it.
#[derive(Default)]
pub(super) struct Input {
    pub(super) message: Option<ChatMessage>,
    pub(super) attachments: Vec<Staged>,
}

impl Input {
    /// A message without files.
    pub(super) fn text(message: ChatMessage) -> Input {
        Input {
            message: Some(message),
            attachments: Vec::new(),
        }
    }
}

/// Starts `thread`'s next run with `input` in a task of the server; refused while it runs.
pub(super) fn launch(
    state: &Arc<ServeState>,
    thread: Thread,
    input: Input,
    plan_first: bool,
) -> Result<(), ApiError> {
    state.engine().may_run(&thread)?;
    Claim::take(state, &thread.id)?.start(thread, input, plan_first);
    Ok(())
}

/// A thread's next run over its sandbox, ready to start.
struct Prepared {
    run: PreparedRun,
    sandbox: Sandbox,
}

impl Prepared {
    /// Ends the MCP servers and closes the sandbox (a local one stops).
    async fn close(self) {
        self.run.close().await;
        self.sandbox.close().await;
    }
}

/// Opens the thread's sandbox, starts its MCP servers and builds its agent. The page
/// answers permission requests while the run waits; nobody is asked whether to use the
/// folder's own settings (`--trust` decides).
async fn prepare(
    state: &ServeState,
    thread: &Thread,
    answering: bool,
    plan_first: bool,
) -> Result<Prepared, String> {
    let engine = state.engine();
    let start = RunStart {
        plan_first,
        answering,
        hold_permissions: false,
    };
    let begun = engine.begin(thread, start).map_err(|e| e.to_string())?;
    let (project, said) = session::project_trust(state.trust, |_| None);
    state.log.say(said.as_slice());
    // The servers start while the sandbox does.
    let (mcp, notices) = session::start_mcp(&state.mcp_config, project);
    state.log.say(&notices);
    let sandboxes = state.sandbox_layer();
    let spec = SandboxSpec::from_label(&thread.sandbox);
    let token = sandboxes.token_for(&state.sandbox, &spec);
    let sandbox = sandboxes
        .open(spec, token, Some(&coved_log()))
        .await
        .map_err(|e| e.to_string())?;
    let view = SandboxView {
        client: sandbox.client.clone(),
        walled: sandbox.walled(&state.local),
        machine_view: sandbox.machine_view(&state.local),
    };
    match engine
        .prepare(begun, view, mcp, &state.settings, project)
        .await
    {
        Ok(run) => {
            state.log.say(&run.notices);
            Ok(Prepared { run, sandbox })
        }
        Err(e) => {
            sandbox.close().await;
            Err(e.to_string())
        }
    }
}

async fn run(
    state: &Arc<ServeState>,
    thread: Thread,
    input: Input,
    plan_first: bool,
    claim: u64,
    cancelled: &AtomicBool,
) -> Result<(), String> {
    let unsent = if input.message.is_some() {
        "; the message was not sent (files attached to it are still held): send it again"
    } else {
        ""
    };
    // The sandbox opened to show the thread's files gives way to the run's own.
    state.sandboxes.close(&thread.id).await;
    let prepared = match prepare(state, &thread, input.message.is_some(), plan_first).await {
        Ok(prepared) => prepared,
        Err(e) => {
            return Err(format!("{e}{unsent}"));
        }
    };
    if cancelled.load(Ordering::SeqCst) {
        prepared.close().await;
        return Err(format!("it was stopped before it began{unsent}"));
    }
    let client = prepared.sandbox.client.clone();
    let message = match input.message {
        Some(message) if !input.attachments.is_empty() => {
            match super::uploads::deliver(&state.uploads, &client, &input.attachments).await {
                Ok(note) => Some(ChatMessage::user(format!("{}\n\n{note}", message.text()))),
                Err(e) => {
                    prepared.close().await;
                    return Err(format!("{e}{unsent}"));
                }
            }
        }
        other => other,
    };
    let mut handle = match prepared.run.agent.start(&thread, message) {
        Ok(handle) => handle,
        Err(e) => {
            prepared.close().await;
            return Err(e.to_string());
        }
    };
    state.live.set(
        &thread.id,
        claim,
        LiveRun {
            controller: handle.controller(),
            sandbox: client.clone(),
        },
    );
    // A stop that came while the run was being set up.
    if cancelled.load(Ordering::SeqCst) {
        handle.stop();
    }
    // Events that came together are stored together (one transaction), up to one that
    // needs something done first.
    while let Some(first) = handle.next_event().await {
        let mut batch = vec![first];
        while batch.len() < PUBLISH_BATCH && !needs_care(&batch[batch.len() - 1].kind) {
            match handle.try_next_event() {
                Some(event) => batch.push(event),
                None => break,
            }
        }
        let Some(last) = batch.last() else { continue };
        if let Some(call) = browser_call_end(&last.kind) {
            keep_screenshot(state, &client, &thread.id, &last.run_id, call).await;
        }
        if matches!(last.kind, EventKind::ThreadRunEnd { .. }) {
            // Whoever sees the run's end may start the next: the thread is free first (its
            // sandbox closes behind).
            state.live.release(&thread.id, claim);
        }
        if let Err(e) = state.feeds.publish_all(&state.store, batch) {
            tracing::error!(error = %e, thread = %thread.id, "cannot store events");
        }
    }
    if let Err(e) = handle.outcome().await {
        tracing::warn!(error = %e, thread = %thread.id, "the run failed");
    }
    prepared.close().await;
    Ok(())
}

/// Most events stored in one transaction.
const PUBLISH_BATCH: usize = 512;

/// Whether the server acts on the event before it is published (so it ends a batch).
fn needs_care(kind: &EventKind) -> bool {
    browser_call_end(kind).is_some() || matches!(kind, EventKind::ThreadRunEnd { .. })
}

/// The call id of a browser tool call that just ended.
fn browser_call_end(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::ToolCompleted { call_id, tool, .. }
        | EventKind::ToolFailed { call_id, tool, .. }
            if tool.starts_with("browser_") =>
        {
            Some(call_id)
        }
        _ => None,
    }
}

/// Keeps the browser's picture as call `call` left it, before its end is announced, so a
/// page that hears of the call can show it. A browser that cannot be seen is no error.
async fn keep_screenshot(
    state: &ServeState,
    sandbox: &CovedClient,
    thread: &str,
    run: &str,
    call: &str,
) {
    // The run kept the picture its model was shown (vision): no second one is taken.
    if matches!(state.store.screenshot(thread, run, call), Ok(Some(_))) {
        return;
    }
    let jpeg = match tokio::time::timeout(SCREENSHOT_WAIT, sandbox.screenshot()).await {
        Ok(Ok(jpeg)) => jpeg,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "no screenshot after a browser call");
            return;
        }
        Err(_) => {
            tracing::debug!("the screenshot took too long");
            return;
        }
    };
    if let Err(e) = state.store.add_screenshot(thread, run, call, &jpeg) {
        tracing::warn!(error = %e, "cannot keep a screenshot");
    }
}

/// A run that could not start (no sandbox, no model key) is an `error` event of the thread,
/// so the page shows why.
fn failed_to_start(state: &ServeState, thread: &Thread, message: String) {
    let event = RunEvent {
        seq: 0,
        thread_id: thread.id.clone(),
        run_id: String::new(),
        timestamp_ms: u64::try_from(cove_core::store::now_ms()).unwrap_or(0),
        kind: EventKind::Error {
            message: format!("the run could not start: {message}"),
            fatal: true,
        },
    };
    if let Err(e) = state.feeds.publish(&state.store, event) {
        tracing::error!(error = %e, "cannot store an event");
    }
}
