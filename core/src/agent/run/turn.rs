//! One turn of a run, as named steps: refresh the tools, gather what this call alone shows,
//! sample the model (fitting the history, retrying a refusal for length), account for the
//! call, record the answer, collect its tools' results as they finish, merge them, and apply
//! a tool's control or decide what a quiet answer means.

use std::sync::Arc;

use cove_protocol::browser::BrowserState;
use cove_protocol::events::{EventKind, FinishReason};
use cove_protocol::plan::{Plan, PlanStatus};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tracing::Instrument;

use super::{Agent, LiveRun, tool_message};
use crate::agent::answer::{Answer, Executor, answer};
use crate::agent::outcome::{RunError, RunOutcome, awaits_permission};
use crate::agent::{prompt, spans};
use crate::context::{Budget, ContextMode, Entry, fit, temporary_message};
use crate::format::thousands;
use crate::llm::{ChatMessage, ChatRequest, LlmError, Role, ToolCall, Usage};
use crate::toolcall::ToolMode;
use crate::tools::{Control, Image, ToolResult};

/// What this call alone shows the model, after the history and past the provider's cache
/// breakpoints: the approved plan as it stands, the browser, images.
struct Extras {
    browser: Option<BrowserState>,
    images: Vec<Image>,
    /// The messages that show them.
    messages: Vec<ChatMessage>,
    /// The thread's plan, whatever its state.
    current_plan: Option<Plan>,
}

/// What sampling the model came to.
enum Sampled {
    /// Its answer, the prompt's tokens as Cove counted them, and the call's span.
    Answer(Answer, usize, tracing::Span),
    /// The call would pass the run's cost limit: the run stops before it.
    OverCost,
}

/// The results of an answer's calls as they finished.
enum Collected {
    /// Each call's result, in the answer's order.
    Results(Vec<Option<ToolResult>>),
    /// Calls that wait for the user's permission, by what they are about: no result yet.
    Held(Vec<String>),
}

impl Agent {
    /// One model call and its tools; the run's outcome when this turn ends it.
    pub(super) async fn iterate(
        &self,
        live: &mut LiveRun,
        iteration: u32,
    ) -> Result<Option<RunOutcome>, RunError> {
        self.store.count_iteration(&live.run_id, iteration)?;
        self.refresh_tools(live)?;
        let extras = self.call_extras(live)?;
        let (answer, counted, span) = match self.sample(live, &extras, iteration).await? {
            Sampled::Answer(answer, counted, span) => (answer, counted, span),
            Sampled::OverCost => {
                // What the call would have shown waits for the run that goes on.
                live.browser = extras.browser;
                live.images = extras.images;
                return Ok(Some(RunOutcome::Stopped));
            }
        };
        self.account_answer(live, iteration, &answer, counted, &span)?;
        // The call's span ends with the call: the tools and waits after it are not its.
        drop(span);
        self.record_answer(live, &answer)?;
        let results = match self.collect_results(live, &answer).await? {
            Collected::Results(results) => results,
            Collected::Held(summaries) => {
                live.emitter.emit(EventKind::Finish {
                    finish_reason: FinishReason::AgentTerminated,
                });
                return Ok(Some(awaits_permission(&summaries)));
            }
        };
        let tools: Vec<String> = answer.calls.iter().map(|c| c.name.clone()).collect();
        if super::checkpoint::may_change_files(tools.iter().map(String::as_str)) {
            self.checkpoint(live, super::checkpoint::Moment::After(&tools))
                .await;
        }
        if let Some(control) = merge_results(live, results) {
            return self.apply_control(live, control, answer.finish).await;
        }
        live.emitter.emit(EventKind::Finish {
            finish_reason: answer.finish,
        });
        self.after_quiet_answer(live, &answer, extras.current_plan.is_some())
    }

