//! The run loop: call the model, run its tools, store everything, repeat until the agent is
//! done, asks, or hits the iteration cap. Everything one run holds lives in [`LiveRun`].

mod asks;
mod checkpoint;
mod children;
mod forked;
mod reports;
mod resume;
mod turn;
mod turn_control;
mod wait;

use std::sync::Arc;

use cove_protocol::browser::BrowserState;
use cove_protocol::client::CovedClient;
use cove_protocol::events::{EventKind, RunEvent, RunStatus};
use cove_protocol::plan::PlanStatus;
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use super::answer::{AnswerSettings, ToolTasks};
use super::config::AgentConfig;
use super::control::RunControl;
use super::events::Emitter;
use super::family::Family;
use super::handle::RunHandle;
use super::outcome::{RunError, RunOutcome, awaits_permission};
use super::permission::Gate;
use super::prompt::{self, system_prompt};
use super::spans;
use crate::context::summarize::{self, summarize};
use crate::context::{Budget, Calibration, Cuts, Entry, TokenCounter, fit, knowledge};
use crate::format::thousands;
use crate::llm::{ChatMessage, ChatProvider, ToolSpec, Usage};
use crate::mcp::{McpTool, ServerState};
use crate::store::{self, Decision, RequestKind, Store, Thread};
use crate::toolcall::ToolMode;
use crate::toolcall::xml;
use crate::tools::{
    Image, MessageArchive, ReadOffsets, SandboxEnv, ThreadBook, ToolEnv, ToolRegistry, ToolResult,
};

/// An agent over one sandbox, model and database. [`Agent::start`] runs a thread.
pub struct Agent {
    config: AgentConfig,
    provider: Arc<dyn ChatProvider>,
    store: Arc<Store>,
    registry: Arc<ToolRegistry>,
    sandbox: CovedClient,
    /// Shell output already shown, by session: the sandbox's, so shared by its runs.
    read_offsets: ReadOffsets,
    /// A sub-agent's: what it shares with the run that started it.
    family: Option<Arc<Family>>,
    /// A sub-agent's: where its permission requests go (the parent's thread and run).
    surface: Option<Surface>,
}

/// What a run records while it waits (for events, for its sub-agents), forgotten if the
/// run stops before the wait ends, its call then answered as interrupted; a killed process
/// leaves it for the next run to take up.
struct Recorded<'a> {
    store: &'a Store,
    thread: &'a str,
    forget: fn(&Store, &str) -> Result<(), store::StoreError>,
    /// Cleared once the wait's result is stored (which forgets the record itself).
    armed: bool,
}

impl Drop for Recorded<'_> {
    fn drop(&mut self) {
        if self.armed
            && let Err(e) = (self.forget)(self.store, self.thread)
        {
            tracing::warn!(error = %e, "cannot clear what the run waited for");
        }
    }
}

/// Where a sub-agent's permission requests are asked: its parent's thread, whose person
/// answers them with the parent's own, through the parent's run.
#[derive(Debug, Clone)]
pub(crate) struct Surface {
    thread_id: String,
    control: Arc<RunControl>,
    emitter: Arc<Emitter>,
    hold: bool,
    plan_first: bool,
}

/// MCP tools are deferred when their specs would take more than 1/this of the window.
const MCP_TOOLS_SHARE: usize = 10;

/// Characters the skills' list may take in the system prompt (about 1,500 tokens).
const SKILLS_PROMPT_CHARS: usize = 6_000;

const INTERRUPTED: &str = "This call was interrupted when Cove stopped, before its result was recorded; its effect is unknown. Check before running it again.";

/// A call's result as the model reads it: a tool message, or an XML result in a user message.
fn tool_message(mode: ToolMode, call_id: &str, tool: &str, result: &ToolResult) -> ChatMessage {
    match mode {
        ToolMode::Native => {
            ChatMessage::tool_result(call_id, tool, result.text.clone(), !result.ok)
        }
        ToolMode::Xml => ChatMessage::user(xml::result_text(tool, result.ok, &result.text)),
    }
}

