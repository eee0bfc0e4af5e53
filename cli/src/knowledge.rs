//! `cove knowledge add|ls|rm`: what the agent keeps in mind, for every thread or for one.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use super::{CliError, Invocation};
use cove_core::context::knowledge::{MAX_ENTRY_BYTES, cap_entry};

#[derive(Debug, Subcommand)]
pub(super) enum KnowledgeCommand {
    /// Add an entry: for every thread, or with --thread for one (the first 100 KB of text).
    Add {
        /// Read the entry from this text file.
        #[arg(long, conflicts_with = "text", required_unless_present = "text")]
        file: Option<PathBuf>,
        /// The entry's text.
        #[arg(long)]
        text: Option<String>,
        /// A short name (default: the file name or the first words).
        #[arg(long)]
        name: Option<String>,
        /// Only for this thread.
        #[arg(long)]
        thread: Option<String>,
    },
    /// List entries (every-thread ones, and the thread's with --thread).
    Ls {
        #[arg(long)]
        thread: Option<String>,
    },
    /// Remove an entry.
    Rm { id: i64 },
}

/// Runs a `cove knowledge` command.
pub(super) fn command(inv: &Invocation, cmd: KnowledgeCommand) -> Result<ExitCode, CliError> {
    match cmd {
        KnowledgeCommand::Add {
            file,
            text,
            name,
            thread,
        } => add(inv, file, text, name, thread),
        KnowledgeCommand::Ls { thread } => ls(inv, thread),
        KnowledgeCommand::Rm { id } => remove(inv, id),
    }
}

/// The entry's text (capped), its default name, and the length it had before the cap.
fn entry_text(
    file: Option<PathBuf>,
    text: Option<String>,
) -> Result<(String, String, usize), CliError> {
    match (file, text) {
        (Some(path), _) => {
            let bytes = std::fs::read(&path)
                .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
            if bytes.iter().take(8192).any(|b| *b == 0) {
                return Err(CliError::Usage(format!(
                    "{} is not a text file; knowledge entries are text",
                    path.display()
                )));
            }
            // A character cut at the 100 KB mark must not become a replacement sign.
            let head = &bytes[..bytes.len().min(MAX_ENTRY_BYTES + 4)];
            let text = String::from_utf8_lossy(head).into_owned();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "file".into());
            Ok((cap_entry(&text).to_string(), name, bytes.len()))
        }
        (None, Some(text)) => {
            let name: String = text
                .split_whitespace()
                .take(6)
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(60)
                .collect();
            let len = text.len();
            Ok((cap_entry(&text).to_string(), name, len))
        }
        (None, None) => Err(CliError::Usage("give --file or --text".into())),
    }
}

fn add(
    inv: &Invocation,
    file: Option<PathBuf>,
    text: Option<String>,
    name: Option<String>,
    thread: Option<String>,
) -> Result<ExitCode, CliError> {
    let thread = thread
        .map(|t| inv.store.thread(&t).map(|t| t.id))
        .transpose()?;
    let (content, default_name, full_len) = entry_text(file, text)?;
    if content.trim().is_empty() {
        return Err(CliError::Usage("the entry is empty".into()));
    }
    let name = name.unwrap_or(default_name);
    let id = inv
        .store
        .add_knowledge(thread.as_deref(), &name, &content)?;
    let scope = thread
        .as_deref()
        .map_or("every thread".to_string(), |t| format!("thread {t}"));
    let truncated = full_len > content.len();
    inv.printer.result(
        &json!({"id": id, "name": name, "bytes": content.len(), "truncated": truncated}),
        |_| {
            let mut text = format!(
                "knowledge {id} \"{name}\" ({} bytes) added for {scope}",
                content.len()
            );
            if truncated {
                text.push_str(&format!(
                    "\nnote: only the first 100 KB of {full_len} bytes were kept"
                ));
            }
            text
        },
    );
    Ok(ExitCode::SUCCESS)
}

fn ls(inv: &Invocation, thread: Option<String>) -> Result<ExitCode, CliError> {
    let thread = thread
        .map(|t| inv.store.thread(&t).map(|t| t.id))
        .transpose()?;
    let mut entries: Vec<_> = inv
        .store
        .knowledge(thread.as_deref())?
        .into_iter()
        .filter(|e| thread.is_some() || e.thread_id.is_none())
        .collect();
    // JSON lists newest first, as the store does; a person reads the newest last.
    if !inv.printer.json() {
        entries.reverse();
    }
    inv.printer.list(
        &entries,
        "No knowledge yet. Add some with: cove knowledge add --text \"...\"",
        |e| {
            format!(
                "{:>4}  {:<8}  {:>7} B  {}",
                e.id,
                e.thread_id.as_deref().unwrap_or("all"),
                e.content.len(),
                e.name
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

fn remove(inv: &Invocation, id: i64) -> Result<ExitCode, CliError> {
    if !inv.store.remove_knowledge(id)? {
        return Err(CliError::NotFound(format!(
            "no knowledge entry {id}; `cove knowledge ls` lists them"
        )));
    }
    inv.printer
        .result(&json!({"id": id, "removed": true}), |_| {
            format!("knowledge {id} removed")
        });
    Ok(ExitCode::SUCCESS)
}
