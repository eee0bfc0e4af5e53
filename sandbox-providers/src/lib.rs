//! Sandboxes the controller drives: a local `coved` it starts itself over a workspace folder
//! (the default), or a remote one reached by URL and token; [`docker`] makes sandbox
//! containers, [`kubernetes`] sandbox Pods.

pub mod choice;
pub mod docker;
pub mod idle_watch;
pub mod kubernetes;
pub mod local;
pub mod pool;
pub mod tokens;

/// Where a local sandbox's daemon writes its log.
pub fn coved_log() -> PathBuf {
    cove_config::data_dir().join("logs/coved.log")
}

use std::path::{Path, PathBuf};

use cove_protocol::ErrorCode;
use cove_protocol::client::{ClientError, CovedClient};
pub use local::{Isolation, LocalDaemon, LocalSettings, find_coved};

/// Where a thread's sandbox is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSpec {
    /// A coved started for the run, over this folder, walled in.
    Local { workspace: PathBuf },
    /// A coved started for the run, over this folder, with no walls: it runs as this user
    /// on this machine (`--sandbox host`).
    Host { workspace: PathBuf },
    /// A running coved.
    Remote { url: String },
    /// A container of the Docker provider, by its sandbox name (its URL changes with
    /// each start).
    Docker { name: String },
    /// A Pod of the Kubernetes provider, by its sandbox name.
    Kubernetes { name: String },
}

impl SandboxSpec {
    /// The spec of a sandbox a provider made: threads name it, not its current address.
    pub fn of_made(made: &cove_store::ManagedSandbox) -> SandboxSpec {
        let name = made.name.clone();
        if made.provider == "kubernetes" {
            SandboxSpec::Kubernetes { name }
        } else {
            SandboxSpec::Docker { name }
        }
    }

    /// How a thread records it: `local:<path>` or the URL.
    pub fn label(&self) -> String {
        match self {
            SandboxSpec::Local { workspace } => format!("local:{}", workspace.display()),
            SandboxSpec::Host { workspace } => format!("host:{}", workspace.display()),
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
        if let Some(path) = label.strip_prefix("host:") {
            return SandboxSpec::Host {
                workspace: PathBuf::from(path),
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
    /// Walls cannot go up on this machine: use another kind of sandbox, or say `host`.
    #[error(
        "the local sandbox cannot wall the agent in here: {why}. Choose one: a Docker sandbox (cove sandbox create NAME, then --sandbox NAME), a remote one (--sandbox URL), or --sandbox host to let the agent run as you, on this machine, with nothing between it and your files"
    )]
    NoIsolation { why: String },
    /// Check the URL and that coved runs there.
    #[error("the sandbox at {url} is unreachable: {message}")]
    Unreachable { url: String, message: String },
    /// Check COVE_SANDBOX_TOKEN.
    #[error("the sandbox at {url} refused the token; set COVE_SANDBOX_TOKEN to its token")]
    BadToken { url: String },
    /// A remote sandbox needs a token.
    #[error("no token for the sandbox at {url}: set COVE_SANDBOX_TOKEN")]
    NoToken { url: String },
    /// Its daemon takes neither the token Cove gave it nor the one it started with.
    #[error(
        "sandbox {name} refuses both its own token and the one it was started with: its token was changed outside Cove; check who did, then `cove sandbox rm {name}` and make another"
    )]
    Disowned { name: String },
    /// Its image's coved cannot take a token of its own: rebuild the image.
    #[error(
        "sandbox {name} runs a coved older than this cove (it cannot take a token of its own, POST /v1/token): rebuild its image from sandbox-image/ (see sandbox-image/README.md) and make the sandbox again"
    )]
    Outdated { name: String },
    /// A Docker sandbox is opened by its URL once its container runs.
    #[error("the Docker sandbox {0} must be started before it is opened")]
    NotStarted(String),
}

/// A sandbox ready for tools.
#[derive(Debug)]
pub struct Sandbox {
    pub client: CovedClient,
    pub spec: SandboxSpec,
    local: Option<LocalDaemon>,
    /// The port-forward to a Kubernetes sandbox, open while the sandbox is.
    tunnel: Option<kubernetes::Tunnel>,
    /// A Docker sandbox's "in use" lock, held shared while it is open: its idle watcher
    /// never pauses it under an open handle (a run waiting at a prompt, a server's view).
    _in_use: Option<std::os::fd::OwnedFd>,
}

impl Sandbox {
    /// Whether walls keep the agent from this machine: not a `host` sandbox, not a local
    /// one on the machine's own network (it reaches the loopback services).
    pub fn walled(&self, local: &LocalSettings) -> bool {
        match self.spec {
            SandboxSpec::Host { .. } => false,
            SandboxSpec::Local { .. } => local.network != local::bwrap::Network::Host,
            _ => true,
        }
    }

    /// The places of this machine a walled local sandbox shows the agent, by every name
    /// they have; none for a sandbox elsewhere or unwalled.
    pub fn machine_view(&self, local: &LocalSettings) -> Option<Vec<PathBuf>> {
        match &self.spec {
            SandboxSpec::Local { workspace } if self.walled(local) => {
                Some(local::bwrap::shown_places_by_both_names(
                    workspace,
                    &local.read_only,
                    &local.writable,
                ))
            }
            _ => None,
        }
    }

    /// Opens the sandbox `spec` names: starts a local coved (walled in as `local` says),
    /// or checks a remote one.
    pub async fn open(
        spec: SandboxSpec,
        token: Option<String>,
        log: Option<&Path>,
        local: &LocalSettings,
    ) -> Result<Sandbox, SandboxError> {
        match &spec {
            SandboxSpec::Local { workspace } | SandboxSpec::Host { workspace } => {
                cove_store::private_files::dir_all(workspace).map_err(|e| {
                    SandboxError::Startup(format!("cannot create {}: {e}", workspace.display()))
                })?;
                let isolation = match &spec {
                    SandboxSpec::Host { .. } => Isolation::Host,
                    _ => Isolation::Walled(local.clone()),
                };
                let daemon = LocalDaemon::start(workspace, &isolation, "127.0.0.1:0", log).await?;
                let client = CovedClient::new(&daemon.url, daemon.token.clone())
                    .map_err(|e| SandboxError::Startup(e.to_string()))?;
                Ok(Sandbox {
                    client,
                    spec,
                    local: Some(daemon),
                    tunnel: None,
                    _in_use: None,
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
                        _in_use: None,
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
            &LocalSettings::default(),
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
