//! Rendering run events: JSON lines, or a terminal view with streamed text, one line per tool
//! call, a spinner while waiting and the final answer.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cove_protocol::events::{EventKind, RunEvent, RunStatus};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

#[derive(Debug, Default)]
struct SpinnerState {
    label: Option<String>,
    drawn: bool,
    frame: usize,
}

/// A spinner on stderr, drawn only when stderr is a terminal.
#[derive(Debug, Clone)]
struct Spinner {
    state: Arc<Mutex<SpinnerState>>,
    enabled: bool,
}

impl Spinner {
    fn new(enabled: bool) -> Spinner {
        let spinner = Spinner {
            state: Arc::new(Mutex::new(SpinnerState::default())),
            enabled,
        };
        if enabled {
            let state = spinner.state.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                loop {
                    tick.tick().await;
                    let Ok(mut s) = state.lock() else { return };
                    if let Some(label) = s.label.clone() {
                        s.frame = (s.frame + 1) % FRAMES.len();
                        let mut err = std::io::stderr().lock();
                        let _ = write!(err, "\r\x1b[2K{} {label}", FRAMES[s.frame]);
                        let _ = err.flush();
                        s.drawn = true;
                    }
                }
            });
        }
        spinner
    }

    fn set(&self, label: Option<&str>) {
        if !self.enabled {
            return;
        }
        if let Ok(mut s) = self.state.lock() {
            s.label = label.map(str::to_string);
            if s.drawn {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K");
                let _ = err.flush();
                s.drawn = false;
            }
        }
    }
}

/// Renders the events of runs.
pub struct Renderer {
    json: bool,
    color: bool,
    spinner: Spinner,
    /// Text was printed without a final newline.
    mid_line: bool,
    /// (truncated, omitted) of the last compression shown.
    last_compression: Option<(u32, u32)>,
}

fn first_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max - 1).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

impl Renderer {
    /// A renderer; `json` prints each event as a line of JSON.
    pub fn new(json: bool) -> Renderer {
        let terminal = std::io::stdout().is_terminal();
        Renderer {
            json,
            color: terminal && std::env::var_os("NO_COLOR").is_none(),
            spinner: Spinner::new(!json && std::io::stderr().is_terminal()),
            mid_line: false,
            last_compression: None,
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn line(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        if self.mid_line {
            let _ = writeln!(out);
            self.mid_line = false;
        }
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }

    /// Renders one event.
    pub fn event(&mut self, event: &RunEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        self.spinner.set(None);
        match &event.kind {
            EventKind::ThreadRunStart { model, sandbox } => {
                let text = self.paint(
                    "2",
                    &format!("thread {} · {model} · {sandbox}", event.thread_id),
                );
                self.line(&text);
                self.spinner.set(Some("thinking"));
            }
            EventKind::AssistantResponseStart { .. } => self.spinner.set(Some("thinking")),
            EventKind::AssistantText { text } => {
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{text}");
                let _ = out.flush();
                self.mid_line = !text.ends_with('\n');
            }
            EventKind::LlmRetry {
                attempt,
                delay_ms,
                reason,
            } => {
                let text = self.paint(
                    "33",
                    &format!(
                        "  ↻ {} (attempt {attempt}); retrying in {:.1} s",
                        first_line(reason, 100),
                        *delay_ms as f64 / 1000.0
                    ),
                );
                self.line(&text);
            }
            EventKind::ToolStarted { tool, summary, .. } => {
                let about = summary
                    .as_deref()
                    .map(|s| format!(" {s}"))
                    .unwrap_or_default();
                let text = self.paint("36", &format!("  → {tool}{about}"));
                self.line(&text);
                self.spinner.set(Some(tool));
            }
            EventKind::ToolCompleted { tool, output, .. } => {
                let text = self.paint("32", &format!("  ✓ {tool}: {}", first_line(output, 100)));
                self.line(&text);
            }
            EventKind::ToolFailed { tool, error, .. } => {
                let text = self.paint("31", &format!("  ✗ {tool}: {}", first_line(error, 140)));
                self.line(&text);
            }
            EventKind::Ask { text, attachments } => {
                let head = self.paint("1;35", "? The agent asks:");
                self.line(&format!("\n{head} {text}"));
                for a in attachments {
                    self.line(&format!("  · {a}"));
                }
            }
            EventKind::Takeover {
                text,
                url,
                token,
                expires_at,
            } => {
                let head = self.paint("1;35", "! Please take over the browser:");
                self.line(&format!("\n{head} {text}"));
                if let Some(url) = url {
                    let link = self.paint("4", url);
                    self.line(&format!("  Open  {link}"));
                }
                if let Some(token) = token {
                    let until = expires_at
                        .as_deref()
                        .map(|t| format!(" (valid until {t})"))
                        .unwrap_or_default();
                    self.line(&format!("  Token {token}{until}"));
                }
                self.line(&format!(
                    "  Press \"Done — hand back to the agent\" on that page when you are finished,\n  or answer from any terminal: cove reply {} \"...\"",
                    event.thread_id
                ));
                self.spinner
                    .set(Some("waiting for the browser to be handed back"));
            }
            EventKind::TakeoverEnded { reason, note } => {
                let how = match reason.as_str() {
                    "handed_back" => "handed back",
                    "replied" => "answered with cove reply",
                    "expired" => "the takeover expired",
                    "released" => "ended from outside",
                    other => other,
                };
                let note = note
                    .as_deref()
                    .map(|n| format!(": {}", first_line(n, 120)))
                    .unwrap_or_default();
                let text = self.paint("35", &format!("  ⇦ the browser is back ({how}){note}"));
                self.line(&text);
                self.spinner.set(Some("thinking"));
            }
            EventKind::Complete { text, attachments } => {
                let head = self.paint("1;32", "✔ Done.");
                self.line(&format!("\n{head} {}", text.as_deref().unwrap_or("")));
                for a in attachments {
                    self.line(&format!("  · {a}"));
                }
            }
            EventKind::ContextCompressed {
                tokens_before,
                tokens_after,
                truncated,
                omitted,
                ..
            } => {
                // Compression repeats every call once a run is long; say so when it changes.
                let shape = (*truncated, *omitted);
                if self.last_compression != Some(shape) {
                    self.last_compression = Some(shape);
                    let text = self.paint(
                        "2",
                        &format!(
                            "  ⋯ context {tokens_before} → {tokens_after} tokens ({truncated} messages truncated, {omitted} left out; expand_message reads them)"
                        ),
                    );
                    self.line(&text);
                }
            }
            EventKind::ContextSummarized {
                first_message,
                last_message,
                messages,
            } => {
                let text = self.paint(
                    "2",
                    &format!(
                        "  ⋯ summarized {messages} older messages ({first_message}–{last_message}) to fit the context"
                    ),
                );
                self.line(&text);
            }
            EventKind::Finish { .. } => {}
            EventKind::Error { message, fatal } => {
                let label = if *fatal { "error" } else { "warning" };
                let text = self.paint("31", &format!("{label}: {message}"));
                self.line(&text);
            }
            EventKind::ThreadRunEnd { status } => {
                if self.mid_line {
                    self.line("");
                }
                let word = match status {
                    RunStatus::Completed => "completed",
                    RunStatus::Paused => "paused",
                    RunStatus::Stopped => "stopped",
                    RunStatus::Failed => "failed",
                };
                let text = self.paint("2", &format!("run {} {word}", event.run_id));
                self.line(&text);
            }
        }
    }

    /// Stops the spinner (the run is over).
    pub fn done(&mut self) {
        self.spinner.set(None);
        if self.mid_line {
            self.line("");
        }
    }
}
