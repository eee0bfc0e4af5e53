//! `cove threads` and `cove show`: what the store holds, for a person or a script.

use std::process::ExitCode;

use super::{CliError, Invocation};
use crate::llm::ChatMessage;
use crate::store::{MessageKind, StoredMessage, Thread};

/// `cove threads`: every thread, most recently updated first.
pub(super) fn list(inv: &Invocation) -> Result<ExitCode, CliError> {
    let threads = inv.store.threads()?;
    inv.printer.list(
        &threads,
        "No threads yet. Start one with: cove run \"...\"",
        |t: &Thread| {
            let when = humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_millis(u64::try_from(t.updated_at).unwrap_or(0)),
            );
            format!("{}  {:<9}  {when}  {}", t.id, t.status, t.title)
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
