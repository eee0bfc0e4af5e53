//! `cove run`, `cove reply` and `cove resume`: a thread's runs, driven through the engine's
//! [`RunHandle`](cove_core::agent::RunHandle) and shown by the [`Renderer`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::plan_prompt::{self, PlanAnswer};
use super::prompts::{PermissionPrompts, Typing};
use super::render::Renderer;
use super::sandbox_choice::{self, SandboxArgs};
use super::{CliError, Invocation, exit};
use cove_core::agent::RunOutcome;
use cove_core::llm::ChatMessage;
use cove_core::permissions::Mode;
use cove_core::session::{self, PreparedRun, RunSettings, RunStart, SandboxView};
use cove_core::store::{PauseKind, RequestKind, Thread};
use cove_sandbox::{Sandbox, SandboxSpec};

/// How a run works: its caps, the model's window, and whether it may prompt.
#[derive(Debug, Clone, Args)]
pub(super) struct RunFlags {
    /// Iteration cap of the run (default 100).
    #[arg(long)]
    max_iterations: Option<u32>,
    /// US dollars the run may spend on model calls: it stops, resumable, before a call
    /// whose worst case would pass this (also `max_cost` in cove.toml).
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,
    /// The longest the agent may wait for events in the sandbox at once (wait_for_events:
    /// a build to finish, a server to listen), in seconds (default 3600). The run waits
    /// without a person, with --no-prompt too.
    #[arg(long, value_name = "SECS")]
    max_wait: Option<u64>,
    /// Run a batch of tool calls one after another instead of in parallel.
    #[arg(long)]
    sequential_tools: bool,
    /// Override the model's context window (tokens), for local models.
    #[arg(long)]
    context_window: Option<u32>,
    /// Override the output cap of each call (tokens).
    #[arg(long)]
    max_tokens: Option<u32>,
    /// The tools offered: auto (default: compact when the model's window is 16,384 tokens or
    /// less), full, or compact (the core tools and a short method, for small windows).
    #[arg(long, value_parser = ["auto", "full", "compact"])]
    tools: Option<String>,
    /// Never prompt in the terminal (answers, permissions, plans): pause and exit instead.
    #[arg(long)]
    no_prompt: bool,
    /// Whether the model accepts images (default: known from the model's name).
    #[arg(long, env = "COVE_VISION")]
    vision: Option<bool>,
    /// How the history is kept within the model's window: truncate (default), summarize
    /// (the model summarizes older history first) or off.
    #[arg(long, value_parser = ["truncate", "summarize", "off"])]
    context: Option<String>,
    /// Tokens the knowledge section of the system prompt may take (default 4000).
    #[arg(long)]
    knowledge_budget: Option<usize>,
    /// What the agent may do without asking: auto (default: the `[permissions]` rules, and
    /// risky commands and MCP tools ask), ask (every change asks), read-only, or yolo.
    #[arg(long, value_parser = Mode::NAMES.to_vec())]
    permissions: Option<String>,
    /// Also read MCP servers from this `mcpServers` JSON file (repeatable; besides
    /// ~/.config/cove/mcp.json, .mcp.json and .cove/mcp.json).
    #[arg(long = "mcp-config")]
    pub(super) mcp_config: Vec<PathBuf>,
    /// Use the settings of the folder cove runs in (.mcp.json, .cove/mcp.json, .cove/skills)
    /// without asking, and remember that until they change. Read them first: their MCP
    /// servers run on this machine.
    #[arg(long)]
    pub(super) trust: bool,
}

