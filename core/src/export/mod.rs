//! A thread as one file a person can open anywhere (`cove export`): its conversation, each
//! tool call with its result and the browser's picture after it, its plans, the permissions
//! it asked and their answers, and what its runs cost. Read from the store alone: the
//! sandbox may be gone.

mod html;
mod markdown;
mod secrets;

use base64::Engine as _;
use cove_protocol::conversation::ChatMessage;
use cove_protocol::events::{EventKind, RunEvent, TokenUsage};
use cove_protocol::plan::Plan;
use serde::Serialize;

use crate::store::{MessageKind, RunUsage, Store, StoreError, StoredMessage};

pub use secrets::Secrets;

/// The formats a thread is exported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One self-contained page: styles and pictures inside, no script, nothing fetched.
    Html,
    Markdown,
    Json,
}

impl Format {
    /// The file name's ending for this format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Markdown => "md",
            Format::Json => "json",
        }
    }
}

/// A thread as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Transcript {
    pub thread: ThreadInfo,
    /// What happened, in order.
    pub steps: Vec<Step>,
    /// Every version of its plan.
    pub plans: Vec<Plan>,
    pub runs: Vec<RunInfo>,
    /// Tokens over all its runs.
    pub usage: TokenUsage,
    /// What they cost in US dollars; absent when a model's price is unknown.
    pub cost: Option<f64>,
}

/// The thread an export is of.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadInfo {
    pub id: String,
    pub title: String,
    pub model: String,
    pub sandbox: String,
    pub status: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
}

/// One run of the thread.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub id: String,
    pub status: String,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub iterations: u32,
    pub usage: TokenUsage,
    pub cost: Option<f64>,
}

/// One thing that happened in the thread.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// A run began.
    RunStarted { at: u64, model: String },
    /// The person said something.
    User { at: u64, text: String },
    /// The agent said something.
    Assistant { at: u64, text: String },
    /// A tool call and how it ended.
    Tool {
        at: u64,
        /// The run that made it (call ids are unique within a run only).
        run_id: String,
        call_id: String,
        tool: String,
        summary: Option<String>,
        arguments: serde_json::Value,
        /// The result, or the failure, as the model read it; none while it never ended.
        output: Option<String>,
        ok: bool,
        duration_ms: Option<u64>,
        /// The browser after the call (a base64 JPEG), when it was kept.
        #[serde(skip_serializing_if = "Option::is_none")]
        screenshot: Option<String>,
    },
    /// The agent asked the person something.
    Ask { at: u64, text: String },
    /// A call waited for the person's permission.
    Permission {
        at: u64,
        request_id: String,
        tool: String,
        summary: String,
        why: String,
        /// `allow_once`, `allow_for_thread` or `deny`; none while unanswered.
        decision: Option<String>,
        reason: Option<String>,
    },
    /// A version of the plan was proposed.
    Plan { at: u64, version: u32, text: String },
    /// Anything else worth a line: a takeover, a wait, a retry, a sub-agent, an error.
    Note { at: u64, text: String },
    /// The agent said the task was done.
    Complete { at: u64, text: Option<String> },
    /// A run ended.
    RunEnded {
        at: u64,
        status: String,
        usage: TokenUsage,
        cost: Option<f64>,
        duration_ms: u64,
    },
}

/// Reads thread `thread` (an id or its start) from `store`, whole.
pub fn transcript(store: &Store, thread: &str) -> Result<Transcript, StoreError> {
    let thread = store.thread(thread)?;
    let messages: Vec<StoredMessage> = store
        .messages(&thread.id)?
        .into_iter()
        .filter(|m| m.branch == 0)
        .collect();
    let mut steps = steps_of(&messages);
    for step in &mut steps {
        if let Step::Tool {
            run_id,
            call_id,
            screenshot,
            ..
        } = step
        {
            *screenshot = store
                .screenshot(&thread.id, run_id, call_id)?
                .map(|jpeg| base64::engine::general_purpose::STANDARD.encode(jpeg));
        }
    }
    let mut runs = Vec::new();
    let mut used = Vec::new();
    for run in store.runs(&thread.id)? {
        let usage = store.run_usage(&run.id)?;
        used.push(usage);
        runs.push(RunInfo {
            id: run.id,
            status: run.status.as_str().to_string(),
            started_at: run.started_at,
            ended_at: run.ended_at,
            iterations: run.iterations,
            usage: usage.tokens,
            cost: usage.cost,
        });
    }
    let total = RunUsage::sum(&used);
    Ok(Transcript {
        thread: ThreadInfo {
            id: thread.id.clone(),
            title: thread.title.clone(),
            model: thread.model.clone(),
            sandbox: thread.sandbox.clone(),
            status: thread.status.as_str().to_string(),
            created_at: thread.created_at,
        },
        steps,
        plans: store.plan_versions(&thread.id).unwrap_or_default(),
        runs,
        usage: total.tokens,
        cost: total.cost.filter(|_| total.tokens.calls > 0),
    })
}

