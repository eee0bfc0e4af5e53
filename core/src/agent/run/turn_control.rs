//! How a turn's control ends it: a takeover waited out (or paused on when the sandbox stops
//! answering), a question or a plan that pauses the run, a completion.

use cove_protocol::browser::{BrowserState, StateQuery};
use cove_protocol::events::{EventKind, FinishReason};
use cove_protocol::takeover::TakeoverGrant;
use tracing::Instrument;

use super::{Agent, LiveRun};
use crate::agent::outcome::{RunError, RunOutcome, awaits_permission};
use crate::agent::takeover::{HandBack, wait_for_hand_back};
use crate::context::Entry;
use crate::llm::ChatMessage;
use crate::store::{PauseKind, RequestKind};
use crate::tools::Control;

/// What the run does after a takeover.
enum AfterTakeover {
    /// Goes on, showing the model the browser's fresh state when it could be read.
    Continue(Option<Box<BrowserState>>),
    /// Pauses: the sandbox stopped answering.
    Pause,
}

impl Agent {
    /// The run's outcome when a tool's `control` ends the turn; none when it goes on (a
    /// takeover handed back). `finish` is how the model's answer ended.
    pub(super) async fn apply_control(
        &self,
        live: &mut LiveRun,
        control: Control,
        finish: FinishReason,
    ) -> Result<Option<RunOutcome>, RunError> {
        if let Control::Takeover { text, grant } = &control {
            live.emitter.emit(EventKind::Finish {
                finish_reason: finish,
            });
            return self.after_takeover(live, text, grant).await;
        }
        if let Control::WaitForEvents {
            call_id,
            tool,
            timeout_secs,
            watches,
        } = control
        {
            live.emitter.emit(EventKind::Finish {
                finish_reason: finish,
            });
            let wait = self.new_event_wait(live, call_id, tool, timeout_secs, watches)?;
            return self.await_events(live, wait).await;
        }
        if let Control::SpawnAgents {
            call_id,
            tool,
            agents,
            max_parallel,
        } = control
        {
            live.emitter.emit(EventKind::Finish {
                finish_reason: finish,
            });
            return self
                .run_children(live, (call_id, tool), agents, max_parallel)
                .await;
        }
        live.emitter.emit(EventKind::Finish {
            finish_reason: FinishReason::AgentTerminated,
        });
        Ok(Some(match control {
            Control::Ask { text, attachments } => {
                // A sub-agent's question is put to the person on its parent's thread, once
                // the parent's run has it: nothing waits on its own thread.
                if self.surface.is_none() {
                    self.store.open_pause(
                        &live.thread.id,
                        &live.run_id,
                        RequestKind::Ask,
                        "ask",
                        &text,
                        serde_json::json!({ "text": text, "attachments": attachments }),
                    )?;
                }
                live.emitter.emit(EventKind::Ask {
                    text: text.clone(),
                    attachments: attachments.clone(),
                    agent_thread: None,
                });
                RunOutcome::Paused {
                    waits_for: PauseKind::Ask,
                    text,
                    attachments,
                }
            }
            Control::Plan { draft } => {
                let plan = self.store.propose_plan(&live.thread.id, draft)?;
                let text = plan.to_markdown();
                self.store.open_pause(
                    &live.thread.id,
                    &live.run_id,
                    RequestKind::Plan,
                    "create_plan",
                    &format!("approve plan version {}: {}", plan.version, plan.goal),
                    serde_json::to_value(&plan).unwrap_or_default(),
                )?;
                live.emitter.emit(EventKind::PlanProposed { plan });
                RunOutcome::Paused {
                    waits_for: PauseKind::Plan,
                    text,
                    attachments: Vec::new(),
                }
            }
            // Handled above; kept for exhaustiveness.
            Control::Takeover { text, .. } => RunOutcome::Paused {
                waits_for: PauseKind::Takeover,
                text,
                attachments: Vec::new(),
            },
            Control::AwaitsPermission { summary, .. } => awaits_permission(&[summary]),
            // Handled above; kept for exhaustiveness.
            Control::WaitForEvents { .. } | Control::SpawnAgents { .. } => return Ok(None),
            Control::Complete { text, attachments } => {
                live.emitter.emit(EventKind::Complete {
                    text: text.clone(),
                    attachments: attachments.clone(),
                });
                RunOutcome::Completed { text, attachments }
            }
        }))
    }