    /// A server came up, or `mcp_search_tools` loaded tools: offered from this call on
    /// (the only changes to the prompt's start a run makes).
    fn refresh_tools(&self, live: &mut LiveRun) -> Result<(), RunError> {
        if let Some(hub) = self.registry.mcp()
            && hub.generation() != live.tools_generation
        {
            self.update_deferral(&live.counter, live.window);
            live.tools_generation = hub.generation();
            (live.system, live.tools, live.fixed) = self.fixed_parts(
                &live.knowledge,
                self.plan_pending(&live.thread.id)?,
                &live.counter,
            );
            live.calibration.set_fixed(live.fixed);
            self.announce_mcp(live);
        }
        Ok(())
    }

    /// What this call alone shows the model, taken from the run.
    fn call_extras(&self, live: &mut LiveRun) -> Result<Extras, RunError> {
        let browser = live.browser.take();
        if let Some(state) = &browser {
            live.snapshot_id = Some(state.snapshot_id);
        }
        let current_plan = self.store.current_plan(&live.thread.id)?;
        let approved = current_plan
            .as_ref()
            .filter(|p| p.status == PlanStatus::Approved);
        let plan = prompt::plan_section(approved, false);
        let mut messages: Vec<ChatMessage> = Vec::new();
        // An answer cut by the output cap is continued as it stands (the history ends with
        // it): a message after it would make the model start a new one.
        let continuing = live
            .history
            .last()
            .is_some_and(|e| e.message().role == Role::Assistant);
        if !plan.is_empty() && !continuing {
            messages.push(ChatMessage::user(plan.trim_start()));
        }
        if !continuing
            && let Some(note) =
                crate::agent::wake::pending_note(&self.store.pending_watches(&live.thread.id)?)
        {
            messages.push(ChatMessage::user(note));
        }
        let images = std::mem::take(&mut live.images);
        messages.extend(temporary_message(
            browser.as_ref(),
            &images,
            self.config.profile.vision,
        ));
        Ok(Extras {
            browser,
            images,
            messages,
            current_plan,
        })
    }

    /// The model's answer to the history fitted to its window with `extras` after it, its
    /// tools started as their calls complete. A provider that still finds the prompt too
    /// long (Cove's count was off) gets a tighter count and a harder-compressed prompt,
    /// twice at most: never a loop.
    async fn sample(
        &self,
        live: &mut LiveRun,
        extras: &Extras,
        iteration: u32,
    ) -> Result<Sampled, RunError> {
        let mut budget = Budget {
            window: live.window,
            max_tokens: self.config.max_tokens as usize,
            fixed: live.fixed
                + extras
                    .messages
                    .iter()
                    .map(|m| live.counter.message(m))
                    .sum::<usize>(),
        };
        if self.config.context.mode == ContextMode::Summarize {
            self.maybe_summarize(live, budget, iteration).await?;
        }
        let env = Arc::new(self.tool_env(live));
        let mut refusals: u8 = 0;
        loop {
            let (mut messages, max_tokens, counted) = self.fitted(live, budget)?;
            let prompt = live.calibration.apply(counted);
            if let Some(reason) = self.over_cost_limit(live, prompt, max_tokens) {
                live.emitter.emit(EventKind::Error {
                    message: reason,
                    fatal: false,
                });
                return Ok(Sampled::OverCost);
            }
            if refusals == 0 {
                live.emitter
                    .emit(EventKind::AssistantResponseStart { iteration });
            }
            let stable_messages = messages.len();
            messages.extend(extras.messages.iter().cloned());
            let request = ChatRequest {
                model: self.config.model.clone(),
                system: live.system.clone(),
                messages,
                tools: live.tools.clone(),
                max_tokens,
                stable_messages,
                cache_key: Some(live.thread.id.clone()),
            };
            let mut executor = Executor::new(
                env.clone(),
                self.registry.clone(),
                live.emitter.clone(),
                live.tool_tasks.clone(),
                self.config.parallel_tools,
                live.gate.clone(),
            );
            let span = spans::chat(self.provider.name(), &request, iteration);
            let answered = answer(
                self.provider.as_ref(),
                &request,
                live.settings,
                &mut executor,
                iteration,
            )
            .instrument(span.clone())
            .await;
            if let Err(e) = &answered {
                let kind = match e {
                    LlmError::ContextTooLong { .. } => "context_too_long",
                    _ => "model_error",
                };
                spans::chat_failed(&span, kind, &e.to_string());
            }
            match answered {
                // What was set aside for the call is settled when it is accounted for.
                Ok(answer) => return Ok(Sampled::Answer(answer, counted, span)),
                Err(e @ LlmError::ContextTooLong { .. })
                    if self.config.context.mode != ContextMode::Off && refusals < 2 =>
                {
                    refusals += 1;
                    live.family.settle(std::mem::take(&mut live.reserved), 0.0);
                    self.refused_for_length(live, &mut budget, &e, refusals);
                }
                Err(e) => {
                    live.family.settle(std::mem::take(&mut live.reserved), 0.0);
                    return Err(e.into());
                }
            }
        }
    }

