//! The run loop: call the model, run its tools, store everything, repeat until the agent is
//! done, asks, or hits the iteration cap.

use std::sync::Arc;

use cove_protocol::browser::{BrowserState, StateQuery};
use cove_protocol::events::{EventKind, FinishReason, RunEvent, RunStatus};
use cove_protocol::takeover::TakeoverGrant;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc::UnboundedSender;

use super::answer::{AnswerSettings, Executor, answer};
use super::events::Emitter;
use super::prompt::{ToolMode, system_prompt};
use super::takeover::{HandBack, wait_for_hand_back};
use super::xml;
use crate::context::summarize::{self, summarize};
use crate::context::{
    Budget, Calibration, ContextError, ContextMode, ContextSettings, Entry, TokenCounter, fit,
    knowledge, temporary_message,
};
use crate::llm::profile::ModelProfile;
use crate::llm::retry::RetryPolicy;
use crate::llm::{ChatMessage, ChatProvider, ChatRequest, LlmError, Role, ToolCall};
use crate::store::{PauseKind, Store, StoreError, Thread};
use crate::tools::{Control, Image, MessageArchive, ToolContext, ToolRegistry, ToolResult};

/// How runs behave.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The model's name at its provider.
    pub(crate) model: String,
    /// `provider/model`, for people and the store.
    pub(crate) model_label: String,
    pub(crate) profile: ModelProfile,
    /// Output cap of each call.
    pub(crate) max_tokens: u32,
    pub(crate) mode: ToolMode,
    pub(crate) max_iterations: u32,
    /// How often an answer cut by the output cap is continued.
    pub(crate) max_auto_continues: u32,
    pub(crate) parallel_tools: bool,
    /// Most tool calls one XML answer may make.
    pub(crate) max_calls_per_answer: usize,
    pub(crate) retry: RetryPolicy,
    /// The workspace as the agent should think of it.
    pub(crate) workspace_label: String,
    /// How the history is kept within the window, and the knowledge budget.
    pub(crate) context: ContextSettings,
}

impl AgentConfig {
    /// The configuration of runs of `model` (`label` is its `provider/model`) in `mode`, with
    /// the defaults: 100 iterations, 25 continues of a cut answer, 10 calls per answer, tools
    /// in parallel, an output cap of the profile's (at most half the window), the default
    /// retries and context handling, the workspace at `/workspace`.
    pub fn new(
        model: impl Into<String>,
        label: impl Into<String>,
        profile: ModelProfile,
        mode: ToolMode,
    ) -> AgentConfig {
        AgentConfig {
            model: model.into(),
            model_label: label.into(),
            max_tokens: profile.max_output.min(profile.context_window / 2).max(256),
            profile,
            mode,
            max_iterations: 100,
            max_auto_continues: 25,
            parallel_tools: true,
            max_calls_per_answer: 10,
            retry: RetryPolicy::default(),
            workspace_label: "/workspace".into(),
            context: ContextSettings::default(),
        }
    }

    /// Output cap of each call.
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = tokens;
        self
    }

    /// Most model calls of one run.
    pub fn max_iterations(mut self, iterations: u32) -> Self {
        self.max_iterations = iterations.max(1);
        self
    }

    /// How often an answer cut by the output cap is continued.
    pub fn max_auto_continues(mut self, continues: u32) -> Self {
        self.max_auto_continues = continues;
        self
    }

    /// Whether the tool calls of one answer run at once.
    pub fn parallel_tools(mut self, parallel: bool) -> Self {
        self.parallel_tools = parallel;
        self
    }

    /// Most tool calls one XML answer may make.
    pub fn max_calls_per_answer(mut self, calls: usize) -> Self {
        self.max_calls_per_answer = calls.max(1);
        self
    }

    /// How failed model calls are retried.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The workspace as the agent should think of it.
    pub fn workspace_label(mut self, label: impl Into<String>) -> Self {
        self.workspace_label = label.into();
        self
    }

    /// How the history is kept within the window, and the knowledge budget.
    pub fn context(mut self, context: ContextSettings) -> Self {
        self.context = context;
        self
    }
}

/// How a run ended (when it did not fail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    Completed {
        text: Option<String>,
        attachments: Vec<String>,
    },
    /// Waiting for the user (`ask`) or for a person to hand the browser back.
    Paused {
        takeover: bool,
        text: String,
        attachments: Vec<String>,
    },
    /// The iteration cap was reached.
    Stopped,
}