/// A run in progress: who it is, the history as the model will see it, what it shows the
/// model next, and the tool tasks it started (aborted when it is dropped, so a stopped run
/// leaves nothing running).
struct LiveRun {
    thread: Thread,
    run_id: String,
    emitter: Arc<Emitter>,
    control: Arc<RunControl>,
    counter: TokenCounter,
    window: usize,
    /// The system prompt: the same for every call of the run (what changes, the plan, goes
    /// after the history), so the provider's cache serves it.
    system: String,
    /// The knowledge section, read once: the prompt's start stays the same all run.
    knowledge: String,
    tools: Vec<ToolSpec>,
    /// Tokens of the system prompt and tool specs.
    fixed: usize,
    /// The MCP tools' generation `tools` and `system` were made for.
    tools_generation: u64,
    /// MCP servers whose status this run announced.
    mcp_announced: std::collections::HashSet<String>,
    settings: AnswerSettings,
    calibration: Calibration,
    /// How the history was cut for the calls so far.
    cuts: Cuts,
    /// What the run and its sub-agents (or the run that started it) spent and took.
    family: Arc<Family>,
    /// The worst case of this run's model call under way, set aside in the family's budget.
    reserved: f64,
    /// Kept in step with the store rather than reloaded each iteration: every message is
    /// stored first, then added here, counted once.
    history: Vec<Entry>,
    /// The browser state shown to the model in its next call only.
    browser: Option<BrowserState>,
    /// Images shown to the model in its next call only.
    images: Vec<Image>,
    /// The browser snapshot the model last saw: element indices refer to it.
    snapshot_id: Option<u64>,
    archive: MessageArchive,
    /// Answers cut by the output cap continued so far.
    continues: u32,
    tool_tasks: Arc<ToolTasks>,
    /// The permission gate of the run's calls, when the agent has a policy.
    gate: Option<Arc<Gate>>,
    /// A plan-first run that answered without proposing one was told to, once.
    plan_asked: bool,
    /// The user was told the server read far less of the prompt than was sent, once.
    told_unread: bool,
    /// The sandbox could not checkpoint: none are tried for the rest of the run.
    checkpoints_off: bool,
}

impl LiveRun {
    /// Stores an LLM message of this run and adds it to the history.
    fn record(&mut self, store: &Store, message: ChatMessage) -> Result<(), RunError> {
        let id = store.append_llm(&self.thread.id, Some(&self.run_id), &message)?;
        self.history.push(Entry::new(id, message, &self.counter));
        Ok(())
    }
}

impl Agent {
    /// An agent for runs configured by `config`, with the standard tools on `sandbox`.
    pub fn new(
        config: AgentConfig,
        provider: Arc<dyn ChatProvider>,
        store: Arc<Store>,
        sandbox: CovedClient,
    ) -> Agent {
        Agent {
            config,
            provider,
            store,
            registry: Arc::new(ToolRegistry::standard()),
            sandbox,
            read_offsets: ReadOffsets::default(),
            family: None,
            surface: None,
        }
    }

    /// The same agent with another set of tools.
    pub fn with_registry(mut self, registry: Arc<ToolRegistry>) -> Agent {
        self.registry = registry;
        self
    }

    /// How its runs behave.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Starts a run of `thread`: stores `input` (if any) as the user's message, then works
    /// until the agent completes, pauses or stops, or the handle stops it. The run is
    /// recorded before this returns; its events and its end come through the handle.
    pub fn start(
        self: &Arc<Self>,
        thread: &Thread,
        input: Option<ChatMessage>,
    ) -> Result<RunHandle, RunError> {
        let run = self.store.start_run(&thread.id)?;
        let (sink, events) = tokio::sync::mpsc::unbounded_channel();
        let control = Arc::new(RunControl::default());
        // Made here, under whatever span starts the run (a sub-agent's parent's tool).
        let span = spans::run(
            &thread.id,
            &run.id,
            &self.config.model,
            self.provider.name(),
        );
        let task = tokio::spawn(
            self.clone()
                .run(thread.clone(), run.clone(), input, sink, control.clone())
                .instrument(span),
        );
        Ok(RunHandle::new(
            thread.id.clone(),
            run.id,
            self.store.clone(),
            control,
            events,
            task,
        ))
    }