/// `transcript` written in `format`, every secret of `secrets` blotted out.
pub fn render(transcript: &Transcript, format: Format, secrets: &Secrets) -> String {
    let text = match format {
        Format::Html => html::page(transcript),
        Format::Markdown => markdown::document(transcript),
        Format::Json => serde_json::to_string_pretty(transcript).unwrap_or_default(),
    };
    secrets.blot(&text)
}

impl Step {
    /// A run's end in one line: how, how long, its calls, tokens and cost.
    fn run_end_line(status: &str, usage: &TokenUsage, cost: Option<f64>, ms: u64) -> String {
        format!(
            "the run ended: {status} · {:.1} s · {} model calls · {} tokens in, {} out{}",
            ms as f64 / 1000.0,
            usage.calls,
            usage.input_tokens,
            usage.output_tokens,
            cost.map(|c| format!(" · ${c:.4}")).unwrap_or_default()
        )
    }

    /// How a call ended, as a mark: done, failed, or never ended.
    fn call_mark(output: &Option<String>, ok: bool) -> &'static str {
        match (output, ok) {
            (None, _) => "…",
            (Some(_), true) => "✓",
            (Some(_), false) => "✗",
        }
    }
}

/// A status message's event.
fn event_of(m: &StoredMessage) -> Option<RunEvent> {
    if m.kind != MessageKind::Status {
        return None;
    }
    serde_json::from_value(m.content.clone()).ok()
}

/// The steps the stored messages tell, in order: the runs' events, the agent's text where
/// its answer began, and (for threads older than the `user_message` event) the person's
/// messages.
fn steps_of(messages: &[StoredMessage]) -> Vec<Step> {
    let told = messages
        .iter()
        .filter_map(event_of)
        .any(|e| matches!(e.kind, EventKind::UserMessage { .. }));
    let mut steps = Vec::new();
    // Where the answer under way began: its text is stored after the calls it made.
    let mut slot: Option<usize> = None;
    for m in messages {
        if let Some(event) = event_of(m) {
            if matches!(event.kind, EventKind::AssistantResponseStart { .. }) {
                slot = Some(steps.len());
            }
            add_event(&mut steps, event);
            continue;
        }
        let at = u64::try_from(m.created_at).unwrap_or(0);
        let Ok(message) = serde_json::from_value::<ChatMessage>(m.content.clone()) else {
            continue;
        };
        match m.kind {
            MessageKind::Assistant => {
                let text = without_calls(&message.text());
                if text.is_empty() {
                    continue;
                }
                let step = Step::Assistant { at, text };
                match slot.take() {
                    Some(i) if i <= steps.len() => steps.insert(i, step),
                    _ => steps.push(step),
                }
            }
            MessageKind::User if !told => {
                let text = message.text();
                if !text.is_empty() && !text.starts_with("<function_results>") {
                    steps.push(Step::User { at, text });
                }
            }
            _ => {}
        }
    }
    steps
}

/// An answer's text without the XML tool calls it made (shown as calls of their own).
fn without_calls(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<function_calls>") {
        out.push_str(&rest[..start]);
        rest = match rest[start..].find("</function_calls>") {
            Some(end) => &rest[start + end + "</function_calls>".len()..],
            None => "",
        };
    }
    out.push_str(rest);
    out.trim().to_string()
}

