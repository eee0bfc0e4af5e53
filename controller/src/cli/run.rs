//! `cove run`, `cove reply` and `cove resume`: a thread's runs, driven through the engine's
//! [`RunHandle`](crate::agent::RunHandle) and shown by the [`Renderer`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use cove_protocol::events::RunStatus;
use cove_protocol::takeover::InControl;
use serde_json::json;

use super::plan::PlanAnswer;
use super::prompts::{PermissionPrompts, Typing};
use super::render::Renderer;
use super::sandbox_choice::{self, SandboxArgs, coved_log};
use super::{CliError, Invocation, exit};
use crate::agent::{Agent, AgentConfig, RunOutcome, ToolMode};
use crate::config;
use crate::context::{ContextMode, ContextSettings};
use crate::llm::ChatMessage;
use crate::llm::choice::{self, DefaultModelError, ModelChoice};
use crate::llm::price::PriceTable;
use crate::llm::profile::profile;
use crate::llm::served::ServedWindow;
use crate::permissions::{Mode, Policy};
use crate::sandbox::{Sandbox, SandboxSpec};
use crate::store::{NewThread, PauseKind, RequestKind, RunState, Thread};
use crate::tools::ToolRegistry;
use crate::web::WebTools;
use cove_protocol::plan::PlanStatus;

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
    mcp_config: Vec<PathBuf>,
    /// Use the settings of the folder cove runs in (.mcp.json, .cove/mcp.json, .cove/skills)
    /// without asking, and remember that until they change. Read them first: their MCP
    /// servers run on this machine.
    #[arg(long)]
    pub(super) trust: bool,
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
    if task.trim().is_empty() {
        return Err(CliError::Usage(
            "the task is empty: say what the agent should do".into(),
        ));
    }
    let named = model
        .or_else(|| std::env::var("COVE_MODEL").ok())
        .filter(|m| !m.trim().is_empty())
        .or_else(|| inv.file.model.clone());
    let model = match named {
        Some(name) => ModelChoice::parse(&name)?,
        None => ModelChoice::default_for_environment()
            .await
            .map_err(|e| match e {
                DefaultModelError::Server(e) => CliError::from(e),
                DefaultModelError::Choose(why) => CliError::Usage(why),
            })?,
    };
    // Fail on a missing key before starting a sandbox.
    choice::connect(&model)?;
    let mode = tool_calls
        .or_else(|| inv.file.tool_calls.clone())
        .unwrap_or_else(|| "native".into());
    let mode = ToolMode::parse(&mode).ok_or_else(|| {
        CliError::Usage(format!("--tool-calls must be native or xml, not {mode:?}"))
    })?;
    let title: String = task
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(100)
        .collect();
    // The id is drawn first so a local workspace can be named after the thread.
    let id = NewThread::fresh_id();
    let workspaces = inv
        .file
        .workspaces
        .clone()
        .unwrap_or_else(|| config::data_dir().join("workspaces"));
    let (spec, _) = sandbox_choice::choose(inv, sandbox, || workspaces.join(&id))?;
    Ok(inv.store.create_thread(NewThread {
        id,
        title,
        model: model.label(),
        tool_mode: mode.as_str().to_string(),
        sandbox: spec.label(),
    })?)
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