    /// The history as this call sends it, within `budget`: its messages, the output cap
    /// and the prompt's tokens as Cove counts them.
    fn fitted(
        &self,
        live: &mut LiveRun,
        budget: Budget,
    ) -> Result<(Vec<ChatMessage>, u32, usize), RunError> {
        if self.config.context.mode == ContextMode::Off {
            return Ok((
                live.history.iter().map(|e| e.message().clone()).collect(),
                self.config.max_tokens,
                budget.fixed + live.history.iter().map(Entry::tokens).sum::<usize>(),
            ));
        }
        let fitted = if self.config.context.prefix_stable {
            live.cuts
                .fit(&live.history, budget, &live.calibration, &live.counter)?
        } else {
            fit(&live.history, budget, &live.calibration)?
        };
        if fitted.stats.compressed() {
            live.emitter.emit(EventKind::ContextCompressed {
                tokens_before: fitted.stats.tokens_before as u64,
                tokens_after: fitted.stats.tokens_after as u64,
                arguments_dropped: fitted.stats.arguments_dropped as u32,
                truncated: fitted.stats.truncated as u32,
                omitted: fitted.stats.omitted as u32,
            });
        }
        Ok((fitted.messages, fitted.max_tokens as u32, fitted.counted))
    }

    /// The provider refused the prompt as too long: the window it states is believed from
    /// now on, and the next try counts tighter and cuts harder.
    fn refused_for_length(
        &self,
        live: &mut LiveRun,
        budget: &mut Budget,
        refusal: &LlmError,
        refusals: u8,
    ) {
        if let LlmError::ContextTooLong { message, .. } = refusal
            && let Some(stated) = crate::llm::served::window_from_refusal(message)
            && (stated as usize) < live.window
        {
            live.emitter.emit(EventKind::Error {
                message: format!(
                    "the server says the model's window is {} tokens, not the {} Cove planned for: fitting to it from now on (--context-window {stated} says so from the start)",
                    thousands(u64::from(stated)),
                    thousands(live.window as u64)
                ),
                fatal: false,
            });
            live.window = stated as usize;
            budget.window = live.window;
        }
        live.calibration.tighten();
        live.cuts.refused(refusals);
        live.emitter.emit(EventKind::Error {
            message: format!("{refusal}; compressing harder and trying again"),
            fatal: false,
        });
    }

    /// Counts the call's usage (estimated when the server reported none: the call is still
    /// billed) and learns how the server counts.
    fn account_answer(
        &self,
        live: &mut LiveRun,
        iteration: u32,
        answer: &Answer,
        counted: usize,
        span: &tracing::Span,
    ) -> Result<(), RunError> {
        let usage = if answer.usage.input_tokens == 0 {
            // No usage reported (a server that does not, or a stream Cove left early at the
            // tool-call limit).
            Usage {
                input_tokens: live.calibration.apply(counted) as u64,
                output_tokens: live.counter.text(&answer.raw_text) as u64
                    + answer
                        .calls
                        .iter()
                        .map(|c| live.counter.text(&c.arguments.to_string()) as u64)
                        .sum::<u64>(),
                ..Usage::default()
            }
        } else {
            answer.usage
        };
        let cost = self.account(live, iteration, &usage)?;
        spans::chat_answered(span, &usage, cost, answer.finish, || {
            let calls: Vec<_> = answer
                .calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                .collect();
            spans::answer_message(&answer.raw_text, &calls)
        });
        self.tell_if_unread(live, counted, answer.usage.input_tokens);
        live.calibration.observe(counted, answer.usage.input_tokens);
        Ok(())
    }