    /// Waits out a takeover: the run goes on with the browser's fresh state, or pauses,
    /// still waiting for the browser, when the sandbox stopped answering.
    async fn after_takeover(
        &self,
        live: &mut LiveRun,
        text: &str,
        grant: &TakeoverGrant,
    ) -> Result<Option<RunOutcome>, RunError> {
        match self.await_takeover(live, text, grant).await? {
            AfterTakeover::Continue(state) => {
                live.browser = state.map(|s| *s);
                Ok(None)
            }
            AfterTakeover::Pause => {
                self.store.open_pause(
                    &live.thread.id,
                    &live.run_id,
                    RequestKind::Takeover,
                    "web_browser_takeover",
                    "hand the browser back",
                    serde_json::json!({ "text": text }),
                )?;
                Ok(Some(RunOutcome::Paused {
                    waits_for: PauseKind::Takeover,
                    text: text.to_string(),
                    attachments: Vec::new(),
                }))
            }
        }
    }

    /// Shows the person the takeover link, waits for the browser to come back, and tells the
    /// model how it went.
    async fn await_takeover(
        &self,
        live: &mut LiveRun,
        text: &str,
        grant: &TakeoverGrant,
    ) -> Result<AfterTakeover, RunError> {
        let emitter = live.emitter.clone();
        // Told once the wait is recorded, so an answer from anywhere finds it.
        let announce = move || {
            emitter.emit(EventKind::Takeover {
                text: text.to_string(),
                url: Some(grant.url.clone()),
                token: Some(grant.token.clone()),
                expires_at: Some(grant.expires_at.clone()),
            });
        };
        let back = wait_for_hand_back(
            &self.sandbox,
            &self.store,
            &live.thread.id,
            &live.run_id,
            grant,
            &live.control,
            announce,
        )
        .instrument(crate::agent::spans::wait("takeover"))
        .await?;
        let note = match &back {
            HandBack::HandedBack { note } => note.clone(),
            HandBack::Replied(replies) => replies.last().map(|(_, m)| m.text()),
            HandBack::Lost(problem) => Some(problem.clone()),
            _ => None,
        };
        live.emitter.emit(EventKind::TakeoverEnded {
            reason: back.reason().to_string(),
            note,
        });
        match back {
            HandBack::Lost(problem) => {
                live.emitter.emit(EventKind::Error {
                    message: format!("{problem}; answer with `cove reply` once it is back"),
                    fatal: false,
                });
                return Ok(AfterTakeover::Pause);
            }
            HandBack::Replied(replies) => {
                for (id, message) in replies {
                    live.emitter.emit(EventKind::UserMessage {
                        text: message.text(),
                        says: None,
                    });
                    live.history.push(Entry::new(id, message, &live.counter));
                }
            }
            other => {
                if let Some(text) = other.message() {
                    live.record(&self.store, ChatMessage::user(text))?;
                }
            }
        }
        let query = StateQuery {
            screenshot: self.config.profile.vision,
            ..StateQuery::lean()
        };
        match self.sandbox.browser_state(query).await {
            Ok(state) => Ok(AfterTakeover::Continue(Some(Box::new(state)))),
            Err(e) => {
                live.emitter.emit(EventKind::Error {
                    message: format!("cannot read the browser after the takeover: {e}"),
                    fatal: false,
                });
                // The model reads the state itself when it needs it.
                Ok(AfterTakeover::Continue(None))
            }
        }
    }
}