/// The process whose run waits on the thread, if it is still alive; a wait left behind by
/// a process that died is cleared.
fn live_wait(inv: &Invocation, thread: &str) -> Result<Option<i64>, CliError> {
    let Some(wait) = inv.store.wait_of(thread)? else {
        return Ok(None);
    };
    let alive = i32::try_from(wait.pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
    if alive {
        return Ok(Some(wait.pid));
    }
    inv.store.end_wait(thread)?;
    Ok(None)
}

/// The engine's settings for `thread` from its model, `cove.toml` and the flags.
fn agent_config(
    inv: &Invocation,
    model: &ModelChoice,
    mode: ToolMode,
    flags: &RunFlags,
    workspace_label: String,
    served: Option<&ServedWindow>,
) -> Result<AgentConfig, CliError> {
    let file = &inv.file;
    let mut prof = profile(model.provider.as_str(), &model.name);
    // What the server runs the model with beats what its name suggests; the user's word
    // beats both.
    if let Some(served) = served {
        prof.context_window = served.tokens;
    }
    if let Some(window) = flags.context_window.or(file.context_window) {
        prof.context_window = window;
    }
    if let Some(vision) = flags.vision.or(file.vision) {
        prof.vision = vision;
    }
    let max_tokens = flags
        .max_tokens
        .or(file.max_tokens)
        .unwrap_or(prof.max_output)
        .min(prof.context_window / 2)
        .max(256);
    let context_mode = flags
        .context
        .clone()
        .or_else(|| file.context.clone())
        .unwrap_or_else(|| "truncate".into());
    let context = ContextSettings {
        mode: ContextMode::parse(&context_mode).ok_or_else(|| {
            CliError::Usage(format!(
                "context must be truncate, summarize or off, not {context_mode:?}"
            ))
        })?,
        knowledge_budget: flags
            .knowledge_budget
            .or(file.knowledge_budget)
            .unwrap_or(crate::context::knowledge::DEFAULT_BUDGET),
        prefix_stable: true,
    };
    let prices = PriceTable::new(&file.prices).map_err(|e| CliError::Usage(e.to_string()))?;
    let price = prices.price(&model.name);
    let max_cost = flags.max_cost.or(file.max_cost);
    if let Some(usd) = max_cost {
        if !(usd.is_finite() && usd > 0.0) {
            return Err(CliError::Usage(format!(
                "--max-cost must be a number of dollars above 0, not {usd}"
            )));
        }
        if price.is_none() {
            return Err(CliError::Usage(format!(
                "--max-cost needs the price of {}, which Cove does not know: set [prices.\"{}\"] with input and output (dollars per million tokens) in cove.toml",
                model.name, model.name
            )));
        }
    }
    let mut config = AgentConfig::new(model.name.clone(), model.label(), prof, mode)
        .max_tokens(max_tokens)
        .parallel_tools(!(flags.sequential_tools || file.sequential_tools.unwrap_or(false)))
        .workspace_label(workspace_label)
        .context(context)
        .price(price)
        .max_cost(max_cost);
    if let Some(iterations) = flags.max_iterations.or(file.max_iterations) {
        config = config.max_iterations(iterations);
    }
    if let Some(wait) = file.mcp_first_call_wait {
        if !(wait.is_finite() && (0.0..=600.0).contains(&wait)) {
            return Err(CliError::Usage(format!(
                "mcp_first_call_wait in cove.toml must be 0 to 600 seconds, not {wait}"
            )));
        }
        config = config.mcp_first_call_wait(std::time::Duration::from_secs_f64(wait));
    }
    let mode = flags
        .permissions
        .as_deref()
        .map(str::parse::<Mode>)
        .transpose()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let policy = Policy::new(&file.permissions.clone().unwrap_or_default(), mode)
        .map_err(|e| CliError::Usage(format!("[permissions] in cove.toml: {e}")))?;
    Ok(config.permissions(policy))
}

/// The thread's sandbox, opened; a takeover a person still holds ends when they answer.
async fn open_sandbox(
    inv: &Invocation,
    thread: &Thread,
    answering: bool,
    args: &SandboxArgs,
) -> Result<Sandbox, CliError> {
    let spec = SandboxSpec::from_label(&thread.sandbox);
    let token = sandbox_choice::token_for(inv, args, &spec);
    let sandbox = sandbox_choice::open(inv, spec, token, Some(&coved_log())).await?;
    if answering
        && let Ok(status) = sandbox.client.takeover_status(0).await
        && status.in_control == InControl::Person
    {
        // The person answered: whatever they were doing in the browser is over.
        let _ = sandbox.client.takeover_end().await;
    }
    Ok(sandbox)
}

/// A thread's next run, ready to start: its agent over its sandbox, with its MCP servers.
pub(super) struct Prepared {
    pub(super) agent: Arc<Agent>,
    pub(super) sandbox: Sandbox,
    mcp: Option<Arc<crate::mcp::McpHub>>,
    /// What the person should know about how the run was set up.
    pub(super) notes: Vec<String>,
}

impl Prepared {
    /// Ends the MCP servers and closes the sandbox (a local one stops).
    pub(super) async fn close(self) {
        drop(self.agent);
        if let Some(hub) = &self.mcp {
            hub.shutdown().await;
        }
        self.sandbox.close().await;
    }
}

/// Opens `thread`'s sandbox, starts its MCP servers and builds its agent. With
/// `plan_first`, or while the thread's plan is not approved yet, the agent must have a plan
/// approved before it changes anything. With `hold_permissions` no one answers permission
/// requests during a run: the run pauses on them.
pub(super) async fn prepare(
    inv: &Invocation,
    thread: &Thread,
    answering: bool,
    sandbox_args: &SandboxArgs,
    flags: &RunFlags,
    plan_first: bool,
    hold_permissions: bool,
) -> Result<Prepared, CliError> {
    let plan_first = plan_first
        || inv
            .store
            .current_plan(&thread.id)?
            .is_some_and(|p| p.status != PlanStatus::Approved);
    let model = ModelChoice::parse(&thread.model)?;
    let provider = choice::connect(&model)?;
    // A run still marked running belongs to a controller that was killed.
    if let Some(last) = inv.store.last_run(&thread.id)?
        && last.status == RunState::Running
    {
        inv.store.end_run(
            &last,
            RunStatus::Stopped,
            Some("interrupted: the controller stopped"),
            None,
        )?;
    }
    let mode = ToolMode::parse(&thread.tool_mode).unwrap_or(ToolMode::Native);
    let project = super::trust::project_trusted(inv, flags.trust, !flags.no_prompt);
    // The servers start while the sandbox does.
    let mcp = super::mcp::start(inv, &flags.mcp_config, project);
    let sandbox = open_sandbox(inv, thread, answering, sandbox_args).await?;
    let workspace_label = sandbox
        .client
        .info()
        .await
        .map(|i| i.workspace)
        .unwrap_or_else(|_| "/workspace".into());
    // A local sandbox on this machine's network reaches its loopback services: its walls
    // stop short, and auto asks as it does with none.
    let walled = match sandbox.spec {
        SandboxSpec::Host { .. } => false,
        SandboxSpec::Local { .. } => {
            inv.local.network != crate::sandbox::local::bwrap::Network::Host
        }
        _ => true,
    };
    let served = if flags.context_window.or(inv.file.context_window).is_none() {
        choice::served_window(&model).await
    } else {
        None
    };
    // Walls on this machine: a deletion aimed at its other places is worth a question.
    let shown = match &sandbox.spec {
        SandboxSpec::Local { workspace } if walled => {
            Some(crate::sandbox::local::bwrap::shown_places_by_both_names(
                workspace,
                &inv.local.read_only,
                &inv.local.writable,
            ))
        }
        _ => None,
    };
    let config = match agent_config(inv, &model, mode, flags, workspace_label, served.as_ref()) {
        Ok(config) => {
            let config = config
                .plan_first(plan_first)
                .walls(walled)
                .pause_for_permission(hold_permissions);
            match shown {
                Some(shown) => config.machine_view(shown),
                None => config,
            }
        }
        Err(e) => {
            sandbox.close().await;
            return Err(e);
        }
    };
    let web = match WebTools::configured(inv.file.web.as_ref(), &|name| std::env::var(name).ok()) {
        Ok(web) => web,
        Err(e) => {
            sandbox.close().await;
            return Err(CliError::Setup(e));
        }
    };
    let window = config.profile.context_window;
    let compact = match tool_set(inv, flags) {
        Ok(set) => set.unwrap_or(window <= COMPACT_WINDOW),
        Err(e) => {
            sandbox.close().await;
            return Err(e);
        }
    };
    let mut notes = Vec::new();
    if let Some(served) = &served {
        notes.push(format!(
            "the server runs {} with a window of {} tokens (from {})",
            model.name,
            crate::format::thousands(u64::from(served.tokens)),
            served.source
        ));
    }
    let mut registry = ToolRegistry::standard()
        .with_skills(super::skills::for_run(inv, project))
        .with_web(web);
    if compact {
        registry = registry.compact(config.plan_first);
        notes.push(format!(
            "compact tools: the core tools and a short method, for a window of {} tokens (--tools full offers them all)",
            crate::format::thousands(u64::from(window))
        ));
    }
    if let Some(hub) = &mcp {
        registry = registry.with_mcp(hub.clone());
    }
    let agent = Arc::new(
        Agent::new(config, provider, inv.store.clone(), sandbox.client.clone())
            .with_registry(Arc::new(registry)),
    );
    Ok(Prepared {
        agent,
        sandbox,
        mcp,
        notes,
    })
}

/// Windows this small or smaller get the compact tool set unless told otherwise.
const COMPACT_WINDOW: u32 = 16_384;

/// The tool set asked for (`--tools`, `tools` in cove.toml): compact or not; none for auto.
fn tool_set(inv: &Invocation, flags: &RunFlags) -> Result<Option<bool>, CliError> {
    match flags.tools.as_deref().or(inv.file.tools.as_deref()) {
        None | Some("auto") => Ok(None),
        Some("full") => Ok(Some(false)),
        Some("compact") => Ok(Some(true)),
        Some(other) => Err(CliError::Usage(format!(
            "tools in cove.toml must be auto, full or compact, not {other:?}"
        ))),
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
    let agent = prepared.agent.clone();
    let mut renderer = Renderer::terminal(inv.printer.json()).asks_here(interactive);
    for note in &prepared.notes {
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
                    match super::plan::ask_at_terminal(inv, &thread.id, &mut renderer).await? {
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
