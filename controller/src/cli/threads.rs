//! `cove threads` and `cove show`: what the store holds, for a person or a script.

use std::process::ExitCode;

use super::{CliError, Invocation};
use crate::llm::ChatMessage;
use serde::Serialize;

use crate::store::{MessageKind, RequestKind, StoredMessage, Thread};

/// A thread as `cove threads` lists it: with what it waits for, if anything.
#[derive(Debug, Serialize)]
struct ThreadRow {
    #[serde(flatten)]
    thread: Thread,
    /// `permission` (with the requests' ids), `answer` (to the agent's question),
    /// `browser` (a person to hand it back) or `approval` (of its plan).
    waiting_for: Option<String>,
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
    Ok((!said.is_empty()).then(|| said.join("; ")))
}

/// `cove threads`: every thread, most recently updated first, with what it waits for.
pub(super) fn list(inv: &Invocation) -> Result<ExitCode, CliError> {
    let rows = inv
        .store
        .threads()?
        .into_iter()
        .map(|thread| {
            let waiting_for = waiting_for(inv, &thread)?;
            Ok(ThreadRow {
                thread,
                waiting_for,
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    inv.printer.list(
        &rows,
        "No threads yet. Start one with: cove run \"...\"",
        |row: &ThreadRow| {
            let t = &row.thread;
            let when = humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_millis(u64::try_from(t.updated_at).unwrap_or(0)),
            );
            let waits = row
                .waiting_for
                .as_deref()
                .map(|w| format!("  (waits for {w})"))
                .unwrap_or_default();
            format!("{}  {:<9}  {when}  {}{waits}", t.id, t.status, t.title)
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove show THREAD`: its messages (every stored message with `--json`), then the
/// versions of its plan (with `--json`, one `{"plan_version": …}` line each).
pub(super) fn show(inv: &Invocation, id: &str) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(id)?;
    let messages = inv.store.messages(&thread.id)?;
    let plans = inv.store.plan_versions(&thread.id)?;
    if inv.printer.json() {
        inv.printer.list(&messages, "", |_| String::new());
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
    for m in &messages {
        text.push_str(&readable(m));
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
