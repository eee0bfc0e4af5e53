//! Rendering run events: JSON lines, or a terminal view with streamed text, one line per tool
//! call, a spinner while waiting and the final answer.

mod spinner;
mod tool_output;

use std::io::{IsTerminal, Write};
#[cfg(test)]
use std::time::Duration;

use cove_protocol::events::{EventKind, RunEvent, RunStatus, TokenUsage};

use super::printer::json_line;
use spinner::Spinner;

/// Renders the events of runs, and the lines a run ends with, into `O` and (problems) `E`:
/// stdout and stderr, or buffers in tests.
pub struct Renderer<O: Write, E: Write> {
    out: O,
    err: E,
    json: bool,
    color: bool,
    spinner: Spinner,
    /// Text was printed without a final newline.
    mid_line: bool,
    /// (truncated, omitted) of the last compression shown.
    last_compression: Option<(u32, u32)>,
    /// What the spinner says while the model answers (`waiting for provider/model`).
    waiting_for_model: String,
    /// Permission requests are answered at this terminal too.
    asks_here: bool,
    /// Sub-agents started and not yet finished.
    agents_working: u32,
}

/// Columns a permission request is wrapped to.
const WRAP_COLUMNS: usize = 96;

/// `text` broken into lines of at most `width` characters, at spaces where it can, nothing
/// left out.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        let used = line.chars().count();
        if used > 0 && used + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        while word.len() > width {
            let rest = word.split_off(width);
            let part: String = word.into_iter().collect();
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(part);
            word = rest;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.extend(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
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

impl Renderer<std::io::Stdout, std::io::Stderr> {
    /// The terminal's renderer: colour and a spinner when stdout and stderr are terminals;
    /// `json` prints each event as a line of JSON instead.
    pub fn terminal(json: bool) -> Self {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let spinner = !json && std::io::stderr().is_terminal();
        Renderer::new(std::io::stdout(), std::io::stderr(), json, color, spinner)
    }
}

impl<O: Write, E: Write> Renderer<O, E> {
    /// A renderer into `out`, with problems into `err`.
    pub fn new(out: O, err: E, json: bool, color: bool, spinner: bool) -> Self {
        Renderer {
            out,
            err,
            json,
            color,
            spinner: Spinner::new(spinner),
            mid_line: false,
            last_compression: None,
            waiting_for_model: "waiting for the model".into(),
            agents_working: 0,
            asks_here: false,
        }
    }

    /// Whether the person is asked at this terminal (or only told how to answer).
    pub fn asks_here(mut self, asks: bool) -> Self {
        self.asks_here = asks;
        self
    }

    /// What was written to each stream (for tests).
    #[cfg(test)]
    fn into_inner(self) -> (O, E) {
        let Renderer { out, err, .. } = self;
        (out, err)
    }

    /// The spinner while sub-agents work: how many still do.
    fn agents_spinner(&mut self) {
        if self.agents_working > 0 {
            let label = format!("sub-agents working: {}", self.agents_working);
            self.spinner.set(Some(&label));
        } else {
            self.spinner.set(Some(&self.waiting_for_model));
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
        if self.mid_line {
            let _ = writeln!(self.out);
            self.mid_line = false;
        }
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    /// Renders one event.
    pub fn event(&mut self, event: &RunEvent) {
        if self.json {
            let _ = json_line(&mut self.out, event);
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
                self.waiting_for_model = format!("waiting for {model}");
                self.spinner.set(Some(&self.waiting_for_model));
            }
            // The person typed it; the terminal shows it already.
            EventKind::UserMessage { .. } => {}
            EventKind::ThreadRewound { checkpoint, .. } => {
                let text = self.paint("2", &format!("rewound to {checkpoint}"));
                self.line(&text);
            }
            EventKind::AssistantResponseStart { .. } => {
                self.spinner.set(Some(&self.waiting_for_model));
            }
            EventKind::AssistantText { text } => {
                let _ = write!(self.out, "{text}");
                let _ = self.out.flush();
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
                        first_line(reason, 200),
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
                self.spinner.set(Some(&format!("{tool}{about}")));
            }
            EventKind::ToolCompleted { tool, output, .. } => {
                let shown = tool_output::shown(tool, output);
                let text = if shown.nonzero_exit {
                    self.paint("33", &format!("  ! {tool}: {}", shown.headline))
                } else {
                    self.paint("32", &format!("  ✓ {tool}: {}", shown.headline))
                };
                self.line(&text);
                if shown.hidden > 0 {
                    let more = self.paint("2", &format!("    ⋮ {} more lines", shown.hidden));
                    self.line(&more);
                }
                for line in &shown.tail {
                    let line = self.paint("2", &format!("    │ {line}"));
                    self.line(&line);
                }
            }
            EventKind::ToolFailed { tool, error, .. } => {
                let text = self.paint("31", &format!("  ✗ {tool}: {}", first_line(error, 140)));
                self.line(&text);
            }
            EventKind::Ask {
                text,
                attachments,
                agent_thread,
            } => {
                // A sub-agent's question names its asker itself.
                let head = self.paint(
                    "1;35",
                    if agent_thread.is_some() {
                        "?"
                    } else {
                        "? The agent asks:"
                    },
                );
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
                self.spinner.set(Some(&self.waiting_for_model));
            }
            EventKind::WaitingForEvents {
                waits_for,
                since,
                until,
            } => {
                let most = u64::try_from((until - since).max(0) / 1000).unwrap_or(0);
                let text = self.paint(
                    "35",
                    &format!(
                        "  ⏳ waiting for: {} (at most {})",
                        first_line(waits_for, 100),
                        cove_core::format::duration_words(most)
                    ),
                );
                self.line(&text);
                self.spinner
                    .set(Some(&format!("waiting for: {}", first_line(waits_for, 40))));
            }
            EventKind::WaitEnded { text, timed_out } => {
                let head = if *timed_out {
                    "the wait ran out"
                } else {
                    "woke"
                };
                let shown = self.paint("35", &format!("  ⇦ {head}"));
                self.line(&shown);
                const SHOWN_LINES: usize = 8;
                for line in text.lines().take(SHOWN_LINES) {
                    let line = self.paint("2", &format!("    │ {}", first_line(line, 140)));
                    self.line(&line);
                }
                let more = text.lines().count().saturating_sub(SHOWN_LINES);
                if more > 0 {
                    let more = self.paint("2", &format!("    ⋮ {more} more lines"));
                    self.line(&more);
                }
                self.spinner.set(Some(&self.waiting_for_model));
            }
            EventKind::AgentSpawned {
                agent,
                thread,
                task,
            } => {
                self.agents_working += 1;
                let text = self.paint(
                    "36",
                    &format!(
                        "    ↳ agent {agent} · {} (thread {thread})",
                        first_line(task, 100)
                    ),
                );
                self.line(&text);
                self.agents_spinner();
            }
            EventKind::AgentProgress { agent, doing, .. } => {
                let text = self.paint(
                    "2",
                    &format!("    ↳ agent {agent}: {}", first_line(doing, 120)),
                );
                self.line(&text);
                self.agents_spinner();
            }
            EventKind::AgentFinished {
                agent,
                status,
                answer,
                tokens,
                cost,
                ..
            } => {
                self.agents_working = self.agents_working.saturating_sub(1);
                let cost = cost.map(|c| format!(" · ${c:.4}")).unwrap_or_default();
                let said = answer
                    .as_deref()
                    .map(|a| format!(": {}", first_line(a, 100)))
                    .unwrap_or_default();
                let colour = if status == "completed" { "32" } else { "33" };
                let text = self.paint(
                    colour,
                    &format!(
                        "    ↳ agent {agent} {status} · {} tokens{cost}{said}",
                        cove_core::format::thousands(*tokens)
                    ),
                );
                self.line(&text);
                self.agents_spinner();
            }
            EventKind::PlanProposed { plan } => {
                let head = self.paint("1;36", &format!("▤ Plan, version {}:", plan.version));
                self.line(&format!("\n{head}"));
                for line in plan_lines(plan) {
                    self.line(&format!("  {line}"));
                }
            }
            EventKind::PlanUpdated { plan, note } => {
                let note = note
                    .as_deref()
                    .map(|n| format!(" ({})", first_line(n, 120)))
                    .unwrap_or_default();
                let head = self.paint("36", &format!("▤ Plan{note}:"));
                self.line(&head);
                for line in plan_lines(plan) {
                    self.line(&format!("  {line}"));
                }
            }
            EventKind::PermissionRequest {
                request_id,
                summary,
                why,
                ..
            } => {
                let head = self.paint("1;33", "? Permission needed");
                // The whole call and every reason: what is allowed is what is shown.
                let mut text = format!("\n{head} (request {request_id}):\n");
                for line in wrap(summary, WRAP_COLUMNS) {
                    text.push_str(&format!("  {line}\n"));
                }
                text.push_str("  because:\n");
                for reason in why.lines().filter(|l| !l.trim().is_empty()) {
                    for (n, line) in wrap(reason.trim(), WRAP_COLUMNS - 4).iter().enumerate() {
                        let mark = if n == 0 { "-" } else { " " };
                        text.push_str(&format!("    {mark} {line}\n"));
                    }
                }
                let whence = if self.asks_here {
                    "answer here, or from any terminal"
                } else {
                    "answer from any terminal"
                };
                text.push_str(&format!(
                    "  {whence}: cove permit {} {request_id} allow_once|allow_for_thread|deny [\"reason\"]",
                    event.thread_id
                ));
                self.line(&text);
                self.spinner.set(Some("waiting for permission"));
            }
            EventKind::PermissionDecided {
                request_id,
                decision,
                reason,
                ..
            } => {
                let reason = reason
                    .as_deref()
                    .map(|r| format!(": {}", first_line(r, 120)))
                    .unwrap_or_default();
                let (colour, said) = match decision.as_str() {
                    "deny" => ("31", "denied"),
                    "allow_for_thread" => ("32", "allowed for this thread"),
                    _ => ("32", "allowed once"),
                };
                let text = self.paint(colour, &format!("  request {request_id} {said}{reason}"));
                self.line(&text);
                self.spinner.set(Some("working"));
            }
            EventKind::McpStatus {
                server,
                status,
                tools,
                error,
            } => {
                // A server that works is worth a dim line; one that failed, a clear one.
                let text = match (status.as_str(), error) {
                    ("failed", Some(error)) => self.paint(
                        "33",
                        &format!("  ! MCP server {server} failed: {}", first_line(error, 400)),
                    ),
                    ("disabled", _) => self.paint("2", &format!("  MCP server {server}: disabled")),
                    _ => self.paint("2", &format!("  MCP server {server}: {tools} tools")),
                };
                self.line(&text);
                self.spinner.set(Some(&self.waiting_for_model));
            }
            EventKind::SkillLoaded { name, path, files } => {
                let text = self.paint(
                    "36",
                    &format!("  ◆ skill {name} loaded ({files} files in {path})"),
                );
                self.line(&text);
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
            // The run's failure is said once, on stderr, when it ends (`failed`).
            EventKind::Error { fatal: true, .. } => {}
            EventKind::Error { message, fatal } => {
                let label = if *fatal { "error" } else { "warning" };
                let text = self.paint("31", &format!("{label}: {message}"));
                self.line(&text);
            }
            EventKind::ThreadRunEnd {
                status,
                usage,
                cost,
                duration_ms,
            } => {
                if self.mid_line {
                    self.line("");
                }
                let word = match status {
                    RunStatus::Completed => "completed",
                    RunStatus::Paused => "paused",
                    RunStatus::Stopped => "stopped",
                    RunStatus::Failed => "failed",
                };
                let text = self.paint(
                    "2",
                    &format!(
                        "run {} {word} · {}",
                        event.run_id,
                        spend(usage, *cost, Some(*duration_ms))
                    ),
                );
                self.line(&text);
            }
        }
    }

    /// Stops the spinner and ends a line the text left open (the run is over).
    pub fn done(&mut self) {
        self.spinner.set(None);
        if self.mid_line {
            let _ = writeln!(self.out);
            let _ = self.out.flush();
            self.mid_line = false;
        }
    }

    /// A line for the person at the terminal (none in JSON mode).
    fn say(&mut self, text: &str) {
        if !self.json {
            self.line(text);
        }
    }

    /// A short remark for the person at the terminal, between events.
    pub fn note(&mut self, text: &str) {
        self.say(&format!("  {text}"));
    }

    /// A problem, on the error stream.
    fn complain(&mut self, text: &str) {
        let _ = writeln!(self.err, "cove: {text}");
        let _ = self.err.flush();
    }

    /// The run was interrupted (Ctrl-C): how to go on (said in JSON mode too: nothing else
    /// tells a script).
    pub fn interrupted(&mut self, thread: &str) {
        self.done();
        self.complain(&format!("interrupted; continue with: cove resume {thread}"));
    }

    /// Asks the person at the terminal for the answer the paused run waits on (the line
    /// they type follows the prompt).
    pub fn prompt_for_answer(&mut self, takeover: bool) {
        self.done();
        let prompt = if takeover {
            "When you are done in the browser, press Enter (or type a note): "
        } else {
            "Your answer (empty to stop here): "
        };
        let _ = write!(self.out, "{prompt}");
        let _ = self.out.flush();
    }

    /// The person left a prompt with Ctrl-C or the end of input: the prompt's line ends.
    pub fn left_prompt(&mut self) {
        if !self.json {
            let _ = writeln!(self.out);
            let _ = self.out.flush();
        }
    }

    /// Asks the person at the terminal about permission request `id` (shown above it).
    pub fn prompt_permission(&mut self, id: &str) {
        self.done();
        let _ = write!(
            self.out,
            "  Allow request {id}? o = once, t = for this thread, d = deny (a reason may follow): "
        );
        let _ = self.out.flush();
    }

    /// Asks the person at the terminal about the plan shown above.
    pub fn prompt_for_plan(&mut self) {
        self.done();
        let _ = write!(
            self.out,
            "Approve the plan? a = approve, e = edit it first, r = reject (a reason may follow; without one the thread ends): "
        );
        let _ = self.out.flush();
    }

    /// The plan waits for an approval nobody gave at the terminal.
    pub fn approve_with(&mut self, thread: &str) {
        self.say(&format!(
            "The plan waits for your approval: cove approve {thread} [--edit FILE], or cove reject {thread} \"why\""
        ));
    }

    /// Calls wait for permissions nobody could give at the terminal: how to give them.
    pub fn permit_with(&mut self, thread: &str, waiting: &[cove_core::store::Request]) {
        let requests: Vec<&cove_core::store::Request> = waiting
            .iter()
            .filter(|r| r.kind == cove_core::store::RequestKind::Permission)
            .collect();
        self.say("The run waits for your permission:");
        for r in &requests {
            self.say(&format!(
                "  cove permit {thread} {} allow_once|allow_for_thread|deny   ({})",
                r.id,
                first_line(&r.summary, 60)
            ));
        }
        self.say(&format!("then continue with: cove resume {thread}"));
    }

    /// A remark about the plan between runs.
    pub fn plan_note(&mut self, text: &str) {
        self.say(text);
    }

    /// The run waits for an answer nobody gave at the terminal.
    pub fn answer_with(&mut self, thread: &str) {
        self.say(&format!("Answer with: cove reply {thread} \"...\""));
    }

    /// The run failed (in JSON mode its `error` event says so).
    pub fn failed(&mut self, error: &dyn std::fmt::Display) {
        if !self.json {
            self.complain(&error.to_string());
        }
    }

    /// Where the local sandbox's files are.
    pub fn workspace(&mut self, path: &std::path::Path) {
        self.say(&format!("workspace: {}", path.display()));
    }
}

/// A plan's goal and steps as terminal lines, each step with its status.
fn plan_lines(plan: &cove_protocol::plan::Plan) -> Vec<String> {
    plan.to_markdown().lines().map(str::to_string).collect()
}

/// What model calls took and cost, in one line: `2 calls · 12,345 tokens in (10,000 cached)
/// · 456 out · $0.0123 · 42.1 s` (the cost only when the model's price is known).
pub(super) fn spend(usage: &TokenUsage, cost: Option<f64>, duration_ms: Option<u64>) -> String {
    let mut out = format!(
        "{} call{} · {} tokens in",
        usage.calls,
        if usage.calls == 1 { "" } else { "s" },
        cove_core::format::thousands(usage.input_tokens)
    );
    if usage.cached_tokens > 0 {
        out.push_str(&format!(
            " ({} cached)",
            cove_core::format::thousands(usage.cached_tokens)
        ));
    }
    out.push_str(&format!(
        " · {} out",
        cove_core::format::thousands(usage.output_tokens)
    ));
    if let Some(cost) = cost {
        out.push_str(&format!(" · ${cost:.4}"));
    }
    if let Some(ms) = duration_ms {
        out.push_str(&format!(" · {:.1} s", ms as f64 / 1000.0));
    }
    out
}

#[cfg(test)]
mod tests;