impl RunFlags {
    /// The engine's settings these flags make.
    pub(super) fn settings(&self) -> RunSettings {
        RunSettings {
            max_iterations: self.max_iterations,
            max_cost: self.max_cost,
            max_wait: self.max_wait,
            sequential_tools: self.sequential_tools,
            context_window: self.context_window,
            max_tokens: self.max_tokens,
            tools: self.tools.clone(),
            vision: self.vision,
            context: self.context.clone(),
            knowledge_budget: self.knowledge_budget,
            permissions: self.permissions.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct RunArgs {
    /// What the agent should do.
    task: String,
    /// `provider/model`: openai/gpt-4o, anthropic/claude-sonnet-4-5, ollama/llama3.1, ...
    #[arg(long, env = "COVE_MODEL")]
    model: Option<String>,
    /// How the model calls tools.
    #[arg(long, value_parser = ["native", "xml"])]
    tool_calls: Option<String>,
    /// Have the agent propose a plan (create_plan) and wait for your approval before it
    /// changes anything (also `plan = true` in cove.toml).
    #[arg(long)]
    plan: bool,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    run: RunFlags,
}

#[derive(Debug, Args)]
pub(super) struct ReplyArgs {
    thread: String,
    text: String,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    run: RunFlags,
}

#[derive(Debug, Args)]
pub(super) struct ResumeArgs {
    thread: String,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    run: RunFlags,
}

/// `cove run TASK`: a new thread, run until it ends.
pub(super) async fn run(inv: &Invocation, args: RunArgs) -> Result<ExitCode, CliError> {
    let thread = new_thread(
        inv,
        &args.task,
        args.model.clone(),
        args.tool_calls.clone(),
        &args.sandbox,
    )
    .await?;
    let input = ChatMessage::user(args.task);
    let plan_first = args.plan || inv.file.plan.unwrap_or(false);
    drive(
        inv,
        thread,
        Some(input),
        &args.sandbox,
        &args.run,
        plan_first,
    )
    .await
}

/// A new thread for `task`, with its model (the flag's, `cove.toml`'s or the environment's
/// default), tool-call format and sandbox (a local one gets a workspace named after it).
pub(super) async fn new_thread(
    inv: &Invocation,
    task: &str,
    model: Option<String>,
    tool_calls: Option<String>,
    sandbox: &SandboxArgs,
) -> Result<Thread, CliError> {
    inv.engine()
        .new_thread(task, model, tool_calls, |workspace| {
            Ok::<_, CliError>(
                sandbox_choice::choose(inv, sandbox, || workspace)?
                    .0
                    .label(),
            )
        })
        .await
}

/// `cove reply THREAD TEXT`: the answer to a paused thread's question (its next run), or the
/// end of the takeover a live run waits on.
pub(super) async fn reply(inv: &Invocation, args: ReplyArgs) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(&args.thread)?;
    let message = ChatMessage::user(args.text);
    if let Some(pid) = live_wait(inv, &thread.id)?
        && inv.store.deliver_reply(&thread.id, &message)?
    {
        inv.printer.result(
            &json!({"thread_id": thread.id, "delivered_to_pid": pid}),
            |_| {
                format!(
                    "Delivered to the run waiting in process {pid}; it ends the takeover and continues there."
                )
            },
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !can_prompt(inv, &args.run) {
        // Nothing may come between the calls of the thread's last answer and their results.
        let undecided: Vec<String> = inv
            .store
            .waiting_requests(&thread.id)?
            .into_iter()
            .filter(|r| r.kind == RequestKind::Permission)
            .map(|r| r.id)
            .collect();
        if let Some(first) = undecided.first() {
            return Err(CliError::AwaitingPermission(format!(
                "thread {id}'s last calls wait for your permission first (request {}); nothing was sent: cove permit {id} {first} allow_once|allow_for_thread|deny, then cove resume {id}, then reply",
                undecided.join(", "),
                id = thread.id
            )));
        }
    }
    drive(inv, thread, Some(message), &args.sandbox, &args.run, false).await
}

/// `cove resume THREAD`: continues a thread whose run stopped.
pub(super) async fn resume(inv: &Invocation, args: ResumeArgs) -> Result<ExitCode, CliError> {
    let thread = inv.store.thread(&args.thread)?;
    if let Some(pid) = live_wait(inv, &thread.id)? {
        return Err(CliError::Waiting(format!(
            "thread {id} is running in process {pid}, waiting for a person to hand the browser back; answer with: cove reply {id} \"...\"",
            id = thread.id
        )));
    }
    for request in inv.store.waiting_requests(&thread.id)? {
        match request.kind {
            RequestKind::Plan => {
                return Err(CliError::AwaitingApproval(format!(
                    "thread {id}'s plan waits for your approval: cove approve {id} [--edit FILE], or cove reject {id} \"why\"",
                    id = thread.id
                )));
            }
            RequestKind::Ask => {
                return Err(CliError::Waiting(format!(
                    "thread {id} is waiting for your answer to: {}\nanswer with: cove reply {id} \"...\"",
                    request.summary,
                    id = thread.id
                )));
            }
            // Resuming takes these up: a permission waits again (or applies the decision
            // given meanwhile); a browser wait whose process died is over.
            RequestKind::Permission | RequestKind::Takeover => {}
        }
    }
    drive(inv, thread, None, &args.sandbox, &args.run, false).await
}

/// The process whose run waits on the thread, if it is still alive.
fn live_wait(inv: &Invocation, thread: &str) -> Result<Option<i64>, CliError> {
    Ok(inv.engine().live_wait(thread)?)
}

/// A thread's next run, ready to start: its agent over its sandbox, with its MCP servers.
pub(super) struct Prepared {
    pub(super) run: PreparedRun,
    pub(super) sandbox: Sandbox,
}

impl Prepared {
    /// Ends the MCP servers and closes the sandbox (a local one stops).
    pub(super) async fn close(self) {
        self.run.close().await;
        self.sandbox.close().await;
    }
}

/// Opens `thread`'s sandbox, starts its MCP servers and builds its agent (see
/// [`Engine::begin`](cove_core::session::Engine::begin) and
/// [`Engine::prepare`](cove_core::session::Engine::prepare)).
pub(super) async fn prepare(
    inv: &Invocation,
    thread: &Thread,
    answering: bool,
    sandbox_args: &SandboxArgs,
    flags: &RunFlags,
    plan_first: bool,
    hold_permissions: bool,
) -> Result<Prepared, CliError> {
    let engine = inv.engine();
    let start = RunStart {
        plan_first,
        answering,
        hold_permissions,
    };
    let begun = engine.begin(thread, start)?;
    let project = super::trust::project_trusted(inv, flags.trust, !flags.no_prompt);
    // The servers start while the sandbox does.
    let (mcp, notices) = session::start_mcp(&flags.mcp_config, project);
    inv.printer.say(&notices);
    let sandbox = sandbox_choice::open_thread(inv, &thread.sandbox, sandbox_args).await?;
    let view = SandboxView {
        client: sandbox.client.clone(),
        walled: sandbox.walled(&inv.local),
        machine_view: sandbox.machine_view(&inv.local),
    };
    match engine
        .prepare(begun, view, mcp, &flags.settings(), project)
        .await
    {
        Ok(run) => {
            inv.printer.say(&run.notices);
            Ok(Prepared { run, sandbox })
        }
        Err(e) => {
            sandbox.close().await;
            Err(e.into())
        }
    }
}

/// Runs a thread until it completes, stops, fails, or pauses (prompting for an answer in an
/// interactive terminal, then running on).
pub(super) async fn drive(
    inv: &Invocation,
    thread: Thread,
    mut input: Option<ChatMessage>,
    sandbox_args: &SandboxArgs,
    flags: &RunFlags,
    plan_first: bool,
) -> Result<ExitCode, CliError> {
    let interactive = can_prompt(inv, flags);
    let prepared = prepare(
        inv,
        &thread,
        input.is_some(),
        sandbox_args,
        flags,
        plan_first,
        !interactive,
    )
    .await?;
    let agent = prepared.run.agent.clone();
    let mut renderer = Renderer::terminal(inv.printer.json()).asks_here(interactive);
    for note in &prepared.run.notes {
        renderer.note(note);
    }
    let code = loop {
        let mut run = match agent.start(&thread, input.take()) {
            Ok(run) => run,
            Err(e) => {
                drop(agent);
                prepared.close().await;
                return Err(e.into());
            }
        };
        // Ctrl-C stops the run; its last events (the run's end) are still shown.
        let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
        let mut stopping = false;
        // The person ended the input at a permission prompt: nobody answers here now.
        let mut left = false;
        let mut permissions = PermissionPrompts::default();
        loop {
            if interactive && let Some(id) = permissions.next_to_ask() {
                renderer.prompt_permission(&id);
            }
            tokio::select! {
                event = run.next_event() => match event {
                    Some(event) => {
                        renderer.event(&event);
                        if interactive {
                            permissions.heard(&event.kind);
                        }
                    }
                    None => break,
                },
                line = permissions.line(), if permissions.reading() => match line {
                    Some(line) => permissions.answer(&run, &mut renderer, &line),
                    None => {
                        renderer.left_prompt();
                        left = true;
                        stopping = true;
                        run.stop();
                    }
                },
                _ = &mut ctrl_c, if !stopping => {
                    if permissions.reading() {
                        renderer.left_prompt();
                    }
                    stopping = true;
                    run.stop();
                }
            }
        }
        renderer.done();
        match run.outcome().await {
            Ok(RunOutcome::Interrupted) => {
                let waiting = inv.store.waiting_requests(&thread.id)?;
                if left {
                    renderer.permit_with(&thread.id, &waiting);
                    break ExitCode::from(exit::AWAITING_PERMISSION);
                }
                // Resuming alone would only ask again: the way on starts with cove permit.
                if !inv.printer.json() && waiting.iter().any(|r| r.kind == RequestKind::Permission)
                {
                    renderer.permit_with(&thread.id, &waiting);
                } else {
                    renderer.interrupted(&thread.id);
                }
                break ExitCode::from(exit::INTERRUPTED);
            }
            Ok(RunOutcome::Completed { .. }) => break ExitCode::SUCCESS,
            Ok(RunOutcome::Stopped) => break ExitCode::from(exit::STOPPED),
            Ok(RunOutcome::Paused {
                waits_for: PauseKind::Plan,
                ..
            }) => {
                if interactive {
                    match plan_prompt::ask_at_terminal(inv, &thread.id, &mut renderer).await? {
                        PlanAnswer::RunOn(message) => {
                            input = Some(message);
                            continue;
                        }
                        PlanAnswer::Ended => break ExitCode::SUCCESS,
                        PlanAnswer::Unanswered => {}
                    }
                }
                renderer.approve_with(&thread.id);
                break ExitCode::from(exit::AWAITING_APPROVAL);
            }
            Ok(RunOutcome::Paused {
                waits_for: PauseKind::Permission,
                ..
            }) => {
                renderer.permit_with(&thread.id, &inv.store.waiting_requests(&thread.id)?);
                break ExitCode::from(exit::AWAITING_PERMISSION);
            }
            Ok(RunOutcome::Paused { waits_for, .. }) => {
                let takeover = waits_for == PauseKind::Takeover;
                if interactive {
                    let typing = Typing::start();
                    renderer.prompt_for_answer(takeover);
                    match typing.line().await {
                        Some(answer) if !answer.trim().is_empty() || takeover => {
                            let text = if answer.trim().is_empty() {
                                "I have handed the browser back.".to_string()
                            } else {
                                answer
                            };
                            input = Some(ChatMessage::user(text));
                            continue;
                        }
                        Some(_) => {}
                        None => renderer.left_prompt(),
                    }
                }
                renderer.answer_with(&thread.id);
                break ExitCode::from(exit::PAUSED);
            }
            Err(e) => {
                renderer.failed(&e);
                break CliError::from(e).exit_code();
            }
        }
    };
    if let SandboxSpec::Local { workspace } | SandboxSpec::Host { workspace } =
        &prepared.sandbox.spec
    {
        renderer.workspace(workspace);
    }
    drop(agent);
    prepared.close().await;
    Ok(code)
}

/// Whether the person can be asked at this terminal (their answers, permissions, plans).
fn can_prompt(inv: &Invocation, flags: &RunFlags) -> bool {
    !inv.printer.json() && !flags.no_prompt && std::io::stdin().is_terminal()
}
