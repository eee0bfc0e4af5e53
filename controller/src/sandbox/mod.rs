//! Sandboxes the controller drives: a local `coved` it starts itself over a workspace folder
//! (the default), or a remote one reached by URL and token; [`docker`] makes sandbox
//! containers, [`kubernetes`] sandbox Pods.

pub mod docker;
pub mod kubernetes;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use cove_protocol::ErrorCode;
use cove_protocol::client::{ClientError, CovedClient};
use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Variables holding the controller's keys (model providers, search, images), kept out of a
/// local sandbox's environment.
pub const CONTROLLER_SECRETS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "TAVILY_API_KEY",
    "BRAVE_API_KEY",
    "COVE_IMAGES_API_KEY",
];

/// Where a thread's sandbox is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSpec {
    /// A coved started for the run, over this folder.
    Local { workspace: PathBuf },
    /// A running coved.
    Remote { url: String },
    /// A container of the Docker provider, by its sandbox name (its URL changes with
    /// each start).
    Docker { name: String },
    /// A Pod of the Kubernetes provider, by its sandbox name.
    Kubernetes { name: String },
}

impl SandboxSpec {
    /// How a thread records it: `local:<path>` or the URL.
    pub fn label(&self) -> String {
        match self {
            SandboxSpec::Local { workspace } => format!("local:{}", workspace.display()),
            SandboxSpec::Remote { url } => url.clone(),
            SandboxSpec::Docker { name } => format!("docker:{name}"),
            SandboxSpec::Kubernetes { name } => format!("k8s:{name}"),
        }
    }

    /// Reads a recorded label back.
    pub fn from_label(label: &str) -> SandboxSpec {
        if let Some(name) = label.strip_prefix("k8s:") {
            return SandboxSpec::Kubernetes {
                name: name.to_string(),
            };
        }
        if let Some(name) = label.strip_prefix("docker:") {
            return SandboxSpec::Docker {
                name: name.to_string(),
            };
        }
        match label.strip_prefix("local:") {
            Some(path) => SandboxSpec::Local {
                workspace: PathBuf::from(path),
            },
            None => SandboxSpec::Remote {
                url: label.to_string(),
            },
        }
    }
}

/// Why no sandbox could be had, by what the user should do.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Build or install coved, or point COVE_COVED_BIN at it.
    #[error(
        "cannot find the sandbox daemon `coved`: build it (cargo build --release -p coved) or set COVE_COVED_BIN"
    )]
    DaemonMissing,
    /// coved did not start.
    #[error("the local sandbox did not start: {0}")]
    Startup(String),
    /// Check the URL and that coved runs there.
    #[error("the sandbox at {url} is unreachable: {message}")]
    Unreachable { url: String, message: String },
    /// Check COVE_SANDBOX_TOKEN.
    #[error("the sandbox at {url} refused the token; set COVE_SANDBOX_TOKEN to its token")]
    BadToken { url: String },
    /// A remote sandbox needs a token.
    #[error("no token for the sandbox at {url}: set COVE_SANDBOX_TOKEN")]
    NoToken { url: String },
    /// A Docker sandbox is opened by its URL once its container runs.
    #[error("the Docker sandbox {0} must be started before it is opened")]
    NotStarted(String),
}

/// The `coved` binary: `COVE_COVED_BIN`, beside this executable, or on `PATH`.
pub fn find_coved() -> Result<PathBuf, SandboxError> {
    if let Some(path) = std::env::var_os("COVE_COVED_BIN") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(SandboxError::DaemonMissing)
        };
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(beside) = exe.parent().map(|d| d.join("coved"))
        && beside.is_file()
    {
        return Ok(beside);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("coved"))
        .find(|p| p.is_file())
        .ok_or(SandboxError::DaemonMissing)
}

/// Makes the child die with this process, even when this process is killed outright (the
/// signal is tied to the forking thread: tokio forks on its long-lived worker threads).
#[allow(unsafe_code)]
fn die_with_parent(command: &mut Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec; it only makes the prctl(2)
    // and getppid(2) system calls, which are async-signal-safe, and touches no memory
    // shared with the parent.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::TERM))
                .map_err(std::io::Error::from)?;
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other(
                    "cove exited while coved was starting",
                ));
            }
            Ok(())
        });
    }
}

/// A coved this process started; stopped (SIGTERM) when dropped.
#[derive(Debug)]
pub struct LocalDaemon {
    child: Child,
    pid: i32,
    pub url: String,
    pub token: String,
    _state: tempfile::TempDir,
}

impl LocalDaemon {
    /// Starts coved on a free localhost port over `workspace` (created if missing).
    pub async fn start(workspace: &Path, log: Option<&Path>) -> Result<LocalDaemon, SandboxError> {
        Self::start_at(workspace, "127.0.0.1:0", log).await
    }