    /// The whole run, from its first event to its last, recorded in the store.
    async fn run(
        self: Arc<Self>,
        thread: Thread,
        run: store::Run,
        input: Option<ChatMessage>,
        sink: UnboundedSender<RunEvent>,
        control: Arc<RunControl>,
    ) -> Result<RunOutcome, RunError> {
        let emitter = Arc::new(Emitter::new(
            &thread.id,
            &run.id,
            self.store.clone(),
            Some(sink),
        ));
        emitter.emit(EventKind::ThreadRunStart {
            model: self.config.model_label.clone(),
            sandbox: thread.sandbox.clone(),
        });
        // The user's decision on the plan, given between runs, is told here.
        match self.store.take_untold_decision(&thread.id) {
            Ok(Some(plan)) => {
                let note = match plan.status {
                    PlanStatus::Approved => Some("approved by the user".to_string()),
                    PlanStatus::Rejected => Some(match &plan.reason {
                        Some(reason) => format!("rejected by the user: {reason}"),
                        None => "rejected by the user".to_string(),
                    }),
                    PlanStatus::Proposed | PlanStatus::Superseded => None,
                };
                emitter.emit(EventKind::PlanUpdated { plan, note });
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read the plan's state"),
        }
        let stopped = control.clone();
        let thread_id = thread.id.clone();
        // Stopping drops the work where it stands; dropping its LiveRun aborts its tools.
        let outcome = tokio::select! {
            biased;
            () = stopped.stopped() => Ok(RunOutcome::Interrupted),
            outcome = self.work(thread, &run.id, input, &emitter, control) => outcome,
        };
        let (status, error, pause) = match &outcome {
            Ok(RunOutcome::Completed { .. }) => (RunStatus::Completed, None, None),
            Ok(RunOutcome::Paused {
                waits_for, text, ..
            }) => (RunStatus::Paused, None, Some((*waits_for, text.as_str()))),
            Ok(RunOutcome::Stopped) => (RunStatus::Stopped, None, None),
            Ok(RunOutcome::Interrupted) => (RunStatus::Stopped, Some("interrupted".into()), None),
            Err(e) => {
                emitter.emit(EventKind::Error {
                    message: e.to_string(),
                    fatal: true,
                });
                (RunStatus::Failed, Some(e.to_string()), None)
            }
        };
        self.store.end_run(&run, status, error.as_deref(), pause)?;
        // The end is told whatever happens: clients wait for it.
        let spent = self.store.run_usage(&run.id).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read the run's usage");
            store::RunUsage::default()
        });
        let span = tracing::Span::current();
        if !span.is_disabled() {
            match self.store.waits_before(&thread_id, &run.id) {
                Ok(waits) => spans::waits_between(&span, &waits),
                Err(e) => tracing::warn!(error = %e, "cannot read the waits before the run"),
            }
            spans::run_ended(&span, status, &spent, error.as_deref());
        }
        emitter.emit(EventKind::ThreadRunEnd {
            status,
            usage: spent.tokens,
            cost: spent.cost.filter(|_| self.config.price.is_some()),
            duration_ms: u64::try_from(store::now_ms() - run.started_at).unwrap_or(0),
        });
        outcome
    }

    /// Defers the MCP tools behind `mcp_search_tools` when, like Claude Code, they would take
    /// more than a tenth of the window (checked again as servers come up).
    fn update_deferral(&self, counter: &TokenCounter, window: usize) {
        if let Some(hub) = self.registry.mcp() {
            let all: Vec<ToolSpec> = hub.listed().iter().map(McpTool::spec).collect();
            hub.set_deferred(counter.tools(&all) > window / MCP_TOOLS_SHARE);
        }
    }

    /// Announces the MCP servers whose start ended since the last look.
    fn announce_mcp(&self, live: &mut LiveRun) {
        let Some(hub) = self.registry.mcp() else {
            return;
        };
        for status in hub.statuses() {
            let (state, tools, error) = match status.state {
                ServerState::Starting => continue,
                ServerState::Ready { tools } => ("ready", tools as u32, None),
                ServerState::Failed(why) => ("failed", 0, Some(why)),
                ServerState::Disabled => ("disabled", 0, None),
            };
            if live.mcp_announced.insert(status.name.clone()) {
                live.emitter.emit(EventKind::McpStatus {
                    server: status.name,
                    status: state.to_string(),
                    tools,
                    error,
                });
            }
        }
    }

    /// The system prompt and the tool specs the model is given, and their tokens.
    fn fixed_parts(
        &self,
        knowledge: &str,
        plan_first: bool,
        counter: &TokenCounter,
    ) -> (String, Vec<ToolSpec>, usize) {
        let mut system = system_prompt(
            &self.registry,
            self.config.mode,
            &self.config.workspace_label,
        );
        if let Some(hub) = self.registry.mcp()
            && hub.is_deferred()
        {
            system.push_str(&prompt::deferred_mcp_section(&hub.summary()));
        }
        if let Some(hub) = self.registry.mcp() {
            system.push_str(&prompt::starting_mcp_section(&hub.still_starting()));
        }
        system.push_str(&crate::skills::prompt_section(
            self.registry.skills(),
            SKILLS_PROMPT_CHARS,
        ));
        system.push_str(knowledge);
        // Until a plan is approved (between runs: proposing one ends the run).
        system.push_str(&prompt::plan_section(None, plan_first));
        let tools = match self.config.mode {
            ToolMode::Native => self.registry.specs(),
            ToolMode::Xml => Vec::new(),
        };
        let fixed = counter.text(&system) + counter.tools(&tools) + 4;
        (system, tools, fixed)
    }

    /// Whether the run still waits for a plan to be approved before it may change anything.
    fn plan_pending(&self, thread_id: &str) -> Result<bool, RunError> {
        let approved = self
            .store
            .current_plan(thread_id)?
            .is_some_and(|p| p.status == PlanStatus::Approved);
        Ok(self.config.plan_first && !approved)
    }

    /// Makes the run's state: repairs what a killed run left, builds the system prompt and
    /// loads the history.
    fn begin(
        &self,
        thread: Thread,
        run_id: &str,
        emitter: &Arc<Emitter>,
        control: Arc<RunControl>,
    ) -> Result<LiveRun, RunError> {
        self.repair(&thread.id, run_id)?;
        let counter = TokenCounter::for_model(&self.config.model);
        let window = self.config.profile.context_window as usize;
        self.update_deferral(&counter, window);
        let knowledge = knowledge::section(
            &self.store.knowledge(Some(&thread.id))?,
            self.config.context.knowledge_budget,
            &counter,
        );
        let (system, tools, fixed) =
            self.fixed_parts(&knowledge, self.plan_pending(&thread.id)?, &counter);
        let page_tokens = crate::context::page_tokens(window, self.config.max_tokens as usize);
        let archive = MessageArchive {
            store: self.store.clone(),
            thread: thread.id.clone(),
            page_chars: (page_tokens * 3).clamp(2_000, 200_000),
        };
        let mut history: Vec<Entry> = self
            .store
            .llm_messages(&thread.id)?
            .into_iter()
            .map(|(id, m)| Entry::new(id, m, &counter))
            .collect();
        if let Some(summary) = self.store.latest_summary(&thread.id)? {
            history = summarize::apply(history, &summary, &counter);
        }
        let policy = self.config.permissions.as_ref().map(|policy| {
            Arc::new(
                policy
                    .clone()
                    .with_workspace(self.config.workspace_label.as_str()),
            )
        });
        // A sub-agent asks through its parent's thread: the person answers it there, once,
        // as they answer the parent's own requests.
        let (asks_thread, asks_control, asks_emitter, hold, plan_first) = match &self.surface {
            Some(parent) => (
                parent.thread_id.clone(),
                parent.control.clone(),
                parent.emitter.clone(),
                parent.hold,
                parent.plan_first,
            ),
            None => (
                thread.id.clone(),
                control.clone(),
                emitter.clone(),
                self.config.pause_for_permission,
                self.config.plan_first,
            ),
        };
        let gate = (policy.is_some() || plan_first).then(|| {
            Arc::new(Gate {
                policy,
                plan_first,
                store: self.store.clone(),
                thread_id: asks_thread,
                run_id: run_id.to_string(),
                control: asks_control,
                emitter: asks_emitter,
                hold,
                sandbox: self.sandbox.clone(),
            })
        });
        Ok(LiveRun {
            thread,
            run_id: run_id.to_string(),
            emitter: emitter.clone(),
            control,
            gate,
            counter,
            window,
            system,
            knowledge,
            tools,
            fixed,
            tools_generation: self.registry.mcp().map_or(0, |m| m.generation()),
            mcp_announced: std::collections::HashSet::new(),
            settings: AnswerSettings {
                mode: self.config.mode,
                max_calls: self.config.max_calls_per_answer,
                retry: self.config.retry,
            },
            calibration: {
                let mut calibration = Calibration::default();
                calibration.set_fixed(fixed);
                calibration
            },
            cuts: Cuts::default(),
            family: self.family.clone().unwrap_or_default(),
            reserved: 0.0,
            history,
            browser: None,
            images: Vec::new(),
            snapshot_id: None,
            archive,
            continues: 0,
            tool_tasks: Arc::new(ToolTasks::default()),
            plan_asked: false,
            told_unread: false,
            checkpoints_off: false,
        })
    }

    /// Iterates until the run ends on its own.
    async fn work(
        &self,
        thread: Thread,
        run_id: &str,
        mut input: Option<ChatMessage>,
        emitter: &Arc<Emitter>,
        control: Arc<RunControl>,
    ) -> Result<RunOutcome, RunError> {
        if self.config.max_cost.is_some() && self.config.price.is_none() {
            return Err(RunError::NoPrice {
                model: self.config.model.clone(),
            });
        }
        if let Some(hub) = self.registry.mcp() {
            // The first call waits a moment for the servers; slower ones join later. A call
            // a killed run left waiting may be an MCP tool's: then all of them first.
            let wait = if self.store.unapplied_requests(&thread.id)?.is_empty() {
                Some(self.config.mcp_first_call_wait)
            } else {
                None
            };
            hub.wait_started(wait).await;
        }
        let mut live = self.begin(thread, run_id, emitter, control)?;
        self.announce_mcp(&mut live);
        // The calls' results first: they answer the last assistant message.
        let held = self.replay(&mut live).await?;
        if !held.is_empty() {
            if input.is_some() {
                // Nothing may come between an answer's calls and their results.
                emitter.emit(EventKind::Error {
                    message: "your message was not added: the thread's last calls wait for your permission first (cove permit)".into(),
                    fatal: false,
                });
            }
            return Ok(awaits_permission(&held));
        }
        if let Some(outcome) = self.resume_event_wait(&mut live, input.is_some()).await? {
            return Ok(outcome);
        }
        if let Some(outcome) = self.resume_children(&mut live, &mut input).await? {
            return Ok(outcome);
        }
        if let Some(message) = input {
            // The user's message answers the question, or the browser wait, the last run
            // ended on.
            for kind in [RequestKind::Ask, RequestKind::Takeover] {
                self.store
                    .close_requests(&live.thread.id, kind, Decision::Answered, None)?;
            }
            // The files as they are before the message is acted on.
            self.checkpoint(&mut live, checkpoint::Moment::RunStart)
                .await;
            let text = message.text();
            emitter.emit(EventKind::UserMessage {
                says: crate::plan_answer::in_person_words(&text),
                text,
            });
            live.record(&self.store, message)?;
        }
        for iteration in 1..=self.config.max_iterations {
            if live.family.take_iteration() > self.config.max_iterations {
                emitter.emit(EventKind::Error {
                    message: format!(
                        "the run stopped: with its sub-agents it took {} iterations; `cove resume` continues it",
                        self.config.max_iterations
                    ),
                    fatal: false,
                });
                return Ok(RunOutcome::Stopped);
            }
            if let Some(outcome) = self.iterate(&mut live, iteration).await? {
                return Ok(outcome);
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

    /// What the tools of this iteration reach.
    fn tool_env(&self, live: &LiveRun) -> ToolEnv {
        ToolEnv {
            base: SandboxEnv {
                sandbox: self.sandbox.clone(),
                vision: self.config.profile.vision,
                read_offsets: self.read_offsets.clone(),
                snapshot_id: live.snapshot_id,
            },
            archive: Some(live.archive.clone()),
            book: Some(ThreadBook {
                store: self.store.clone(),
                thread: live.thread.id.clone(),
            }),
            mcp: self.registry.mcp().cloned(),
            skills: self.registry.skills().clone(),
            web: self.registry.web().clone(),
        }
    }

    /// Says once when the server reports reading far less of the prompt than Cove sent: it
    /// cut the prompt to a smaller window, or its chat template dropped part of it (the
    /// tools), and the model works blind.
    fn tell_if_unread(&self, live: &mut LiveRun, counted: usize, reported: u64) {
        const MIN_PROMPT: usize = 2_000;
        if live.told_unread || reported == 0 || counted < MIN_PROMPT {
            return;
        }
        if (reported as f64) >= counted as f64 * 0.5 {
            return;
        }
        live.told_unread = true;
        live.emitter.emit(EventKind::Error {
            message: format!(
                "the server read {} prompt tokens of about {} Cove sent: it cut or ignored part of the prompt (a window smaller than the {} tokens Cove plans for, or a chat template that drops the tools), so the model works without them. Give the server a larger context (llama.cpp: -c 16384; Ollama: OLLAMA_CONTEXT_LENGTH), or tell Cove the window with --context-window (--tools compact sends less)",
                thousands(reported),
                thousands(counted as u64),
                thousands(live.window as u64)
            ),
            fatal: false,
        });
    }

    /// Stores what a model call took and cost, and adds the cost to the run's.
    /// Returns the call's cost, when the model's price is known.
    fn account(
        &self,
        live: &mut LiveRun,
        iteration: u32,
        usage: &Usage,
    ) -> Result<Option<f64>, RunError> {
        let cost = self.config.price.map(|p| p.cost(usage));
        self.store
            .record_call(&live.run_id, iteration, &self.config.model, usage, cost)?;
        live.family
            .settle(std::mem::take(&mut live.reserved), cost.unwrap_or(0.0));
        Ok(cost)
    }

    /// Why the next call may not be made, when its worst case would take the run (and its
    /// family of sub-agents) past its cost limit; otherwise the worst case is set aside in
    /// the family's budget until the call is accounted for.
    fn over_cost_limit(
        &self,
        live: &mut LiveRun,
        prompt_tokens: usize,
        max_tokens: u32,
    ) -> Option<String> {
        let (limit, price) = (self.config.max_cost?, self.config.price?);
        live.family.settle(std::mem::take(&mut live.reserved), 0.0);
        // Cove's count of a prompt not yet sent may be off by a little: 5% more.
        let prompt_tokens = prompt_tokens + prompt_tokens / 20;
        let worst = price.worst_case(prompt_tokens as u64, u64::from(max_tokens));
        match live.family.reserve(worst, limit) {
            Ok(()) => {
                live.reserved = worst;
                None
            }
            Err(spent) => Some(format!(
                "the run stopped before its next model call, which could cost up to ${worst:.4} (a prompt of {prompt_tokens} tokens, up to {max_tokens} tokens of answer) and take the run past its limit of ${limit:.4} (spent so far, sub-agents included: ${spent:.4}); `cove resume` continues it, with a higher --max-cost"
            )),
        }
    }

    /// With `--context summarize`: when the history no longer fits, has the model summarize
    /// its older part, stores the summary, and puts it in the history in place of that part.
    /// A failed summary is reported and the history goes on to be truncated instead.
    async fn maybe_summarize(
        &self,
        live: &mut LiveRun,
        budget: Budget,
        iteration: u32,
    ) -> Result<(), RunError> {
        let needed = fit(&live.history, budget, &live.calibration)
            .map(|f| f.stats.compressed())
            .unwrap_or(true);
        let Some(range) = needed
            .then(|| summarize::summarizable(&live.history, budget.window / 4))
            .flatten()
        else {
            return Ok(());
        };
        if let (Some(limit), Some(price)) = (self.config.max_cost, self.config.price) {
            // The summary's call at its worst: a window of transcript, its output cap.
            let worst = price.worst_case(
                budget.window as u64,
                (budget.window / 8).clamp(256, 4_000) as u64,
            );
            if live.family.spent() + worst > limit {
                live.emitter.emit(EventKind::Error {
                    message: format!(
                        "summarizing could cost up to ${worst:.4} and take the run past its limit of ${limit:.4}; truncating instead"
                    ),
                    fatal: false,
                });
                return Ok(());
            }
        }
        let part = &live.history[range];
        let summary = summarize(
            self.provider.as_ref(),
            &self.config.model,
            part,
            budget.window,
            &live.counter,
            self.config.retry,
        )
        .await;
        let (text, usage) = match summary {
            Ok(answer) => answer,
            Err(e) => {
                live.emitter.emit(EventKind::Error {
                    message: format!("summarizing the history failed ({e}); truncating instead"),
                    fatal: false,
                });
                return Ok(());
            }
        };
        // A new summary takes in the previous one, so it covers from where that began.
        let previous = self.store.latest_summary(&live.thread.id)?;
        let first = match previous {
            Some(p) if part.iter().any(|e| e.id == p.id) => p.first,
            _ => part[0].id,
        };
        let last = part[part.len() - 1].id;
        let messages = part.len() as u32;
        self.account(live, iteration, &usage)?;
        if text.is_empty() {
            live.emitter.emit(EventKind::Error {
                message: "the model wrote an empty summary; truncating instead".into(),
                fatal: false,
            });
            return Ok(());
        }
        let id = self
            .store
            .add_summary(&live.thread.id, Some(&live.run_id), first, last, &text)?;
        live.emitter.emit(EventKind::ContextSummarized {
            first_message: first,
            last_message: last,
            messages,
        });
        let summary = store::Summary {
            id,
            first,
            last,
            text,
        };
        let history = std::mem::take(&mut live.history);
        live.history = summarize::apply(history, &summary, &live.counter);
        Ok(())
    }
}
