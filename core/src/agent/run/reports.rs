//! What each sub-agent came to: the report its parent's model reads, the event that tells
//! it, and, for one that ended before its parent's run did, how it ended.

use std::collections::BTreeSet;

use cove_protocol::events::EventKind;

use super::{Agent, LiveRun};
use crate::agent::outcome::{RunError, RunOutcome};
use crate::format::thousands;
use crate::store::{MessageKind, PauseKind, RunState, Thread};

/// Tools whose summary is a path they write.
const WRITES: &[&str] = &[
    "create_file",
    "str_replace",
    "full_file_rewrite",
    "delete_file",
];

/// What one sub-agent came to.
pub(super) struct Report {
    pub(super) n: u32,
    pub(super) thread: Thread,
    /// How its run ended, or why it failed.
    pub(super) outcome: Result<RunOutcome, String>,
    pub(super) secs: f64,
    /// A forked sub-agent's changes, as its report shows them.
    pub(super) changes: Option<String>,
}

impl Report {
    /// A sub-agent that could not be taken up.
    pub(super) fn failed(n: u32, thread: &Thread, why: String) -> Report {
        Report {
            n,
            thread: thread.clone(),
            outcome: Err(why),
            secs: 0.0,
            changes: None,
        }
    }
}

impl Agent {
    /// The report of a sub-agent whose run ended before its parent's did (killed, or
    /// paused on a question), as it ended; none when it is to run on: its run was cut short
    /// by a kill, or it has the answer to its question.
    pub(super) fn ended_child(&self, n: u32, thread: &Thread) -> Result<Option<Report>, RunError> {
        let Some(run) = self.store.last_run(&thread.id)? else {
            return Ok(None);
        };
        let outcome = match (run.status, run.pause_kind) {
            (RunState::Running, _) => return Ok(None),
            (RunState::Completed, _) => Ok(RunOutcome::Completed {
                text: self
                    .store
                    .messages(&thread.id)?
                    .into_iter()
                    .rev()
                    .find(|m| m.content["type"] == "complete")
                    .and_then(|m| m.content["text"].as_str().map(String::from)),
                attachments: Vec::new(),
            }),
            (RunState::Paused, Some(PauseKind::Ask)) if self.has_answer(&thread.id)? => {
                return Ok(None);
            }
            (RunState::Paused, kind) => Ok(RunOutcome::Paused {
                waits_for: kind.unwrap_or(PauseKind::Permission),
                text: run.pause_text.clone().unwrap_or_default(),
                attachments: Vec::new(),
            }),
            // A stop that was not the family's limit: its parent's own, cut short.
            (RunState::Stopped, _) if run.error.is_some() => return Ok(None),
            (RunState::Stopped, _) => Ok(RunOutcome::Stopped),
            (RunState::Failed, _) => Err(run.error.clone().unwrap_or_else(|| "it failed".into())),
        };
        Ok(Some(Report {
            n,
            thread: thread.clone(),
            outcome,
            secs: run
                .ended_at
                .map_or(0.0, |end| (end - run.started_at) as f64 / 1000.0),
            changes: None,
        }))
    }

    /// Whether a sub-agent paused on its question has the answer: the person's, stored as
    /// its newest message by no run of its own.
    fn has_answer(&self, thread: &str) -> Result<bool, RunError> {
        Ok(self
            .store
            .messages(thread)?
            .iter()
            .rev()
            .find(|m| m.is_llm_message)
            .is_some_and(|m| m.kind == MessageKind::User && m.run_id.is_none()))
    }

    /// The files a sub-agent's file tools wrote, in all its runs, as its events told it.
    fn wrote_by(&self, thread: &str) -> BTreeSet<String> {
        let messages = self.store.messages(thread).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read what a sub-agent wrote");
            Vec::new()
        });
        messages
            .iter()
            .filter(|m| m.content["type"] == "tool_started")
            .filter(|m| {
                m.content["tool"]
                    .as_str()
                    .is_some_and(|t| WRITES.contains(&t))
            })
            .filter_map(|m| m.content["summary"].as_str())
            .filter(|path| !path.is_empty())
            .map(String::from)
            .collect()
    }

    /// What a sub-agent's runs (all of them: a question splits its work in two) took.
    fn usage_of(&self, report: &Report) -> (u64, Option<f64>) {
        let runs = self.store.runs(&report.thread.id).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read a sub-agent's runs");
            Vec::new()
        });
        let mut tokens = 0;
        let mut cost: Option<f64> = None;
        for run in runs {
            if let Ok(usage) = self.store.run_usage(&run.id) {
                tokens += usage.tokens.input_tokens + usage.tokens.output_tokens;
                if let Some(spent) = usage.cost {
                    *cost.get_or_insert(0.0) += spent;
                }
            }
        }
        (tokens, cost.filter(|_| self.config.price.is_some()))
    }

    pub(super) fn announce_finished(&self, live: &LiveRun, report: &Report) {
        let (tokens, cost) = self.usage_of(report);
        let (status, answer) = status_of(&report.outcome);
        live.emitter.emit(EventKind::AgentFinished {
            agent: report.n,
            thread: report.thread.id.clone(),
            status: status.to_string(),
            answer,
            tokens,
            cost,
        });
    }

    /// What the parent's model reads of one sub-agent.
    pub(super) fn report_text(&self, report: &Report) -> String {
        let (tokens, cost) = self.usage_of(report);
        let (status, answer) = status_of(&report.outcome);
        let cost = cost.map(|c| format!(", ${c:.4}")).unwrap_or_default();
        let mut text = format!(
            "Agent {} (thread {}): {status} after {:.1} s, {} tokens{cost}.",
            report.n,
            report.thread.id,
            report.secs,
            thousands(tokens)
        );
        match answer {
            Some(answer) => text.push_str(&format!("\n{answer}")),
            None => text.push_str("\nIt gave no answer."),
        }
        let wrote = self.wrote_by(&report.thread.id);
        if !wrote.is_empty() {
            let files: Vec<&str> = wrote.iter().map(String::as_str).collect();
            text.push_str(&format!(
                "\nFiles its file tools wrote: {}.",
                files.join(", ")
            ));
        }
        text
    }
}

/// A sub-agent's run's status, and what it said.
fn status_of(outcome: &Result<RunOutcome, String>) -> (&'static str, Option<String>) {
    match outcome {
        Ok(RunOutcome::Completed { text, .. }) => ("completed", text.clone()),
        Ok(RunOutcome::Paused {
            waits_for: PauseKind::Ask,
            text,
            ..
        }) => ("asks", Some(text.clone())),
        Ok(RunOutcome::Paused { text, .. }) => (
            "paused",
            Some(format!(
                "It stopped to wait for {text}, which no one can give it here."
            )),
        ),
        Ok(RunOutcome::Stopped) => (
            "stopped",
            Some("It reached the family's limit (cost or iterations) before it was done.".into()),
        ),
        Ok(RunOutcome::Interrupted) => ("interrupted", None),
        Err(why) => ("failed", Some(why.clone())),
    }
}

/// The question (and its files) a sub-agent stopped on for the person, if it did.
pub(super) fn question_of(report: &Report) -> Option<(&str, &[String])> {
    match &report.outcome {
        Ok(RunOutcome::Paused {
            waits_for: PauseKind::Ask,
            text,
            attachments,
        }) => Some((text, attachments)),
        _ => None,
    }
}
