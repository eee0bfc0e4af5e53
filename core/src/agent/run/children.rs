//! Sub-agents (`spawn_agents`): each a run of a thread of its own, linked to the parent's,
//! in the parent's sandbox and workspace, started side by side (at most `max_children`
//! at once) and sharing the parent's family budget. Their progress is told in the parent's
//! events; stopping the parent stops them (dropping a run's handle stops the run). A
//! sub-agent's question pauses the parent's run on it (see `asks`).

use std::sync::Arc;
use std::time::Instant;

use cove_protocol::client::CovedClient;
use cove_protocol::events::EventKind;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use super::checkpoint::Moment;
use super::forked::fork_changes;
use super::reports::{Report, question_of};
use super::{Agent, LiveRun, Recorded, Surface, tool_message};
use crate::agent::outcome::{RunError, RunOutcome};
use crate::context::Entry;
use crate::llm::ChatMessage;
use crate::store::{NewThread, Spawn, SpawnedChild, Store, Thread};
use crate::tools::{ChildTask, ReadOffsets, ToolResult};

/// A sub-agent ready to run, or (taken up after a kill or a question) already done.
struct Child {
    n: u32,
    thread: Thread,
    agent: Arc<Agent>,
    tools: Option<Vec<String>>,
    /// Its first message; none when it resumes.
    input: Option<ChatMessage>,
    done: Option<Report>,
}

/// The first message of a sub-agent's thread.
fn brief(n: u32, of: usize, task: &str, fork: bool) -> String {
    let place = if fork {
        "You work in your own copy of the workspace: what you change there is handed to the agent that started you, who merges it."
    } else {
        "Others may be working in the same workspace at the same time: change only what your task needs."
    };
    format!(
        "You are sub-agent {n} of {of}, started by another agent to do one part of a larger task. {place} Decide for yourself where you can; when you truly cannot go on without the person (a requirement no one gave, a choice only they can make), ask: the question reaches them through the agent that started you, and you go on with their answer. When you are done, call complete with what you did, what you found, and anything left undone.\n\nYour task:\n{task}"
    )
}

impl Agent {
    /// An agent for a sub-agent: the same model, store and sandbox, one level deeper, the
    /// tools it may have, the family's budget.
    fn child_agent(
        &self,
        tools: Option<&[String]>,
        live: &LiveRun,
        sandbox: CovedClient,
    ) -> Arc<Agent> {
        let mut config = self.config.clone();
        config.depth += 1;
        // The parent checkpoints once they have all ended, and its plan is theirs.
        config.checkpoints = false;
        config.plan_first = false;
        let surface = Surface {
            thread_id: live.thread.id.clone(),
            control: live.control.clone(),
            emitter: live.emitter.clone(),
            hold: self.config.pause_for_permission,
            plan_first: self.config.plan_first,
        };
        let may_spawn = config.depth < config.max_depth;
        Arc::new(Agent {
            config,
            provider: self.provider.clone(),
            store: self.store.clone(),
            registry: Arc::new(self.registry.for_child(tools, may_spawn)),
            sandbox,
            read_offsets: ReadOffsets::default(),
            family: Some(live.family.clone()),
            surface: Some(surface),
        })
    }

    /// Runs the sub-agents a `spawn_agents` call asked for and answers the call with what
    /// each did; the run goes on.
    pub(super) async fn run_children(
        &self,
        live: &mut LiveRun,
        call: (String, String),
        agents: Vec<ChildTask>,
        max_parallel: usize,
    ) -> Result<Option<RunOutcome>, RunError> {
        let (call_id, tool) = call;
        if self.config.depth >= self.config.max_depth {
            let result = ToolResult::error(format!(
                "sub-agents may not start sub-agents of their own (at most {} level deep)",
                self.config.max_depth
            ));
            let message = tool_message(self.config.mode, &call_id, &tool, &result);
            live.record(&self.store, message)?;
            return Ok(None);
        }
        let limit = max_parallel.clamp(1, self.config.max_children);
        let (children, failed) = self.prepare_children(live, agents).await?;
        let spawn = Spawn {
            thread_id: live.thread.id.clone(),
            run_id: live.run_id.clone(),
            call_id,
            tool,
            children: children
                .iter()
                .map(|c| SpawnedChild {
                    n: c.n,
                    thread: c.thread.id.clone(),
                    tools: c.tools.clone(),
                })
                .collect(),
            max_parallel: limit,
            failed,
        };
        self.finish_spawn(live, spawn, children).await
    }