/// What the run does after a takeover.
enum AfterTakeover {
    /// Goes on, showing the model the browser's fresh state when it could be read.
    Continue(Option<Box<BrowserState>>),
    /// Pauses: the sandbox stopped answering.
    Pause,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The model could not be used (bad key, unknown model, retries exhausted).
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The conversation cannot be made to fit the model's window.
    #[error(transparent)]
    Context(#[from] ContextError),
}

/// An agent over one sandbox, model and database.
pub struct Agent {
    pub config: AgentConfig,
    pub provider: Arc<dyn ChatProvider>,
    pub store: Arc<Store>,
    pub registry: Arc<ToolRegistry>,
    pub ctx: Arc<ToolContext>,
}

const INTERRUPTED: &str = "This call was interrupted when Cove stopped, before its result was recorded; its effect is unknown. Check before running it again.";

fn xml_result(name: &str, result: &ToolResult) -> ChatMessage {
    ChatMessage::user(xml::result_text(name, result.ok, &result.text))
}

impl Agent {
    /// Runs the thread: stores `input` (if any) as the user's message, then works until the
    /// agent completes, pauses or stops. Events go to `sink` as they happen.
    pub async fn run(
        &self,
        thread: &Thread,
        input: Option<ChatMessage>,
        sink: Option<UnboundedSender<RunEvent>>,
    ) -> Result<RunOutcome, RunError> {
        let run = self.store.start_run(&thread.id)?;
        let emitter = Arc::new(Emitter::new(&thread.id, &run.id, self.store.clone(), sink));
        emitter.emit(EventKind::ThreadRunStart {
            model: self.config.model_label.clone(),
            sandbox: thread.sandbox.clone(),
        });
        let outcome = self.run_inner(thread, &run.id, input, &emitter).await;
        let (status, error, pause) = match &outcome {
            Ok(RunOutcome::Completed { .. }) => (RunStatus::Completed, None, None),
            Ok(RunOutcome::Paused { takeover, text, .. }) => {
                let kind = if *takeover {
                    PauseKind::Takeover
                } else {
                    PauseKind::Ask
                };
                (RunStatus::Paused, None, Some((kind, text.as_str())))
            }
            Ok(RunOutcome::Stopped) => (RunStatus::Stopped, None, None),
            Err(e) => {
                emitter.emit(EventKind::Error {
                    message: e.to_string(),
                    fatal: true,
                });
                (RunStatus::Failed, Some(e.to_string()), None)
            }
        };
        self.store.end_run(&run, status, error.as_deref(), pause)?;
        emitter.emit(EventKind::ThreadRunEnd { status });
        outcome
    }