/// Adds what `event` tells to `steps`.
fn add_event(steps: &mut Vec<Step>, event: RunEvent) {
    let at = event.timestamp_ms;
    let run = event.run_id;
    let step = match event.kind {
        EventKind::ThreadRunStart { model, .. } => Step::RunStarted { at, model },
        EventKind::UserMessage { text, says } => Step::User {
            at,
            text: says.unwrap_or(text),
        },
        EventKind::ToolStarted {
            call_id,
            tool,
            summary,
            arguments,
        } => Step::Tool {
            at,
            run_id: run,
            call_id,
            tool,
            summary,
            arguments,
            output: None,
            ok: false,
            duration_ms: None,
            screenshot: None,
        },
        EventKind::ToolCompleted {
            call_id, output, ..
        } => return end_call(steps, (&run, &call_id), at, output, true),
        EventKind::ToolFailed { call_id, error, .. } => {
            return end_call(steps, (&run, &call_id), at, error, false);
        }
        EventKind::Ask { text, .. } => Step::Ask { at, text },
        EventKind::PermissionRequest {
            request_id,
            tool,
            summary,
            why,
            ..
        } => Step::Permission {
            at,
            request_id,
            tool,
            summary,
            why,
            decision: None,
            reason: None,
        },
        EventKind::PermissionDecided {
            request_id,
            decision,
            reason,
            ..
        } => return decide(steps, &request_id, decision, reason),
        EventKind::PlanProposed { plan } => Step::Plan {
            at,
            version: plan.version,
            text: plan.to_markdown(),
        },
        EventKind::Complete { text, .. } => Step::Complete { at, text },
        EventKind::ThreadRunEnd {
            status,
            usage,
            cost,
            duration_ms,
        } => Step::RunEnded {
            at,
            status: serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            usage,
            cost,
            duration_ms,
        },
        other => match note_of(other) {
            Some(text) => Step::Note { at, text },
            None => return,
        },
    };
    steps.push(step);
}

/// The line an event worth a note says; none for the events an export leaves out (the
/// answer's start and streamed text, progress, MCP servers' state, an answer's end).
fn note_of(kind: EventKind) -> Option<String> {
    Some(match kind {
        EventKind::PlanUpdated { plan, note: said } => format!(
            "plan version {} {}{}",
            plan.version,
            plan.status.as_str(),
            said.map(|n| format!(": {n}")).unwrap_or_default()
        ),
        EventKind::Takeover { text, .. } => {
            format!("asked a person to take over the browser: {text}")
        }
        EventKind::TakeoverEnded { reason, note: said } => format!(
            "the takeover ended ({reason}){}",
            said.map(|n| format!(": {n}")).unwrap_or_default()
        ),
        EventKind::WaitingForEvents { waits_for, .. } => format!("waiting for {waits_for}"),
        EventKind::WaitEnded { text, timed_out } => {
            if timed_out {
                format!("the wait timed out: {text}")
            } else {
                format!("woken: {text}")
            }
        }
        EventKind::AgentSpawned { agent, task, .. } => {
            format!("sub-agent {agent} started: {task}")
        }
        EventKind::AgentFinished {
            agent,
            status,
            answer,
            ..
        } => format!(
            "sub-agent {agent} {status}{}",
            answer.map(|a| format!(": {a}")).unwrap_or_default()
        ),
        EventKind::SkillLoaded { name, .. } => format!("loaded the skill {name}"),
        EventKind::LlmRetry {
            attempt, reason, ..
        } => format!("the model call was retried ({attempt}): {reason}"),
        EventKind::ContextCompressed {
            tokens_before,
            tokens_after,
            ..
        } => format!(
            "the history was cut to fit the model's window ({tokens_before} → {tokens_after} tokens)"
        ),
        EventKind::ContextSummarized { messages, .. } => {
            format!("{messages} older messages were summarized")
        }
        EventKind::Error { message, .. } => format!("error: {message}"),
        EventKind::ThreadRewound { checkpoint, .. } => {
            format!("the thread went back to checkpoint {checkpoint}")
        }
        _ => return None,
    })
}

/// Ends call `call` of run `run`.
fn end_call(
    steps: &mut [Step],
    (run, call): (&str, &str),
    ended: u64,
    text: String,
    succeeded: bool,
) {
    for step in steps.iter_mut().rev() {
        if let Step::Tool {
            at,
            run_id,
            call_id,
            output,
            ok,
            duration_ms,
            ..
        } = step
            && call_id == call
            && run_id == run
            && output.is_none()
        {
            *output = Some(text);
            *ok = succeeded;
            *duration_ms = Some(ended.saturating_sub(*at));
            return;
        }
    }
}

/// Records the answer to permission request `request`.
fn decide(steps: &mut [Step], request: &str, answer: String, said: Option<String>) {
    for step in steps.iter_mut().rev() {
        if let Step::Permission {
            request_id,
            decision,
            reason,
            ..
        } = step
            && request_id == request
        {
            *decision = Some(answer);
            *reason = said;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answers_xml_calls_are_left_out_of_its_text() {
        assert_eq!(
            without_calls("Looking.\n<function_calls><invoke/></function_calls>\nDone."),
            "Looking.\n\nDone."
        );
        assert_eq!(without_calls("Cut <function_calls><invoke"), "Cut");
    }
}