    /// Runs the children of a recorded call to their end and stores the call's result; a
    /// stopped run forgets the record (the call is then answered as interrupted), a killed
    /// one leaves it for the next run to take up.
    async fn finish_spawn(
        &self,
        live: &mut LiveRun,
        spawn: Spawn,
        children: Vec<Child>,
    ) -> Result<Option<RunOutcome>, RunError> {
        self.store.begin_spawn(&spawn)?;
        let mut recorded = Recorded {
            store: &self.store,
            thread: &spawn.thread_id,
            forget: Store::end_spawn,
            armed: true,
        };
        let reports = self
            .drive_children(live, children, spawn.max_parallel)
            .await;
        if let Some((asking, question)) = reports.iter().find_map(|r| Some((r, question_of(r)?))) {
            // The record stays: the next run takes the sub-agents up with the answer.
            recorded.armed = false;
            return self.ask_for_child(live, asking, question).map(Some);
        }
        let mut texts = Vec::new();
        for mut report in reports {
            // Read once, as the call is answered: a copy that changed nothing goes then.
            if let Some(fork) = &report.thread.fork {
                report.changes = Some(fork_changes(&self.sandbox, fork, &report.thread.id).await);
            }
            texts.push(self.report_text(&report));
        }
        texts.extend(spawn.failed.iter().cloned());
        let result = ToolResult::ok(texts.join("\n\n"));
        let message = tool_message(self.config.mode, &spawn.call_id, &spawn.tool, &result);
        let id = self
            .store
            .deliver_spawn(&spawn.thread_id, &live.run_id, &message)?;
        recorded.armed = false;
        drop(recorded);
        live.history.push(Entry::new(id, message, &live.counter));
        self.checkpoint(live, Moment::After(&[spawn.tool])).await;
        Ok(None)
    }

    /// Takes up the sub-agents a killed run left working, or that one of them paused on a
    /// question: the one asked goes on with the answer `input` holds (which is then its
    /// own, not the parent's), those that ended are reported as they ended, one still
    /// waiting for its answer asks again, the others run on (their calls cut short are
    /// answered as interrupted).
    pub(super) async fn resume_children(
        &self,
        live: &mut LiveRun,
        input: &mut Option<ChatMessage>,
    ) -> Result<Option<RunOutcome>, RunError> {
        let Some(mut spawn) = self.store.spawn_of(&live.thread.id)? else {
            return Ok(None);
        };
        spawn.run_id.clone_from(&live.run_id);
        self.answer_for_child(live, input)?;
        let mut children = Vec::new();
        for spawned in &spawn.children {
            let thread = self.store.thread_exact(&spawned.thread)?;
            let mut done = self.ended_child(spawned.n, &thread)?;
            let sandbox = match &thread.fork {
                None => self.sandbox.clone(),
                Some(fork) => self.sandbox.for_fork(fork).unwrap_or_else(|e| {
                    // Never the parent's workspace in its stead.
                    done.get_or_insert_with(|| {
                        Report::failed(spawned.n, &thread, format!("its copy {fork}: {e}"))
                    });
                    self.sandbox.clone()
                }),
            };
            children.push(Child {
                n: spawned.n,
                agent: self.child_agent(spawned.tools.as_deref(), live, sandbox),
                tools: spawned.tools.clone(),
                thread,
                input: None,
                done,
            });
        }
        self.finish_spawn(live, spawn, children).await
    }

