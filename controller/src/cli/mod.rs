//! The `cove` command line.

mod render;
mod sandboxes;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use cove_protocol::browser::{NavigateTo, StateQuery};
use cove_protocol::events::RunStatus;
use cove_protocol::files::{ListQuery, ReadRequest};
use cove_protocol::shell::ExecRequest;

use crate::agent::{Agent, AgentConfig, RunOutcome, ToolMode};
use crate::config::{self, FileConfig};
use crate::context::knowledge::{MAX_ENTRY_BYTES, cap_entry};
use crate::context::{ContextMode, ContextSettings};
use crate::llm::ChatMessage;
use crate::llm::choice::{self, ModelChoice};
use crate::llm::profile::profile;
use crate::sandbox::{LocalDaemon, Sandbox, SandboxSpec};
use crate::store::{MessageKind, NewThread, RunState, Store, Thread};
use render::Renderer;

/// Exit code of a run that waits for the user's answer.
pub const EXIT_PAUSED: u8 = 3;
/// Exit code of a run stopped at its iteration cap.
pub const EXIT_STOPPED: u8 = 4;

/// Cove: an autonomous agent that works in a sandbox with a shell, files and a browser.
#[derive(Debug, Parser)]
#[command(name = "cove", version)]
pub struct Cli {
    /// Print run events (and command results) as JSON lines.
    #[arg(long, global = true)]
    json: bool,