    /// Stores the answer (with its native tool calls) unless it said nothing at all.
    fn record_answer(&self, live: &mut LiveRun, answer: &Answer) -> Result<(), RunError> {
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
            live.record(&self.store, assistant)?;
        }
        Ok(())
    }

    /// Stores each result as its tool finishes (after the answer, whatever the order) and
    /// tells its event.
    async fn collect_results(
        &self,
        live: &mut LiveRun,
        answer: &Answer,
    ) -> Result<Collected, RunError> {
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
        let mut held = Vec::new();
        while let Some((i, mut result)) = pending.next().await {
            if let Some(Control::AwaitsPermission { summary, .. }) = &result.control {
                // No result yet: the next run gives it, once the user has decided.
                held.push(summary.clone());
                continue;
            }
            let call = &answer.calls[i];
            if let Some(control) = &mut result.control
                && control.deferred_for(&call.id, &call.name)
            {
                // Its result is what the wait or the sub-agents bring: stored then.
                results[i] = Some(result);
                continue;
            }
            let message = tool_message(self.config.mode, &call.id, &call.name, &result);
            live.record(&self.store, message)?;
            if let Some(event) = &result.event {
                let mut event = event.clone();
                if let EventKind::PlanUpdated { plan, .. } = &mut event
                    && let Some(now) = self.store.current_plan(&live.thread.id)?
                {
                    // Calls of one answer update the plan at once and finish in any order:
                    // each is told with the plan as it stands now, so the last word is the
                    // latest.
                    *plan = now;
                }
                live.emitter.emit(event);
            }
            results[i] = Some(result);
        }
        Ok(if held.is_empty() {
            Collected::Results(results)
        } else {
            Collected::Held(held)
        })
    }

    /// An answer whose calls set no control: the run goes on, unless the agent said all it
    /// had to say. Told to plan first, it must propose one before it may end; an answer
    /// cut by the output cap is continued.
    fn after_quiet_answer(
        &self,
        live: &mut LiveRun,
        answer: &Answer,
        has_plan: bool,
    ) -> Result<Option<RunOutcome>, RunError> {
        if !answer.calls.is_empty() {
            return Ok(None);
        }
        if self.config.plan_first && !has_plan && !live.plan_asked {
            live.plan_asked = true;
            live.record(
                &self.store,
                ChatMessage::user(
                    "Before anything else, propose your plan with create_plan and wait for my approval.",
                ),
            )?;
            return Ok(None);
        }
        if answer.finish == FinishReason::Length && live.continues < self.config.max_auto_continues
        {
            live.continues += 1;
            return Ok(None);
        }
        Ok(Some(RunOutcome::Completed {
            text: None,
            attachments: Vec::new(),
        }))
    }
}

/// The browser's newest state and the images the results carry go to the next call; the
/// first control a result sets (in the answer's order) is the turn's.
fn merge_results(live: &mut LiveRun, results: Vec<Option<ToolResult>>) -> Option<Control> {
    let mut control = None;
    for result in results.into_iter().flatten() {
        if let Some(state) = result.browser_state
            && live
                .browser
                .as_ref()
                .is_none_or(|b| b.snapshot_id < state.snapshot_id)
        {
            live.browser = Some(state);
        }
        live.images.extend(result.image);
        // A wait's call has no result until it ends: it goes first, whatever else the
        // answer asked (the run goes on after it, and the rest can be asked again).
        let waits = matches!(
            result.control,
            Some(Control::WaitForEvents { .. } | Control::SpawnAgents { .. })
        );
        if control.is_none() || waits {
            control = result.control.or(control);
        }
    }
    control
}