    /// Makes each sub-agent's thread (and its fork), ready to run; why those that could
    /// not be made did not start.
    async fn prepare_children(
        &self,
        live: &mut LiveRun,
        agents: Vec<ChildTask>,
    ) -> Result<(Vec<Child>, Vec<String>), RunError> {
        let mut base = None;
        let of = agents.len();
        let mut children = Vec::new();
        let mut failed = Vec::new();
        for (i, child) in agents.into_iter().enumerate() {
            let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let title: String = child
                .task
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect();
            let (sandbox, fork) = match self.place(child.fork, &mut base).await {
                Ok(place) => place,
                Err(why) => {
                    live.emitter.emit(EventKind::Error {
                        message: format!("sub-agent {n} did not start: {why}"),
                        fatal: false,
                    });
                    failed.push(format!("Agent {n}: did not start: {why}."));
                    continue;
                }
            };
            let thread = self.store.create_thread(
                NewThread::new(
                    &title,
                    &live.thread.model,
                    &live.thread.tool_mode,
                    &live.thread.sandbox,
                )
                .child_of(&live.thread.id)
                .in_fork(fork.clone()),
            )?;
            live.emitter.emit(EventKind::AgentSpawned {
                agent: n,
                thread: thread.id.clone(),
                task: child.task.clone(),
            });
            children.push(Child {
                n,
                agent: self.child_agent(child.tools.as_deref(), live, sandbox),
                tools: child.tools,
                input: Some(ChatMessage::user(brief(n, of, &child.task, fork.is_some()))),
                thread,
                done: None,
            });
        }
        Ok((children, failed))
    }

    /// Runs the sub-agents, at most `limit` at once, and says what each came to, in their
    /// order.
    async fn drive_children(
        &self,
        live: &mut LiveRun,
        children: Vec<Child>,
        limit: usize,
    ) -> Vec<Report> {
        let turns = Arc::new(tokio::sync::Semaphore::new(limit.max(1)));
        let mut running = FuturesUnordered::new();
        for child in children {
            let emitter = live.emitter.clone();
            let turns = turns.clone();
            running.push(async move {
                if let Some(done) = child.done {
                    return done;
                }
                let Child {
                    n,
                    thread,
                    agent,
                    input,
                    ..
                } = child;
                let started = Instant::now();
                let mut report = Report {
                    n,
                    thread,
                    outcome: Ok(RunOutcome::Interrupted),
                    secs: 0.0,
                    changes: None,
                };
                let Ok(_turn) = turns.acquire_owned().await else {
                    return report;
                };
                let mut handle = match agent.start(&report.thread, input) {
                    Ok(handle) => handle,
                    Err(e) => {
                        report.outcome = Err(e.to_string());
                        return report;
                    }
                };
                while let Some(event) = handle.next_event().await {
                    if let EventKind::Ask { text, .. } = &event.kind {
                        emitter.emit(EventKind::AgentProgress {
                            agent: n,
                            thread: report.thread.id.clone(),
                            doing: format!("asks: {text}"),
                        });
                    }
                    // Its question shows as asked (above), not as the call that asks it.
                    if let EventKind::ToolStarted { tool, summary, .. } = &event.kind
                        && tool != "ask"
                    {
                        let about = summary.clone().unwrap_or_default();
                        emitter.emit(EventKind::AgentProgress {
                            agent: n,
                            thread: report.thread.id.clone(),
                            doing: format!("{tool} {about}").trim().to_string(),
                        });
                    }
                }
                report.outcome = handle.outcome().await.map_err(|e| e.to_string());
                report.secs = started.elapsed().as_secs_f64();
                report
            });
        }
        let mut reports = Vec::new();
        while let Some(report) = running.next().await {
            self.announce_finished(live, &report);
            reports.push(report);
        }
        reports.sort_by_key(|r| r.n);
        reports
    }
}
