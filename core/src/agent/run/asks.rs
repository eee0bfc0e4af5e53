//! A sub-agent's question. The sub-agent's run pauses on it; once the sub-agents beside it
//! have ended, the parent's run pauses with the question as its own, on its own thread, so
//! the person answers it once, where they answer the parent. The parent's next run takes
//! its sub-agents up, and the answer goes to the one that asked, as that sub-agent's
//! message: the parent's conversation, which waits for the sub-agents' result, never sees
//! it. Several questions are put one at a time.

use cove_protocol::events::EventKind;
use serde_json::{Value, json};

use super::reports::Report;
use super::{Agent, LiveRun};
use crate::agent::outcome::{RunError, RunOutcome};
use crate::llm::ChatMessage;
use crate::store::{Decision, PauseKind, RequestKind};

/// The key of a question's stored arguments that names the sub-agent's thread.
const ASKER: &str = "agent_thread";

impl Agent {
    /// Pauses the parent's run on the question sub-agent `report` stopped on (its
    /// `question`, with these files).
    pub(super) fn ask_for_child(
        &self,
        live: &LiveRun,
        report: &Report,
        (question, attachments): (&str, &[String]),
    ) -> Result<RunOutcome, RunError> {
        let text = format!(
            "Sub-agent {} ({}) asks: {question}",
            report.n, report.thread.title
        );
        // A forked sub-agent's files are in its own copy, not where the person looks.
        let attachments = match report.thread.fork {
            Some(_) => Vec::new(),
            None => attachments.to_vec(),
        };
        // One question waits at a time: one the person left unanswered is asked again here.
        self.store
            .close_requests(&live.thread.id, RequestKind::Ask, Decision::Withdrawn, None)?;
        self.store.open_pause(
            &live.thread.id,
            &live.run_id,
            RequestKind::Ask,
            "ask",
            &text,
            json!({
                "text": text,
                "attachments": attachments,
                "agent": report.n,
                ASKER: report.thread.id,
            }),
        )?;
        live.emitter.emit(EventKind::Ask {
            text: text.clone(),
            attachments: attachments.clone(),
            agent_thread: Some(report.thread.id.clone()),
        });
        Ok(RunOutcome::Paused {
            waits_for: PauseKind::Ask,
            text,
            attachments,
        })
    }

    /// Gives the answer `input` holds to the sub-agent whose question waits on this
    /// thread, taking it from `input`: stored as the sub-agent's next message as the
    /// question closes, so neither a stop nor a kill loses it or asks again. Nothing when no
    /// such question waits, or no answer came (the question is then asked again).
    pub(super) fn answer_for_child(
        &self,
        live: &LiveRun,
        input: &mut Option<ChatMessage>,
    ) -> Result<(), RunError> {
        if input.is_none() {
            return Ok(());
        }
        let asker = self
            .store
            .waiting_requests(&live.thread.id)?
            .into_iter()
            .filter(|r| r.kind == RequestKind::Ask)
            .find_map(|r| {
                r.arguments
                    .get(ASKER)
                    .and_then(Value::as_str)
                    .map(String::from)
            });
        let (Some(asker), Some(message)) = (asker, input.take()) else {
            return Ok(());
        };
        self.store
            .answer_sub_agent(&live.thread.id, &asker, &message)?;
        // The person's answer shows where they gave it.
        live.emitter.emit(EventKind::UserMessage {
            text: message.text(),
            says: None,
        });
        Ok(())
    }
}
