//! `cove threads` and `cove show`: what the store holds, for a person or a script.

use std::process::ExitCode;

use super::{CliError, Invocation};
use cove_core::llm::ChatMessage;
use serde::Serialize;

use cove_core::store::{MessageKind, RequestKind, Run, RunUsage, StoredMessage, Thread};
use cove_protocol::events::TokenUsage;

/// A thread as `cove threads` lists it: with what it waits for, if anything, and its runs.
#[derive(Debug, Serialize)]
struct ThreadRow {
    #[serde(flatten)]
    thread: Thread,
    /// `permission` (with the requests' ids), `answer` (to the agent's question),
    /// `browser` (a person to hand it back) or `approval` (of its plan).
    waiting_for: Option<String>,
    /// Its runs, oldest first, with what their model calls took and cost.
    runs: Vec<RunRow>,
}

/// A run with what its model calls took and cost.
#[derive(Debug, Serialize)]
struct RunRow {
    #[serde(flatten)]
    run: Run,
    #[serde(flatten)]
    usage: RunUsage,
}

/// The runs of `thread` with their model calls' totals.
fn runs(inv: &Invocation, thread: &str) -> Result<Vec<RunRow>, CliError> {
    inv.store
        .runs(thread)?
        .into_iter()
        .map(|run| {
            let usage = inv.store.run_usage(&run.id)?;
            Ok(RunRow { run, usage })
        })
        .collect()
}

/// The totals of `runs`: tokens, and the cost when every call's is known.
fn total(runs: &[RunRow]) -> (TokenUsage, Option<f64>) {
    let sum = RunUsage::sum(runs.iter().map(|r| &r.usage));
    (sum.tokens, sum.cost)
}

/// A run's line in `cove show`.
fn run_line(r: &RunRow) -> String {
    let duration = r
        .run
        .ended_at
        .map(|end| u64::try_from(end - r.run.started_at).unwrap_or(0));
    format!(
        "run {} · {} · {}",
        r.run.id,
        r.run.status,
        super::render::spend(&r.usage.tokens, r.usage.cost, duration)
    )
}

/// What `thread` waits for from the user: its waiting requests, by kind.
fn waiting_for(inv: &Invocation, thread: &Thread) -> Result<Option<String>, CliError> {
    let requests = inv.store.waiting_requests(&thread.id)?;
    let mut said: Vec<String> = Vec::new();
    let permissions: Vec<&str> = requests
        .iter()
        .filter(|r| r.kind == RequestKind::Permission)
        .map(|r| r.id.as_str())
        .collect();
    if !permissions.is_empty() {
        said.push(format!("permission {}", permissions.join(",")));
    }
    for (kind, name) in [
        (RequestKind::Plan, "approval"),
        (RequestKind::Ask, "answer"),
        (RequestKind::Takeover, "browser"),
    ] {
        if requests.iter().any(|r| r.kind == kind) {
            said.push(name.to_string());
        }
    }
    if let Some(wait) = inv.store.event_wait(&thread.id)? {
        said.push(format!("events: {}", wait.summary));
    }
    Ok((!said.is_empty()).then(|| said.join("; ")))
}

/// Threads with each sub-agent's thread right after its parent's (parents most recently
/// updated first, children in the order they were started).
fn parents_first(threads: Vec<Thread>) -> Vec<Thread> {
    let ids: std::collections::HashSet<String> = threads.iter().map(|t| t.id.clone()).collect();
    let (mut children, mut ordered): (Vec<Thread>, Vec<Thread>) = threads
        .into_iter()
        .partition(|t| t.parent_id.as_ref().is_some_and(|p| ids.contains(p)));
    children.sort_by_key(|t| t.created_at);
    let mut i = 0;
    while i < ordered.len() {
        let id = ordered[i].id.clone();
        let mine: Vec<Thread> = children
            .iter()
            .filter(|c| c.parent_id.as_deref() == Some(id.as_str()))
            .cloned()
            .collect();
        children.retain(|c| c.parent_id.as_deref() != Some(id.as_str()));
        let at = i + 1;
        ordered.splice(at..at, mine);
        i += 1;
    }
    ordered
}

/// How deep `thread` is under parents in `rows` (0: a thread of its own).
fn depth_of(rows: &[ThreadRow], thread: &Thread) -> usize {
    let mut depth = 0;
    let mut parent = thread.parent_id.clone();
    while let Some(id) = parent {
        match rows.iter().find(|r| r.thread.id == id) {
            Some(row) if depth < 8 => {
                depth += 1;
                parent = row.thread.parent_id.clone();
            }
            _ => break,
        }
    }
    depth
}