    /// The database file (default ~/.local/share/cove/cove.db).
    #[arg(long, global = true, env = "COVE_DB")]
    db: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an agent on a task.
    Run(RunArgs),
    /// Answer the question a paused thread asked, and continue it.
    Reply {
        thread: String,
        text: String,
        #[command(flatten)]
        sandbox: SandboxArgs,
        #[command(flatten)]
        run: RunFlags,
    },
    /// Continue a thread whose run stopped (killed, failed, or at its iteration cap).
    Resume {
        thread: String,
        #[command(flatten)]
        sandbox: SandboxArgs,
        #[command(flatten)]
        run: RunFlags,
    },
    /// List threads.
    Threads,
    /// Show a thread's messages.
    Show { thread: String },
    /// Manage sandboxes.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Manage the knowledge the agent keeps in mind (in its system prompt).
    #[command(subcommand)]
    Knowledge(KnowledgeCommand),
    /// Run a shell command in the sandbox (no model involved).
    Exec {
        command: String,
        #[arg(long, default_value = "default")]
        session: String,
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
    /// List files of the sandbox's workspace.
    Ls {
        #[arg(default_value = ".")]
        path: String,
        #[arg(long, default_value_t = 1)]
        depth: u32,
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
    /// Print a text file of the sandbox's workspace.
    Cat {
        path: String,
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
    /// Open a URL in the sandbox's browser and print what the agent would see.
    Browse {
        url: String,
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
    /// Save a screenshot of the sandbox's browser.
    Screenshot {
        #[arg(short, long, default_value = "screenshot.jpg")]
        output: PathBuf,
        /// Open this URL first.
        #[arg(long)]
        url: Option<String>,
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
}

#[derive(Debug, Subcommand)]
enum SandboxCommand {
    /// Start a local sandbox and print its URL and token; runs until interrupted.
    Up {
        /// Workspace folder (default: the current folder).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
    },
    /// Check the configured sandbox.
    Status {
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
    /// List the sandboxes named in cove.toml and those Cove made, with health and version.
    Ls,
    /// Make a sandbox container with Docker (the Engine API at DOCKER_HOST) and start it.
    Create {
        /// The sandbox's name, for --sandbox NAME.
        name: String,
        /// The sandbox image (build it from sandbox-image/).
        #[arg(long, default_value = crate::sandbox::docker::DEFAULT_IMAGE)]
        image: String,
        /// Memory limit (512m, 4g).
        #[arg(long)]
        memory: Option<String>,
        /// CPU limit in cores.
        #[arg(long)]
        cpus: Option<f64>,
    },
    /// Start a stopped Docker sandbox.
    Start { name: String },
    /// Stop a Docker sandbox (its files stay in the container).
    Stop { name: String },
    /// Remove a Docker sandbox and its container.
    Rm { name: String },
}

#[derive(Debug, Subcommand)]
enum KnowledgeCommand {
    /// Add an entry: for every thread, or with --thread for one (the first 100 KB of text).
    Add {
        /// Read the entry from this text file.
        #[arg(long, conflicts_with = "text", required_unless_present = "text")]
        file: Option<PathBuf>,
        /// The entry's text.
        #[arg(long)]
        text: Option<String>,
        /// A short name (default: the file name or the first words).
        #[arg(long)]
        name: Option<String>,
        /// Only for this thread.
        #[arg(long)]
        thread: Option<String>,
    },
    /// List entries (every-thread ones, and the thread's with --thread).
    Ls {
        #[arg(long)]
        thread: Option<String>,
    },
    /// Remove an entry.
    Rm { id: i64 },
}

#[derive(Debug, Clone, Args)]
struct SandboxArgs {
    /// `local` (start coved here) or the URL of a running coved.
    #[arg(long, env = "COVE_SANDBOX_URL")]
    sandbox: Option<String>,
    /// Token of a remote sandbox.
    #[arg(long, env = "COVE_SANDBOX_TOKEN", hide_env_values = true)]
    sandbox_token: Option<String>,
    /// Workspace folder of a local sandbox.
    #[arg(long, env = "COVE_WORKSPACE")]
    workspace: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
struct RunFlags {
    /// Iteration cap of the run (default 100).
    #[arg(long)]
    max_iterations: Option<u32>,
    /// Run a batch of tool calls one after another instead of in parallel.
    #[arg(long)]
    sequential_tools: bool,
    /// Override the model's context window (tokens), for local models.
    #[arg(long)]
    context_window: Option<u32>,
    /// Override the output cap of each call (tokens).
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Never prompt for answers in the terminal; pause and exit instead.
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
}

#[derive(Debug, Args)]
struct RunArgs {
    /// What the agent should do.
    task: String,
    /// `provider/model`: openai/gpt-4o, anthropic/claude-sonnet-4-5, ollama/llama3.1, ...
    #[arg(long, env = "COVE_MODEL")]
    model: Option<String>,
    /// How the model calls tools.
    #[arg(long, value_parser = ["native", "xml"])]
    tool_calls: Option<String>,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    run: RunFlags,
}

/// A failure with one line for the user.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failure(String);

fn fail(e: impl std::fmt::Display) -> Failure {
    Failure(e.to_string())
}

struct Context {
    json: bool,
    store: Arc<Store>,
    file: FileConfig,
}

/// Runs the command line; returns the process exit code.
pub async fn main(cli: Cli) -> ExitCode {
    match dispatch(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cove: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    let file = config::load_file().map_err(fail)?;
    let db = cli
        .db
        .clone()
        .or_else(|| file.db.clone())
        .unwrap_or_else(|| config::data_dir().join("cove.db"));
    let store = Arc::new(Store::open(&db).map_err(fail)?);
    let ctx = Context {
        json: cli.json,
        store,
        file,
    };
    match cli.command {
        Command::Run(args) => run(&ctx, args).await,
        Command::Reply {
            thread,
            text,
            sandbox,
            run,
        } => {
            let thread = ctx.store.thread(&thread).map_err(fail)?;
            let message = ChatMessage::user(text);
            if let Some(pid) = live_wait(&ctx, &thread.id)? {
                // A run is waiting for the browser to come back: the reply goes to it.
                if ctx
                    .store
                    .deliver_reply(&thread.id, &message)
                    .map_err(fail)?
                {
                    if !ctx.json {
                        println!(
                            "Delivered to the run waiting in process {pid}; it ends the takeover and continues there."
                        );
                    }
                    return Ok(ExitCode::SUCCESS);
                }
            }
            drive(&ctx, thread, Some(message), &sandbox, &run).await
        }
        Command::Resume {
            thread,
            sandbox,
            run,
        } => {
            let thread = ctx.store.thread(&thread).map_err(fail)?;
            if let Some(pid) = live_wait(&ctx, &thread.id)? {
                return Err(Failure(format!(
                    "thread {} is running in process {pid}, waiting for a person to hand the browser back; answer with: cove reply {} \"...\"",
                    thread.id, thread.id
                )));
            }
            if let Some(last) = ctx.store.last_run(&thread.id).map_err(fail)?
                && last.status == RunState::Paused
            {
                return Err(Failure(format!(
                    "thread {} is waiting for your answer to: {}\nanswer with: cove reply {} \"...\"",
                    thread.id,
                    last.pause_text.unwrap_or_default(),
                    thread.id
                )));
            }
            drive(&ctx, thread, None, &sandbox, &run).await
        }
        Command::Threads => threads(&ctx),
        Command::Show { thread } => show(&ctx, &thread),
        Command::Sandbox(cmd) => sandbox_command(&ctx, cmd).await,
        Command::Knowledge(cmd) => knowledge_command(&ctx, cmd),
        Command::Exec {
            command,
            session,
            sandbox,
        } => {
            let sb = open_operator_sandbox(&ctx, &sandbox).await?;
            let result = sb
                .client
                .exec(
                    &ExecRequest::new(command)
                        .in_session(session)
                        .with_timeout(600),
                )
                .await;
            sb.close().await;
            let out = result.map_err(fail)?;
            if ctx.json {
                println!("{}", serde_json::to_string(&out).unwrap_or_default());
            } else {
                print!("{}", out.output);
                if !out.completed {
                    eprintln!("cove: still running after 600 s");
                }
            }
            Ok(ExitCode::from(
                u8::try_from(out.exit_code.unwrap_or(1).clamp(0, 255)).unwrap_or(1),
            ))
        }
        Command::Ls {
            path,
            depth,
            sandbox,
        } => {
            let sb = open_operator_sandbox(&ctx, &sandbox).await?;
            let result = sb.client.list(&ListQuery { path, depth }).await;
            sb.close().await;
            let list = result.map_err(fail)?;
            if ctx.json {
                println!("{}", serde_json::to_string(&list).unwrap_or_default());
            } else {
                for e in list.entries {
                    let suffix = if e.is_dir { "/" } else { "" };
                    println!("{}{suffix}", e.path);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Cat { path, sandbox } => {
            let sb = open_operator_sandbox(&ctx, &sandbox).await?;
            let result = sb.client.read(&ReadRequest::whole(path)).await;
            sb.close().await;
            print!("{}", result.map_err(fail)?.content);
            Ok(ExitCode::SUCCESS)
        }
        Command::Browse { url, sandbox } => {
            let sb = open_operator_sandbox(&ctx, &sandbox).await?;
            let result = sb
                .client
                .browser(&NavigateTo { url }, StateQuery::lean())
                .await;
            sb.close().await;
            let state = result.map_err(fail)?;
            if ctx.json {
                println!("{}", serde_json::to_string(&state).unwrap_or_default());
            } else {
                println!("{} — {}\n{}", state.title, state.url, state.elements);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Screenshot {
            output,
            url,
            sandbox,
        } => {
            let sb = open_operator_sandbox(&ctx, &sandbox).await?;
            let result = async {
                if let Some(url) = url {
                    sb.client
                        .browser(&NavigateTo { url }, StateQuery::lean())
                        .await?;
                }
                sb.client.screenshot().await
            }
            .await;
            sb.close().await;
            let jpeg = result.map_err(fail)?;
            std::fs::write(&output, &jpeg)
                .map_err(|e| Failure(format!("cannot write {}: {e}", output.display())))?;
            println!("{} ({} bytes)", output.display(), jpeg.len());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn sandbox_spec(
    ctx: &Context,
    args: &SandboxArgs,
    default_workspace: impl FnOnce() -> PathBuf,
) -> Result<(SandboxSpec, Option<String>), Failure> {
    let choice = args.sandbox.clone().or_else(|| ctx.file.sandbox.clone());
    if let Some(name) = choice.as_deref()
        && !ctx.file.sandboxes.contains_key(name)
        && ctx.store.sandbox(name).map_err(fail)?.is_some()
    {
        return Ok((
            SandboxSpec::Docker {
                name: name.to_string(),
            },
            None,
        ));
    }
    if let Some(named) = choice.as_deref().and_then(|n| ctx.file.sandboxes.get(n)) {
        let token = args
            .sandbox_token
            .clone()
            .or_else(|| named.token.clone())
            .or_else(|| ctx.file.sandbox_token.clone());
        return Ok((
            SandboxSpec::Remote {
                url: named.url.clone(),
            },
            token,
        ));
    }
    let token = args.sandbox_token.clone().or_else(|| {
        choice
            .as_deref()
            .and_then(|url| ctx.file.token_for(url))
            .or_else(|| ctx.file.sandbox_token.clone())
    });
    match choice.as_deref() {
        None | Some("local") => {
            let workspace = args.workspace.clone().unwrap_or_else(default_workspace);
            let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
            Ok((SandboxSpec::Local { workspace }, None))
        }
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => Ok((
            SandboxSpec::Remote {
                url: url.to_string(),
            },
            token,
        )),
        Some(other) => {
            let names: Vec<&str> = ctx.file.sandboxes.keys().map(String::as_str).collect();
            Err(Failure(format!(
                "--sandbox must be `local`, a URL or a sandbox named in cove.toml ({}), not {other:?}",
                if names.is_empty() {
                    "none are".to_string()
                } else {
                    names.join(", ")
                }
            )))
        }
    }
}

fn coved_log() -> PathBuf {
    config::data_dir().join("logs/coved.log")
}

async fn open_operator_sandbox(ctx: &Context, args: &SandboxArgs) -> Result<Sandbox, Failure> {
    let (spec, token) = sandbox_spec(ctx, args, || PathBuf::from("."))?;
    sandboxes::open(ctx, spec, token, Some(&coved_log())).await
}

async fn run(ctx: &Context, args: RunArgs) -> Result<ExitCode, Failure> {
    let model = args
        .model
        .clone()
        .or_else(|| ctx.file.model.clone())
        .map(|m| ModelChoice::parse(&m))
        .transpose()
        .map_err(fail)?
        .unwrap_or_else(ModelChoice::default_for_environment);
    // Fail on a missing key before starting a sandbox.
    choice::connect(&model).map_err(fail)?;
    let mode = args
        .tool_calls
        .clone()
        .or_else(|| ctx.file.tool_calls.clone())
        .unwrap_or_else(|| "native".into());
    let mode = ToolMode::parse(&mode)
        .ok_or_else(|| Failure(format!("--tool-calls must be native or xml, not {mode:?}")))?;
    // The id is drawn first so a local workspace can be named after the thread.
    let title: String = args
        .task
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(100)
        .collect();
    let id = NewThread::fresh_id();
    let workspaces = ctx
        .file
        .workspaces
        .clone()
        .unwrap_or_else(|| config::data_dir().join("workspaces"));
    let (spec, _) = sandbox_spec(ctx, &args.sandbox, || workspaces.join(&id))?;
    let thread = ctx
        .store
        .create_thread(NewThread {
            id,
            title,
            model: model.label(),
            tool_mode: mode.as_str().to_string(),
            sandbox: spec.label(),
        })
        .map_err(fail)?;
    drive(
        ctx,
        thread,
        Some(ChatMessage::user(args.task)),
        &args.sandbox,
        &args.run,
    )
    .await
}

/// Runs a thread until it completes, stops, fails, or pauses (prompting for an answer in an
/// interactive terminal).
/// The process whose run waits on the thread, if it is still alive; a wait left behind by
/// a process that died is cleared.
fn live_wait(ctx: &Context, thread: &str) -> Result<Option<i64>, Failure> {
    let Some(wait) = ctx.store.wait_of(thread).map_err(fail)? else {
        return Ok(None);
    };
    let alive = i32::try_from(wait.pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
    if alive {
        return Ok(Some(wait.pid));
    }
    ctx.store.end_wait(thread).map_err(fail)?;
    Ok(None)
}

async fn drive(
    ctx: &Context,
    thread: Thread,
    mut input: Option<ChatMessage>,
    sandbox_args: &SandboxArgs,
    flags: &RunFlags,
) -> Result<ExitCode, Failure> {
    let model = ModelChoice::parse(&thread.model).map_err(fail)?;
    let provider = choice::connect(&model).map_err(fail)?;
    // A run still marked running belongs to a controller that was killed.
    if let Some(last) = ctx.store.last_run(&thread.id).map_err(fail)?
        && last.status == RunState::Running
    {
        ctx.store
            .end_run(
                &last,
                RunStatus::Stopped,
                Some("interrupted: the controller stopped"),
                None,
            )
            .map_err(fail)?;
    }
    let mode = ToolMode::parse(&thread.tool_mode).unwrap_or(ToolMode::Native);
    let spec = SandboxSpec::from_label(&thread.sandbox);
    let token = sandbox_args.sandbox_token.clone().or_else(|| match &spec {
        SandboxSpec::Remote { url } => ctx.file.token_for(url),
        SandboxSpec::Local { .. } | SandboxSpec::Docker { .. } => None,
    });
    let sandbox = sandboxes::open(ctx, spec.clone(), token, Some(&coved_log())).await?;
    if input.is_some()
        && let Ok(status) = sandbox.client.takeover_status(0).await
        && status.in_control == cove_protocol::takeover::InControl::Person
    {
        // The person answered: whatever they were doing in the browser is over.
        let _ = sandbox.client.takeover_end().await;
    }
    let mut prof = profile(model.provider.as_str(), &model.name);
    if let Some(window) = flags.context_window.or(ctx.file.context_window) {
        prof.context_window = window;
    }
    if let Some(vision) = flags.vision.or(ctx.file.vision) {
        prof.vision = vision;
    }
    let max_tokens = flags
        .max_tokens
        .or(ctx.file.max_tokens)
        .unwrap_or(prof.max_output)
        .min(prof.context_window / 2)
        .max(256);
    let context_mode = flags
        .context
        .clone()
        .or_else(|| ctx.file.context.clone())
        .unwrap_or_else(|| "truncate".into());
    let context = ContextSettings {
        mode: ContextMode::parse(&context_mode).ok_or_else(|| {
            Failure(format!(
                "context must be truncate, summarize or off, not {context_mode:?}"
            ))
        })?,
        knowledge_budget: flags
            .knowledge_budget
            .or(ctx.file.knowledge_budget)
            .unwrap_or(crate::context::knowledge::DEFAULT_BUDGET),
    };
    let workspace_label = sandbox
        .client
        .info()
        .await
        .map(|i| i.workspace)
        .unwrap_or_else(|_| "/workspace".into());
    let mut config = AgentConfig::new(model.name.clone(), model.label(), prof, mode)
        .max_tokens(max_tokens)
        .parallel_tools(!(flags.sequential_tools || ctx.file.sequential_tools.unwrap_or(false)))
        .workspace_label(workspace_label.clone())
        .context(context);
    if let Some(iterations) = flags.max_iterations.or(ctx.file.max_iterations) {
        config = config.max_iterations(iterations);
    }
    let agent = Arc::new(Agent::new(
        config,
        provider,
        ctx.store.clone(),
        sandbox.client.clone(),
    ));
    let interactive = !ctx.json && !flags.no_prompt && std::io::stdin().is_terminal();
    let mut renderer = Renderer::terminal(ctx.json);
    let code = loop {
        let mut run = agent.start(&thread, input.take()).map_err(fail)?;
        // Ctrl-C stops the run; its last events (the run's end) are still shown.
        let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
        let mut stopping = false;
        loop {
            tokio::select! {
                event = run.next_event() => match event {
                    Some(event) => renderer.event(&event),
                    None => break,
                },
                _ = &mut ctrl_c, if !stopping => {
                    stopping = true;
                    run.stop();
                }
            }
        }
        renderer.done();
        let outcome = run.outcome().await;
        match outcome {
            Ok(RunOutcome::Interrupted) => {
                renderer.interrupted(&thread.id);
                sandbox.close().await;
                return Ok(ExitCode::from(130));
            }
            Ok(RunOutcome::Completed { .. }) => break ExitCode::SUCCESS,
            Ok(RunOutcome::Stopped) => break ExitCode::from(EXIT_STOPPED),
            Ok(RunOutcome::Paused { takeover, .. }) => {
                if interactive {
                    let prompt = if takeover {
                        "When you are done in the browser, press Enter (or type a note): "
                    } else {
                        "Your answer (empty to stop here): "
                    };
                    let answer = read_line(prompt).await;
                    if !answer.trim().is_empty() || takeover {
                        let text = if answer.trim().is_empty() {
                            "I have handed the browser back.".to_string()
                        } else {
                            answer
                        };
                        input = Some(ChatMessage::user(text));
                        continue;
                    }
                }
                renderer.answer_with(&thread.id);
                break ExitCode::from(EXIT_PAUSED);
            }
            Err(e) => {
                renderer.failed(&e);
                break ExitCode::FAILURE;
            }
        }
    };
    if let SandboxSpec::Local { workspace } = &spec {
        renderer.workspace(workspace);
    }
    sandbox.close().await;
    Ok(code)
}

async fn read_line(prompt: &str) -> String {
    let prompt = prompt.to_string();
    tokio::task::spawn_blocking(move || {
        print!("{prompt}");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        line.trim_end().to_string()
    })
    .await
    .unwrap_or_default()
}

fn threads(ctx: &Context) -> Result<ExitCode, Failure> {
    let threads = ctx.store.threads().map_err(fail)?;
    if ctx.json {
        for t in &threads {
            println!("{}", serde_json::to_string(t).unwrap_or_default());
        }
    } else if threads.is_empty() {
        println!("No threads yet. Start one with: cove run \"...\"");
    } else {
        for t in &threads {
            let when = humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_millis(u64::try_from(t.updated_at).unwrap_or(0)),
            );
            println!("{}  {:<9}  {when}  {}", t.id, t.status, t.title);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show(ctx: &Context, id: &str) -> Result<ExitCode, Failure> {
    let thread = ctx.store.thread(id).map_err(fail)?;
    let messages = ctx.store.messages(&thread.id).map_err(fail)?;
    if ctx.json {
        for m in &messages {
            println!("{}", serde_json::to_string(m).unwrap_or_default());
        }
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "thread {} · {} · {} · {}",
        thread.id, thread.status, thread.model, thread.sandbox
    );
    for m in &messages {
        if m.kind == MessageKind::Summary {
            println!(
                "\n[summary of messages {} to {}] {}",
                m.content["first"],
                m.content["last"],
                m.content["text"].as_str().unwrap_or_default().trim()
            );
            continue;
        }
        if !m.is_llm_message {
            continue;
        }
        let Ok(message) = serde_json::from_value::<ChatMessage>(m.content.clone()) else {
            continue;
        };
        let text = message.text();
        let calls: Vec<String> = message
            .tool_calls
            .iter()
            .map(|c| format!("{}({})", c.name, c.arguments))
            .collect();
        println!("\n[{}] {}", m.kind, text.trim());
        for call in calls {
            println!("  → {call}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn knowledge_command(ctx: &Context, cmd: KnowledgeCommand) -> Result<ExitCode, Failure> {
    match cmd {
        KnowledgeCommand::Add {
            file,
            text,
            name,
            thread,
        } => {
            let thread = thread
                .map(|t| ctx.store.thread(&t).map(|t| t.id))
                .transpose()
                .map_err(fail)?;
            let (content, default_name, full_len) = match (file, text) {
                (Some(path), _) => {
                    let bytes = std::fs::read(&path)
                        .map_err(|e| Failure(format!("cannot read {}: {e}", path.display())))?;
                    if bytes.iter().take(8192).any(|b| *b == 0) {
                        return Err(Failure(format!(
                            "{} is not a text file; knowledge entries are text",
                            path.display()
                        )));
                    }
                    // A character cut at the 100 KB mark must not become a replacement sign.
                    let head = &bytes[..bytes.len().min(MAX_ENTRY_BYTES + 4)];
                    let text = String::from_utf8_lossy(head).into_owned();
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "file".into());
                    (cap_entry(&text).to_string(), name, bytes.len())
                }
                (None, Some(text)) => {
                    let name: String = text
                        .split_whitespace()
                        .take(6)
                        .collect::<Vec<_>>()
                        .join(" ")
                        .chars()
                        .take(60)
                        .collect();
                    let len = text.len();
                    (cap_entry(&text).to_string(), name, len)
                }
                (None, None) => return Err(Failure("give --file or --text".into())),
            };
            if content.trim().is_empty() {
                return Err(Failure("the entry is empty".into()));
            }
            let name = name.unwrap_or(default_name);
            let id = ctx
                .store
                .add_knowledge(thread.as_deref(), &name, &content)
                .map_err(fail)?;
            let scope = thread
                .as_deref()
                .map_or("every thread".to_string(), |t| format!("thread {t}"));
            if ctx.json {
                println!(
                    "{}",
                    serde_json::json!({"id": id, "name": name, "bytes": content.len(), "truncated": full_len > content.len()})
                );
            } else {
                println!(
                    "knowledge {id} \"{name}\" ({} bytes) added for {scope}",
                    content.len()
                );
                if full_len > content.len() {
                    println!(
                        "note: only the first 100 KB of {} bytes were kept",
                        full_len
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        KnowledgeCommand::Ls { thread } => {
            let thread = thread
                .map(|t| ctx.store.thread(&t).map(|t| t.id))
                .transpose()
                .map_err(fail)?;
            let entries = ctx.store.knowledge(thread.as_deref()).map_err(fail)?;
            let entries: Vec<_> = entries
                .into_iter()
                .filter(|e| thread.is_some() || e.thread_id.is_none())
                .collect();
            if ctx.json {
                for e in &entries {
                    println!("{}", serde_json::to_string(e).unwrap_or_default());
                }
            } else if entries.is_empty() {
                println!("No knowledge yet. Add some with: cove knowledge add --text \"...\"");
            } else {
                for e in entries.iter().rev() {
                    let scope = e.thread_id.as_deref().unwrap_or("all");
                    println!(
                        "{:>4}  {:<8}  {:>7} B  {}",
                        e.id,
                        scope,
                        e.content.len(),
                        e.name
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        KnowledgeCommand::Rm { id } => {
            if ctx.store.remove_knowledge(id).map_err(fail)? {
                println!("knowledge {id} removed");
                Ok(ExitCode::SUCCESS)
            } else {
                Err(Failure(format!(
                    "no knowledge entry {id}; `cove knowledge ls` lists them"
                )))
            }
        }
    }
}

async fn sandbox_command(ctx: &Context, cmd: SandboxCommand) -> Result<ExitCode, Failure> {
    match cmd {
        SandboxCommand::Up { workspace, listen } => {
            let workspace = workspace.unwrap_or_else(|| PathBuf::from("."));
            let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
            std::fs::create_dir_all(&workspace).map_err(fail)?;
            let mut daemon = LocalDaemon::start_at(&workspace, &listen, Some(&coved_log()))
                .await
                .map_err(fail)?;
            if ctx.json {
                println!(
                    "{}",
                    serde_json::json!({"url": daemon.url, "token": daemon.token, "workspace": workspace})
                );
            } else {
                println!(
                    "sandbox: {}\ntoken: {}\nworkspace: {}",
                    daemon.url,
                    daemon.token,
                    workspace.display()
                );
                println!(
                    "Use it with: COVE_SANDBOX_URL={} COVE_SANDBOX_TOKEN={} cove run \"...\"",
                    daemon.url, daemon.token
                );
                println!("Press Ctrl-C to stop it.");
            }
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = daemon.wait() => {
                    return Err(Failure(format!("the sandbox stopped; see {}", coved_log().display())));
                }
            }
            daemon.stop().await;
            Ok(ExitCode::SUCCESS)
        }
        SandboxCommand::Ls => sandboxes::ls(ctx).await,
        SandboxCommand::Create {
            name,
            image,
            memory,
            cpus,
        } => sandboxes::create(ctx, &name, image, memory.as_deref(), cpus).await,
        SandboxCommand::Start { name } => sandboxes::start(ctx, &name).await,
        SandboxCommand::Stop { name } => sandboxes::stop(ctx, &name).await,
        SandboxCommand::Rm { name } => sandboxes::remove(ctx, &name).await,
        SandboxCommand::Status { sandbox } => {
            let (spec, token) = sandbox_spec(ctx, &sandbox, || PathBuf::from("."))?;
            match spec {
                SandboxSpec::Local { .. } => {
                    let coved = crate::sandbox::find_coved().map_err(fail)?;
                    println!("local sandboxes start per command with {}", coved.display());
                }
                remote => {
                    let sb = sandboxes::open(ctx, remote, token, None).await?;
                    let info = sb.client.info().await.map_err(fail)?;
                    println!(
                        "{}: coved {} (API {}), workspace {}, serves {}",
                        sb.client.base_url(),
                        info.version,
                        info.api_version,
                        info.workspace,
                        info.capabilities.join(", ")
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
