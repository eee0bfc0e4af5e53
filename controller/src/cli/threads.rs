//! `cove threads` and `cove show`: what the store holds, for a person or a script.

use std::process::ExitCode;

use super::{CliError, Invocation};
use crate::llm::ChatMessage;
use serde::Serialize;

use crate::store::{MessageKind, PauseKind, StoredMessage, Thread, ThreadStatus};

/// A thread as `cove threads` lists it: with what it waits for, if anything.
#[derive(Debug, Serialize)]
struct ThreadRow {
    #[serde(flatten)]
    thread: Thread,
    /// `permission` (with the requests' ids), `answer` (to the agent's question) or
    /// `browser` (a person to hand it back).
    waiting_for: Option<String>,
}

/// What `thread` waits for from the user.
fn waiting_for(inv: &Invocation, thread: &Thread) -> Result<Option<String>, CliError> {
    let requests = inv.store.waiting_requests(&thread.id)?;
    if !requests.is_empty() {
        let ids: Vec<&str> = requests.iter().map(|r| r.id.as_str()).collect();
        return Ok(Some(format!("permission {}", ids.join(","))));
    }
    if thread.status != ThreadStatus::Paused && thread.status != ThreadStatus::Waiting {
        return Ok(None);
    }
    Ok(inv
        .store
        .last_run(&thread.id)?
        .and_then(|run| run.pause_kind)
        .map(|kind| match kind {
            PauseKind::Ask => "answer".to_string(),
            PauseKind::Takeover => "browser".to_string(),
        })
        .or_else(|| (thread.status == ThreadStatus::Waiting).then(|| "browser".to_string())))
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

/// `cove show THREAD`: its messages (every stored message with `--json`).
pub(super) fn show(inv: &Invocation, id: &str) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(id)?;
    let messages = inv.store.messages(&thread.id)?;
    if inv.printer.json() {
        inv.printer.list(&messages, "", |_| String::new());
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!(
        "thread {} · {} · {} · {}",
        thread.id, thread.status, thread.model, thread.sandbox
    );
    for m in &messages {
        text.push_str(&readable(m));
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