    /// Starts coved listening on `listen` over `workspace`.
    pub async fn start_at(
        workspace: &Path,
        listen: &str,
        log: Option<&Path>,
    ) -> Result<LocalDaemon, SandboxError> {
        let bin = find_coved()?;
        let state = tempfile::Builder::new()
            .prefix("cove-sandbox-")
            .tempdir()
            .map_err(|e| SandboxError::Startup(format!("cannot make a state folder: {e}")))?;
        let token = crate::store::new_id(24);
        let stderr = match log.and_then(|p| {
            p.parent().map(std::fs::create_dir_all);
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
        }) {
            Some(file) => Stdio::from(file),
            None => Stdio::null(),
        };
        let mut command = Command::new(&bin);
        die_with_parent(&mut command);
        // The controller's keys stay with the controller: the agent's shell never sees them,
        // so a page that talks the agent into printing its environment gets none.
        for secret in CONTROLLER_SECRETS {
            command.env_remove(secret);
        }
        let mut child = command
            .arg("--listen")
            .arg(listen)
            .arg("--workspace")
            .arg(workspace)
            .arg("--state-dir")
            .arg(state.path())
            .env("COVE_TOKEN", &token)
            .env_remove("COVE_TOKEN_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| SandboxError::Startup(format!("cannot run {}: {e}", bin.display())))?;
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| SandboxError::Startup("coved exited at once".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| SandboxError::Startup("no output from coved".into()))?;
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .map_err(|_| SandboxError::Startup("coved printed no address within 20 s".into()))?
            .map_err(|e| SandboxError::Startup(e.to_string()))?;
        let url = first
            .and_then(|l| l.strip_prefix("coved listening on ").map(str::to_string))
            .ok_or_else(|| {
                SandboxError::Startup(match log {
                    Some(log) => format!("coved did not start; see {}", log.display()),
                    None => "coved did not start".to_string(),
                })
            })?;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(LocalDaemon {
            child,
            pid,
            url,
            token,
            _state: state,
        })
    }

    /// Stops coved and waits (up to 10 s) for it to take its shells and browser down.
    pub async fn stop(mut self) {
        if let Some(pid) = Pid::from_raw(self.pid) {
            let _ = kill_process(pid, Signal::TERM);
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }

    /// Waits for coved to exit on its own.
    pub async fn wait(&mut self) {
        let _ = self.child.wait().await;
    }
}

impl Drop for LocalDaemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None))
            && let Some(pid) = Pid::from_raw(self.pid)
        {
            let _ = kill_process(pid, Signal::TERM);
        }
    }
}

/// A sandbox ready for tools.
#[derive(Debug)]
pub struct Sandbox {
    pub client: CovedClient,
    pub spec: SandboxSpec,
    local: Option<LocalDaemon>,
    /// The port-forward to a Kubernetes sandbox, open while the sandbox is.
    tunnel: Option<kubernetes::Tunnel>,
}

impl Sandbox {
    /// Opens the sandbox `spec` names: starts a local coved, or checks a remote one.
    pub async fn open(
        spec: SandboxSpec,
        token: Option<String>,
        log: Option<&Path>,
    ) -> Result<Sandbox, SandboxError> {
        match &spec {
            SandboxSpec::Local { workspace } => {
                std::fs::create_dir_all(workspace).map_err(|e| {
                    SandboxError::Startup(format!("cannot create {}: {e}", workspace.display()))
                })?;
                let daemon = LocalDaemon::start(workspace, log).await?;
                let client = CovedClient::new(&daemon.url, daemon.token.clone())
                    .map_err(|e| SandboxError::Startup(e.to_string()))?;
                Ok(Sandbox {
                    client,
                    spec,
                    local: Some(daemon),
                    tunnel: None,
                })
            }
            SandboxSpec::Docker { name } | SandboxSpec::Kubernetes { name } => {
                Err(SandboxError::NotStarted(name.clone()))
            }
            SandboxSpec::Remote { url } => {
                let token = token.ok_or_else(|| SandboxError::NoToken { url: url.clone() })?;
                let client =
                    CovedClient::new(url, token).map_err(|e| SandboxError::Unreachable {
                        url: url.clone(),
                        message: e.to_string(),
                    })?;
                match client.info().await {
                    Ok(_) => Ok(Sandbox {
                        client,
                        spec,
                        local: None,
                        tunnel: None,
                    }),
                    Err(ClientError::Api {
                        code: ErrorCode::Unauthorized,
                        ..
                    }) => Err(SandboxError::BadToken { url: url.clone() }),
                    Err(e) => Err(SandboxError::Unreachable {
                        url: url.clone(),
                        message: e.to_string(),
                    }),
                }
            }
        }
    }

    /// The sandbox behind `tunnel` (a Kubernetes Pod's coved), named `spec`.
    pub async fn through(
        tunnel: kubernetes::Tunnel,
        token: String,
        spec: SandboxSpec,
    ) -> Result<Sandbox, SandboxError> {
        let mut sandbox = Sandbox::open(
            SandboxSpec::Remote {
                url: tunnel.url.clone(),
            },
            Some(token),
            None,
        )
        .await?;
        sandbox.spec = spec;
        sandbox.tunnel = Some(tunnel);
        Ok(sandbox)
    }

    /// Stops the sandbox if this process started it.
    pub async fn close(mut self) {
        self.tunnel.take();
        if let Some(daemon) = self.local.take() {
            daemon.stop().await;
        }
    }
}
