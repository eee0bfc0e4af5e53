//! What a killed run left behind, taken up by the next: answers whose calls have no result
//! get an "interrupted" one (the conversation stays well formed), and calls that waited
//! for permission run once decided.

use cove_protocol::events::EventKind;

use super::{Agent, INTERRUPTED, LiveRun, tool_message};
use crate::agent::answer::{announce_not_run, run_announced};
use crate::agent::outcome::RunError;
use crate::agent::permission::NotRun;
use crate::llm::{ChatMessage, Role};
use crate::toolcall::ToolMode;
use crate::toolcall::xml;
use crate::tools::Control;

impl Agent {
    /// Answers left without results by a run that was killed get an "interrupted" result, so
    /// the conversation stays well formed.
    pub(super) fn repair(&self, thread: &str, run: &str) -> Result<(), RunError> {
        let history = self.store.llm_messages(thread)?;
        let Some(last_assistant) = history.iter().rposition(|(_, m)| m.role == Role::Assistant)
        else {
            return Ok(());
        };
        let after = &history[last_assistant + 1..];
        let assistant = &history[last_assistant].1;
        // Calls a killed run left waiting for permission are taken up again (`replay`) when
        // the run has a gate; without one they are interrupted like the rest.
        let unapplied = self.store.unapplied_requests(thread)?;
        // A wait for events a killed run left is taken up again: its call gets what fires.
        let mut waiting = self.store.event_wait(thread)?.map(|w| w.call_id);
        // So are the sub-agents a killed run left working: its call gets their reports.
        if let Some(spawn) = self.store.spawn_of(thread)? {
            waiting = Some(spawn.call_id);
        }
        let replayed: Vec<&str> = if self.config.permissions.is_some() {
            unapplied.iter().map(|r| r.call_id.as_str()).collect()
        } else {
            for r in &unapplied {
                self.store.mark_applied(thread, &r.id)?;
            }
            Vec::new()
        };
        match self.config.mode {
            ToolMode::Native => {
                for call in &assistant.tool_calls {
                    let answered = after
                        .iter()
                        .any(|(_, m)| m.tool_call_id.as_deref() == Some(&call.id));
                    let waits = waiting.as_deref() == Some(call.id.as_str());
                    if !answered && !replayed.contains(&call.id.as_str()) && !waits {
                        let result =
                            ChatMessage::tool_result(&call.id, &call.name, INTERRUPTED, true);
                        self.store.append_llm(thread, Some(run), &result)?;
                    }
                }
            }
            ToolMode::Xml => {
                let calls = xml::parse_all(&assistant.text())
                    .into_iter()
                    .filter(|e| !matches!(e, xml::XmlEvent::Text(_)))
                    .count();
                let results = after
                    .iter()
                    .filter(|(_, m)| m.role == Role::User && xml::is_result(&m.text()))
                    .count();
                let missing =
                    calls.saturating_sub(results + replayed.len() + usize::from(waiting.is_some()));
                if missing > 0 {
                    let text = xml::result_text(
                        "(interrupted)",
                        false,
                        &format!(
                            "{missing} of the {calls} tool calls of your last answer have no result. {INTERRUPTED}"
                        ),
                    );
                    self.store
                        .append_llm(thread, Some(run), &ChatMessage::user(text))?;
                }
            }
        }
        Ok(())
    }

    /// Takes up the calls an earlier run left waiting for permission: each waits for its
    /// decision (given meanwhile, or still to come), then runs or is refused, and its result
    /// is stored as that call's. What the calls held again (no decision yet, and no one to
    /// give one during the run) are about.
    pub(super) async fn replay(&self, live: &mut LiveRun) -> Result<Vec<String>, RunError> {
        let mut held = Vec::new();
        let Some(gate) = live.gate.clone() else {
            return Ok(held);
        };
        let env = self.tool_env(live);
        // The calls the stored answers made (native calls name theirs).
        let stored_calls: std::collections::HashSet<String> = live
            .history
            .iter()
            .flat_map(|e| e.message().tool_calls.iter().map(|c| c.id.clone()))
            .collect();
        for request in self.store.unapplied_requests(&live.thread.id)? {
            let (call_id, tool, args) = (
                request.call_id.clone(),
                request.tool.clone(),
                request.arguments.clone(),
            );
            if self.config.mode == ToolMode::Native && !stored_calls.contains(&call_id) {
                // The process stopped while the model still wrote the answer that made the
                // call: the answer was never stored, so its call is no one's to run.
                self.store.mark_applied(&live.thread.id, &request.id)?;
                live.emitter.emit(EventKind::Error {
                    message: format!(
                        "a {tool} call waiting for permission belonged to an answer that was never stored (Cove stopped while the model wrote it); it was not run"
                    ),
                    fatal: false,
                });
                continue;
            }
            let result = match gate.resume(request).await {
                Err(NotRun::Refused(refused)) => {
                    let def = self.registry.resolve(&tool).await;
                    announce_not_run(
                        &live.emitter,
                        def.as_ref().map_err(String::as_str),
                        call_id.clone(),
                        tool.clone(),
                        &args,
                        &refused,
                    );
                    refused
                }
                Err(NotRun::Held(waits)) => {
                    if let Some(Control::AwaitsPermission { summary, .. }) = waits.control {
                        held.push(summary);
                    }
                    continue;
                }
                Ok(()) => {
                    let def = self.registry.resolve(&tool).await;
                    let span =
                        crate::agent::spans::tool(&tracing::Span::current(), &call_id, &tool);
                    tracing::Instrument::instrument(
                        run_announced(
                            &live.emitter,
                            def.as_ref().map_err(String::as_str),
                            &env,
                            call_id.clone(),
                            tool.clone(),
                            Ok(args),
                        ),
                        span,
                    )
                    .await
                }
            };
            let message = tool_message(self.config.mode, &call_id, &tool, &result);
            live.record(&self.store, message)?;
            if let Some(state) = result.browser_state {
                live.browser = Some(state);
            }
        }
        Ok(held)
    }
}
