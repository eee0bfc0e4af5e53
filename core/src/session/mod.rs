//! The session layer every front end calls (the command line, `cove serve`): make a thread,
//! resolve its run's settings from the caller, `cove.toml` and the model's profile, recover
//! a run a killed controller left marked running, and prepare a run over a sandbox the
//! caller opened. It never prints and never opens sandboxes: notes come back as values and
//! errors as [`SessionError`], which each front end words its own way.

mod error;
mod fork;
mod project;
mod rewind;
mod settings;

use std::path::PathBuf;
use std::sync::Arc;

use cove_protocol::client::CovedClient;
use cove_protocol::events::RunStatus;
use cove_protocol::plan::PlanStatus;
use cove_protocol::takeover::InControl;

pub use error::SessionError;
pub use fork::{Fork, ForkSource};
pub use project::project_trust;
pub use rewind::{Rewind, RewindScope};
pub use settings::{COMPACT_WINDOW, RunSettings, agent_config, tool_set};

use crate::agent::Agent;
use crate::config::{self, FileConfig};
use crate::llm::ChatProvider;
use crate::llm::choice::{self, DefaultModelError, ModelChoice};
use crate::mcp::McpHub;
use crate::store::{NewThread, RunState, Store, Thread};
use crate::toolcall::ToolMode;
use crate::tools::ToolRegistry;
use crate::web::WebTools;

/// What the engine's front ends share: the database and `cove.toml`.
#[derive(Clone, Copy)]
pub struct Engine<'a> {
    pub store: &'a Arc<Store>,
    pub file: &'a FileConfig,
}

/// Something a person should read about how a run was set up, with how loudly to say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Worth knowing (a file named but missing, a skill left out).
    Note(String),
    /// Something was left out that the person meant to use (an MCP server's bad entry).
    Warning(String),
}

/// A thread's sandbox as the engine needs it, opened by the caller.
#[derive(Clone)]
pub struct SandboxView {
    /// Its daemon.
    pub client: CovedClient,
    /// Whether walls keep the agent from this machine (not a `host` sandbox, not a local
    /// one on the machine's own network).
    pub walled: bool,
    /// The places of this machine the walls show the agent, when they are on this machine
    /// (a deletion aimed at the others is worth a question).
    pub machine_view: Option<Vec<PathBuf>>,
}

/// How a thread's next run starts.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunStart {
    /// The agent must have a plan approved before it changes anything (also while the
    /// thread's plan waits for approval).
    pub plan_first: bool,
    /// The run answers the thread's question: a takeover a person still holds ends.
    pub answering: bool,
    /// No one answers permission requests during the run: it pauses on them.
    pub hold_permissions: bool,
}

/// A thread's run, checked before its sandbox is opened: its model reachable, a run a
/// killed controller left behind ended.
pub struct Begun {
    model: ModelChoice,
    provider: Arc<dyn ChatProvider>,
    mode: ToolMode,
    start: RunStart,
}

/// A thread's next run, ready to start: its agent, with its MCP servers.
pub struct PreparedRun {
    pub agent: Arc<Agent>,
    mcp: Option<Arc<McpHub>>,
    /// What the person should know about how the run was set up (the model's window from
    /// its server, the compact tool set).
    pub notes: Vec<String>,
    /// Skills left out, and why.
    pub notices: Vec<Notice>,
}

impl PreparedRun {
    /// Ends the run's MCP servers.
    pub async fn close(self) {
        drop(self.agent);
        if let Some(hub) = &self.mcp {
            hub.shutdown().await;
        }
    }
}