/// `cove threads`: every thread, most recently updated first, with what it waits for.
pub(super) fn list(inv: &Invocation) -> Result<ExitCode, CliError> {
    let rows = parents_first(inv.store.threads()?)
        .into_iter()
        .map(|thread| {
            let waiting_for = waiting_for(inv, &thread)?;
            let runs = runs(inv, &thread.id)?;
            Ok(ThreadRow {
                thread,
                waiting_for,
                runs,
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    inv.printer.list(
        &rows,
        "No threads yet. Start one with: cove run \"...\"",
        |row: &ThreadRow| {
            let t = &row.thread;
            let indent = match depth_of(&rows, t) {
                0 => String::new(),
                depth => format!("{}└ ", "  ".repeat(depth)),
            };
            let when = clock(t.updated_at);
            let waits = row
                .waiting_for
                .as_deref()
                .map(|w| format!("  (waits for {w})"))
                .unwrap_or_default();
            let (tokens, cost) = total(&row.runs);
            let spent = if tokens.calls == 0 {
                String::new()
            } else {
                let runs = row.runs.len();
                format!(
                    "  [{runs} run{} · {}]",
                    if runs == 1 { "" } else { "s" },
                    super::render::spend(&tokens, cost, None)
                )
            };
            format!(
                "{indent}{}  {:<9}  {when}  {}{waits}{spent}",
                t.id, t.status, t.title
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// A stored time (ms since the epoch) as RFC 3339, to the second.
pub(super) fn clock(ms: i64) -> String {
    humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0)),
    )
    .to_string()
}

/// `cove show THREAD`: its runs with their tokens and cost, its messages, then the versions
/// of its plan (with `--json`: every stored message, then one `{"run": …}` line per run and
/// one `{"plan_version": …}` line per version).
pub(super) fn show(inv: &Invocation, id: &str, all: bool) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(id)?;
    let mut messages = inv.store.messages(&thread.id)?;
    let aside = messages.iter().filter(|m| m.branch != 0).count();
    if !all {
        messages.retain(|m| m.branch == 0);
    }
    let plans = inv.store.plan_versions(&thread.id)?;
    let runs = runs(inv, &thread.id)?;
    if inv.printer.json() {
        inv.printer.list(&messages, "", |_| String::new());
        let runs: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| serde_json::json!({ "run": r }))
            .collect();
        inv.printer.list(&runs, "", |_| String::new());
        let versions: Vec<serde_json::Value> = plans
            .iter()
            .map(|p| serde_json::json!({ "plan_version": p }))
            .collect();
        inv.printer.list(&versions, "", |_| String::new());
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!(
        "thread {} · {} · {} · {}",
        thread.id, thread.status, thread.model, thread.sandbox
    );
    for run in &runs {
        text.push('\n');
        text.push_str(&run_line(run));
    }
    for m in &messages {
        if m.branch != 0 {
            let line = readable(m);
            if !line.is_empty() {
                text.push_str(&format!("\n[left by rewind {}]", m.branch));
                text.push_str(&line);
            }
            continue;
        }
        text.push_str(&readable(m));
    }
    if aside > 0 && !all {
        text.push_str(&format!(
            "\n\n({aside} messages left aside by a rewind: cove show {} --all)",
            thread.id
        ));
    }
    for plan in &plans {
        let reason = plan
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "\n\n[plan, version {} · {}{reason}]\n{}",
            plan.version,
            plan.status.as_str(),
            plan.to_markdown().trim_end()
        ));
    }
    inv.printer.result(&(), |()| text);
    Ok(ExitCode::SUCCESS)
}

/// A stored message as a person reads it; nothing for status lines.
fn readable(m: &StoredMessage) -> String {
    if m.kind == MessageKind::Summary {
        return format!(
            "\n\n[summary of messages {} to {}] {}",
            m.content["first"],
            m.content["last"],
            m.content["text"].as_str().unwrap_or_default().trim()
        );
    }
    if !m.is_llm_message {
        return String::new();
    }
    let Ok(message) = serde_json::from_value::<ChatMessage>(m.content.clone()) else {
        return String::new();
    };
    let mut text = format!("\n\n[{}] {}", m.kind, message.text().trim());
    for call in &message.tool_calls {
        text.push_str(&format!("\n  → {}({})", call.name, call.arguments));
    }
    text
}