    /// Answers left without results by a run that was killed get an "interrupted" result, so
    /// the conversation stays well formed.
    fn repair(&self, thread: &str, run: &str) -> Result<(), RunError> {
        let history = self.store.llm_messages(thread)?;
        let Some(last_assistant) = history.iter().rposition(|(_, m)| m.role == Role::Assistant)
        else {
            return Ok(());
        };
        let after = &history[last_assistant + 1..];
        let assistant = &history[last_assistant].1;
        match self.config.mode {
            ToolMode::Native => {
                for call in &assistant.tool_calls {
                    let answered = after
                        .iter()
                        .any(|(_, m)| m.tool_call_id.as_deref() == Some(&call.id));
                    if !answered {
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
                if results < calls {
                    let text = xml::result_text(
                        "(interrupted)",
                        false,
                        &format!(
                            "{} of the {calls} tool calls of your last answer have no result. {INTERRUPTED}",
                            calls - results
                        ),
                    );
                    self.store
                        .append_llm(thread, Some(run), &ChatMessage::user(text))?;
                }
            }
        }
        Ok(())
    }

    /// With `--context summarize`: when the history no longer fits, has the model summarize
    /// its older part, stores the summary, and returns the history with the summary in its
    /// place. A failed summary is reported and the history goes on to be truncated instead.
    #[allow(clippy::too_many_arguments)]
    async fn maybe_summarize(
        &self,
        thread: &Thread,
        run: &str,
        history: Vec<Entry>,
        budget: Budget,
        calibration: &Calibration,
        counter: &TokenCounter,
        emitter: &Arc<Emitter>,
    ) -> Result<Vec<Entry>, RunError> {
        let needed = fit(&history, budget, calibration)
            .map(|f| f.stats.compressed())
            .unwrap_or(true);
        let Some(range) = needed
            .then(|| summarize::summarizable(&history, budget.window / 4))
            .flatten()
        else {
            return Ok(history);
        };
        let part = &history[range.clone()];
        match summarize(
            self.provider.as_ref(),
            &self.config.model,
            part,
            budget.window,
            counter,
            self.config.retry,
        )
        .await
        {
            Ok(text) if !text.is_empty() => {
                // A new summary takes in the previous one, so it covers from where that began.
                let previous = self.store.latest_summary(&thread.id)?;
                let first = match previous {
                    Some(p) if part.iter().any(|e| e.id == p.id) => p.first,
                    _ => part[0].id,
                };
                let last = part[part.len() - 1].id;
                let id = self
                    .store
                    .add_summary(&thread.id, Some(run), first, last, &text)?;
                emitter.emit(EventKind::ContextSummarized {
                    first_message: first,
                    last_message: last,
                    messages: part.len() as u32,
                });
                let summary = crate::store::Summary {
                    id,
                    first,
                    last,
                    text,
                };
                Ok(summarize::apply(history, &summary, counter))
            }
            Ok(_) => {
                emitter.emit(EventKind::Error {
                    message: "the model wrote an empty summary; truncating instead".into(),
                    fatal: false,
                });
                Ok(history)
            }
            Err(e) => {
                emitter.emit(EventKind::Error {
                    message: format!("summarizing the history failed ({e}); truncating instead"),
                    fatal: false,
                });
                Ok(history)
            }
        }
    }

    /// Shows the person the takeover link, waits for the browser to come back, and tells the
    /// model how it went.
    #[allow(clippy::too_many_arguments)]
    async fn await_takeover(
        &self,
        thread: &Thread,
        run: &str,
        text: &str,
        grant: &TakeoverGrant,
        emitter: &Arc<Emitter>,
        counter: &TokenCounter,
        history: &mut Vec<Entry>,
    ) -> Result<AfterTakeover, RunError> {
        emitter.emit(EventKind::Takeover {
            text: text.to_string(),
            url: Some(grant.url.clone()),
            token: Some(grant.token.clone()),
            expires_at: Some(grant.expires_at.clone()),
        });
        let back =
            wait_for_hand_back(&self.ctx.sandbox, &self.store, &thread.id, run, grant).await?;
        let note = match &back {
            HandBack::HandedBack { note } => note.clone(),
            HandBack::Replied(replies) => replies.last().map(|(_, m)| m.text()),
            HandBack::Lost(problem) => Some(problem.clone()),
            _ => None,
        };
        emitter.emit(EventKind::TakeoverEnded {
            reason: back.reason().to_string(),
            note,
        });
        match back {
            HandBack::Lost(problem) => {
                emitter.emit(EventKind::Error {
                    message: format!("{problem}; answer with `cove reply` once it is back"),
                    fatal: false,
                });
                return Ok(AfterTakeover::Pause);
            }
            HandBack::Replied(replies) => {
                for (id, message) in replies {
                    history.push(Entry::new(id, message, counter));
                }
            }
            other => {
                if let Some(text) = other.message() {
                    let message = ChatMessage::user(text);
                    let id = self.store.append_llm(&thread.id, Some(run), &message)?;
                    history.push(Entry::new(id, message, counter));
                }
            }
        }
        let query = StateQuery {
            screenshot: self.ctx.vision,
            content: false,
        };
        match self.ctx.sandbox.browser_state(query).await {
            Ok(state) => Ok(AfterTakeover::Continue(Some(Box::new(state)))),
            Err(e) => {
                emitter.emit(EventKind::Error {
                    message: format!("cannot read the browser after the takeover: {e}"),
                    fatal: false,
                });
                // The model reads the state itself when it needs it.
                Ok(AfterTakeover::Continue(None))
            }
        }
    }

    async fn run_inner(
        &self,
        thread: &Thread,
        run: &str,
        input: Option<ChatMessage>,
        emitter: &Arc<Emitter>,
    ) -> Result<RunOutcome, RunError> {
        self.repair(&thread.id, run)?;
        if let Some(message) = input {
            self.store.append_llm(&thread.id, Some(run), &message)?;
        }
        let counter = TokenCounter::for_model(&self.config.model);
        let window = self.config.profile.context_window as usize;
        let mut system = system_prompt(
            &self.registry,
            self.config.mode,
            &self.config.workspace_label,
        );
        system.push_str(&knowledge::section(
            &self.store.knowledge(Some(&thread.id))?,
            self.config.context.knowledge_budget,
            &counter,
        ));
        let tools = match self.config.mode {
            ToolMode::Native => self.registry.specs(),
            ToolMode::Xml => Vec::new(),
        };
        let settings = AnswerSettings {
            mode: self.config.mode,
            max_calls: self.config.max_calls_per_answer,
            retry: self.config.retry,
        };
        // A page of expand_message takes at most a quarter of what the answer leaves free.
        let page_tokens = window.saturating_sub(self.config.max_tokens as usize) / 4;
        if let Ok(mut archive) = self.ctx.archive.lock() {
            *archive = Some(MessageArchive {
                store: self.store.clone(),
                thread: thread.id.clone(),
                page_chars: (page_tokens * 3).clamp(2_000, 200_000),
            });
        }
        let fixed = counter.text(&system) + counter.tools(&tools) + 4;
        let mut calibration = Calibration::default();
        // Kept in step with the store rather than reloaded each iteration: every message is
        // stored first, then added here, counted once.
        let mut history: Vec<Entry> = self
            .store
            .llm_messages(&thread.id)?
            .into_iter()
            .map(|(id, m)| Entry::new(id, m, &counter))
            .collect();
        if let Some(summary) = self.store.latest_summary(&thread.id)? {
            history = summarize::apply(history, &summary, &counter);
        }
        let mut browser: Option<BrowserState> = None;
        let mut images: Vec<Image> = Vec::new();
        let mut continues = 0;
        for iteration in 1..=self.config.max_iterations {
            self.store.count_iteration(run, iteration)?;
            emitter.emit(EventKind::AssistantResponseStart { iteration });
            if let Some(state) = &browser
                && let Ok(mut seen) = self.ctx.snapshot_id.lock()
            {
                *seen = Some(state.snapshot_id);
            }
            let temp = temporary_message(
                browser.take().as_ref(),
                &std::mem::take(&mut images),
                self.ctx.vision,
            );
            let budget = Budget {
                window,
                max_tokens: self.config.max_tokens as usize,
                fixed: fixed + temp.as_ref().map_or(0, |m| counter.message(m)),
            };
            if self.config.context.mode == ContextMode::Summarize {
                history = self
                    .maybe_summarize(
                        thread,
                        run,
                        history,
                        budget,
                        &calibration,
                        &counter,
                        emitter,
                    )
                    .await?;
            }
            // A provider that still finds the prompt too long (Cove's count was off) gets a
            // tighter count and a harder-compressed prompt, twice at most: never a loop.
            let mut refusals = 0;
            let (answer, counted) = loop {
                let (mut messages, max_tokens, counted) = match self.config.context.mode {
                    ContextMode::Off => (
                        history.iter().map(|e| e.message().clone()).collect(),
                        self.config.max_tokens,
                        budget.fixed + history.iter().map(Entry::tokens).sum::<usize>(),
                    ),
                    _ => {
                        let fitted = fit(&history, budget, &calibration)?;
                        if fitted.stats.compressed() {
                            emitter.emit(EventKind::ContextCompressed {
                                tokens_before: fitted.stats.tokens_before as u64,
                                tokens_after: fitted.stats.tokens_after as u64,
                                arguments_dropped: fitted.stats.arguments_dropped as u32,
                                truncated: fitted.stats.truncated as u32,
                                omitted: fitted.stats.omitted as u32,
                            });
                        }
                        (fitted.messages, fitted.max_tokens as u32, fitted.counted)
                    }
                };
                messages.extend(temp.clone());
                let request = ChatRequest {
                    model: self.config.model.clone(),
                    system: system.clone(),
                    messages,
                    tools: tools.clone(),
                    max_tokens,
                };
                let mut executor = Executor::new(
                    self.ctx.clone(),
                    self.registry.clone(),
                    emitter.clone(),
                    self.config.parallel_tools,
                );
                match answer(
                    self.provider.as_ref(),
                    &request,
                    settings,
                    &mut executor,
                    iteration,
                )
                .await
                {
                    Ok(answer) => break (answer, counted),
                    Err(e @ LlmError::ContextTooLong { .. })
                        if self.config.context.mode != ContextMode::Off && refusals < 2 =>
                    {
                        refusals += 1;
                        calibration.tighten();
                        emitter.emit(EventKind::Error {
                            message: format!("{e}; compressing harder and trying again"),
                            fatal: false,
                        });
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            calibration.observe(counted, answer.usage.input_tokens);

            let mut assistant = ChatMessage::assistant(answer.raw_text.clone());
            if self.config.mode == ToolMode::Native {
                assistant.tool_calls = answer
                    .calls
                    .iter()
                    .map(|c| ToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })
                    .collect();
            }
            if !answer.raw_text.is_empty() || !assistant.tool_calls.is_empty() {
                let id = self.store.append_llm(&thread.id, Some(run), &assistant)?;
                history.push(Entry::new(id, assistant, &counter));
            }

            // Store each result as its tool finishes (after the answer, whatever the order).
            let mut pending: FuturesUnordered<_> = answer
                .calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    let execution = call.execution.clone();
                    async move { (i, execution.await) }
                })
                .collect();
            let mut results: Vec<Option<ToolResult>> = vec![None; answer.calls.len()];
            while let Some((i, result)) = pending.next().await {
                let call = &answer.calls[i];
                let message = match self.config.mode {
                    ToolMode::Native => ChatMessage::tool_result(
                        &call.id,
                        &call.name,
                        result.text.clone(),
                        !result.ok,
                    ),
                    ToolMode::Xml => xml_result(&call.name, &result),
                };
                let id = self.store.append_llm(&thread.id, Some(run), &message)?;
                history.push(Entry::new(id, message, &counter));
                results[i] = Some(result);
            }

            let mut control = None;
            for result in results.into_iter().flatten() {
                if let Some(state) = result.browser_state
                    && browser
                        .as_ref()
                        .is_none_or(|b| b.snapshot_id < state.snapshot_id)
                {
                    browser = Some(state);
                }
                images.extend(result.image);
                if control.is_none() {
                    control = result.control;
                }
            }
            if let Some(Control::Takeover { text, grant }) = &control {
                emitter.emit(EventKind::Finish {
                    finish_reason: answer.finish,
                });
                match self
                    .await_takeover(thread, run, text, grant, emitter, &counter, &mut history)
                    .await?
                {
                    AfterTakeover::Continue(state) => {
                        browser = state.map(|s| *s);
                        continue;
                    }
                    AfterTakeover::Pause => {
                        return Ok(RunOutcome::Paused {
                            takeover: true,
                            text: text.clone(),
                            attachments: Vec::new(),
                        });
                    }
                }
            }
            if let Some(control) = control {
                emitter.emit(EventKind::Finish {
                    finish_reason: FinishReason::AgentTerminated,
                });
                return Ok(match control {
                    Control::Ask { text, attachments } => {
                        emitter.emit(EventKind::Ask {
                            text: text.clone(),
                            attachments: attachments.clone(),
                        });
                        RunOutcome::Paused {
                            takeover: false,
                            text,
                            attachments,
                        }
                    }
                    // Handled above; kept for exhaustiveness.
                    Control::Takeover { text, .. } => RunOutcome::Paused {
                        takeover: true,
                        text,
                        attachments: Vec::new(),
                    },
                    Control::Complete { text, attachments } => {
                        emitter.emit(EventKind::Complete {
                            text: text.clone(),
                            attachments: attachments.clone(),
                        });
                        RunOutcome::Completed { text, attachments }
                    }
                });
            }
            emitter.emit(EventKind::Finish {
                finish_reason: answer.finish,
            });
            if answer.calls.is_empty() {
                if answer.finish == FinishReason::Length
                    && continues < self.config.max_auto_continues
                {
                    continues += 1;
                    continue;
                }
                return Ok(RunOutcome::Completed {
                    text: None,
                    attachments: Vec::new(),
                });
            }
        }
        emitter.emit(EventKind::Error {
            message: format!(
                "the run stopped after {} iterations; `cove resume` continues it",
                self.config.max_iterations
            ),
            fatal: false,
        });
        Ok(RunOutcome::Stopped)
    }
}