impl Engine<'_> {
    /// A new thread for `task`, with its model (`model`, `COVE_MODEL`, `cove.toml`'s, or the
    /// environment's default), tool-call format and sandbox: `sandbox_label` gets the
    /// workspace a local sandbox would have (named after the thread) and answers the label.
    pub async fn new_thread<E: From<SessionError>>(
        self,
        task: &str,
        model: Option<String>,
        tool_calls: Option<String>,
        sandbox_label: impl FnOnce(PathBuf) -> Result<String, E>,
    ) -> Result<Thread, E> {
        if task.trim().is_empty() {
            return Err(SessionError::Invalid(
                "the task is empty: say what the agent should do".into(),
            )
            .into());
        }
        let model = self.model(model).await?;
        // Fail on a missing key before starting a sandbox.
        choice::connect(&model).map_err(SessionError::from)?;
        let mode = tool_calls
            .or_else(|| self.file.tool_calls.clone())
            .unwrap_or_else(|| "native".into());
        let mode = ToolMode::parse(&mode).ok_or_else(|| {
            SessionError::Invalid(format!("--tool-calls must be native or xml, not {mode:?}"))
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
        let sandbox = sandbox_label(self.workspace_of(&id))?;
        Ok(self
            .store
            .create_thread(NewThread {
                id,
                title,
                model: model.label(),
                tool_mode: mode.as_str().to_string(),
                sandbox,
                parent: None,
                fork: None,
            })
            .map_err(SessionError::from)?)
    }

    /// The model a new thread gets: the one named, else `COVE_MODEL`, else `cove.toml`'s,
    /// else the environment's default.
    async fn model(self, named: Option<String>) -> Result<ModelChoice, SessionError> {
        let named = named
            .or_else(|| std::env::var("COVE_MODEL").ok())
            .filter(|m| !m.trim().is_empty())
            .or_else(|| self.file.model.clone());
        match named {
            Some(name) => Ok(ModelChoice::parse(&name)?),
            None => ModelChoice::default_for_environment()
                .await
                .map_err(|e| match e {
                    DefaultModelError::Server(e) => SessionError::from(e),
                    DefaultModelError::Choose(why) => SessionError::Invalid(why),
                }),
        }
    }

    /// The workspace a local sandbox of thread `id` gets: `cove.toml`'s `workspaces` folder
    /// (else Cove's data folder's), one per thread.
    pub fn workspace_of(self, id: &str) -> PathBuf {
        self.file
            .workspaces
            .clone()
            .unwrap_or_else(|| config::data_dir().join("workspaces"))
            .join(id)
    }

    /// The process whose run waits on the thread, if it is still alive; a wait left behind
    /// by a process that died is cleared.
    pub fn live_wait(self, thread: &str) -> Result<Option<i64>, SessionError> {
        let Some(wait) = self.store.wait_of(thread)? else {
            return Ok(None);
        };
        let alive = i32::try_from(wait.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
        if alive {
            return Ok(Some(wait.pid));
        }
        self.store.end_wait(thread)?;
        Ok(None)
    }

    /// Refuses a run of its own to a sub-agent whose parent's run takes it up (and puts its
    /// question to the person): a run beside that one would answer it twice.
    pub fn may_run(self, thread: &Thread) -> Result<(), SessionError> {
        if let Some(parent) = &thread.parent_id
            && self
                .store
                .spawn_of(parent)?
                .is_some_and(|s| s.children.iter().any(|c| c.thread == thread.id))
        {
            return Err(SessionError::SubAgent(format!(
                "thread {id} is a sub-agent of thread {parent}, whose run takes it up: answer or resume thread {parent} instead",
                id = thread.id
            )));
        }
        Ok(())
    }

    /// The first step of a thread's next run, before its sandbox opens: its model reached
    /// (a missing key fails here), a run a killed controller left marked running ended.
    pub fn begin(self, thread: &Thread, mut start: RunStart) -> Result<Begun, SessionError> {
        self.may_run(thread)?;
        start.plan_first = start.plan_first
            || self
                .store
                .current_plan(&thread.id)?
                .is_some_and(|p| p.status != PlanStatus::Approved);
        let model = ModelChoice::parse(&thread.model)?;
        let provider = choice::connect(&model)?;
        if let Some(last) = self.store.last_run(&thread.id)?
            && last.status == RunState::Running
        {
            self.store.end_run(
                &last,
                RunStatus::Stopped,
                Some("interrupted: the controller stopped"),
                None,
            )?;
        }
        Ok(Begun {
            model,
            provider,
            mode: ToolMode::parse(&thread.tool_mode).unwrap_or(ToolMode::Native),
            start,
        })
    }

    /// The run [`Engine::begin`] checked, over the caller's open sandbox, with the MCP
    /// servers started for it and the skills `project` (the folder's own, when trusted)
    /// allows.
    pub async fn prepare(
        self,
        begun: Begun,
        sandbox: SandboxView,
        mcp: Option<Arc<McpHub>>,
        settings: &RunSettings,
        project: bool,
    ) -> Result<PreparedRun, SessionError> {
        let Begun {
            model,
            provider,
            mode,
            start,
        } = begun;
        if start.answering
            && let Ok(status) = sandbox.client.takeover_status(0).await
            && status.in_control == InControl::Person
        {
            // The person answered: whatever they were doing in the browser is over.
            let _ = sandbox.client.takeover_end().await;
        }
        let workspace_label = sandbox
            .client
            .info()
            .await
            .map(|i| i.workspace)
            .unwrap_or_else(|_| "/workspace".into());
        let served = if settings.context_window(self.file).is_none() {
            choice::served_window(&model).await
        } else {
            None
        };
        let config = agent_config(
            self.file,
            &model,
            mode,
            settings,
            workspace_label,
            served.as_ref(),
        )?
        .plan_first(start.plan_first)
        .walls(sandbox.walled)
        .pause_for_permission(start.hold_permissions);
        let config = match sandbox.machine_view {
            Some(shown) => config.machine_view(shown),
            None => config,
        };
        let web = WebTools::configured(self.file.web.as_ref(), &|name| std::env::var(name).ok())
            .map_err(SessionError::Setup)?;
        let window = config.profile.context_window;
        let compact = tool_set(settings, self.file)?.unwrap_or(window <= COMPACT_WINDOW);
        let mut notes = Vec::new();
        if let Some(served) = &served {
            notes.push(format!(
                "the server runs {} with a window of {} tokens (from {})",
                model.name,
                crate::format::thousands(u64::from(served.tokens)),
                served.source
            ));
        }
        let (skills, problems) = crate::skills::discover(&crate::skills::run_dirs(project));
        let notices = problems
            .iter()
            .map(|p| Notice::Note(format!("skill left out: {p} (`cove skills ls` lists them)")))
            .collect();
        let mut registry = ToolRegistry::standard().with_skills(skills).with_web(web);
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
            Agent::new(config, provider, self.store.clone(), sandbox.client)
                .with_registry(Arc::new(registry)),
        );
        Ok(PreparedRun {
            agent,
            mcp,
            notes,
            notices,
        })
    }
}

/// Starts the MCP servers of a run in the background (none configured: no hub): the
/// user's files and `extra`, then the folder's own when `project` (trusted). Problems in
/// the files come back as notices, never fatal: the servers that are fine still start.
pub fn start_mcp(extra: &[PathBuf], project: bool) -> (Option<Arc<McpHub>>, Vec<Notice>) {
    let mut notices: Vec<Notice> = extra
        .iter()
        .filter(|file| !file.exists())
        .map(|file| {
            Notice::Note(format!(
                "--mcp-config {}: no such file; its servers are left out",
                file.display()
            ))
        })
        .collect();
    let (servers, problems) = crate::mcp::configured(extra, project);
    notices.extend(problems.iter().map(|problem| {
        Notice::Warning(format!(
            "MCP configuration: {problem} (that server is left out; `cove mcp doctor` checks the files)"
        ))
    }));
    (
        (!servers.is_empty()).then(|| McpHub::start(servers)),
        notices,
    )
}
