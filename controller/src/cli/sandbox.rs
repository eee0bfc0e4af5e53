//! `cove sandbox up|status|ls|create|start|stop|rm`: local sandboxes for other tools, and
//! sandbox containers made with Docker.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use cove_protocol::client::CovedClient;
use cove_protocol::info::InfoResponse;
use serde_json::json;

use super::sandbox_choice::{self, SandboxArgs, coved_log};
use super::{CliError, Invocation};
use crate::sandbox::docker::{ContainerSpec, Docker, DockerError, parse_size};
use crate::sandbox::{LocalDaemon, SandboxSpec};
use crate::store::{ManagedSandbox, now_ms};

#[derive(Debug, Subcommand)]
pub(super) enum SandboxCommand {
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

/// Runs a `cove sandbox` command.
pub(super) async fn command(inv: &Invocation, cmd: SandboxCommand) -> Result<ExitCode, CliError> {
    match cmd {
        SandboxCommand::Up { workspace, listen } => up(inv, workspace, &listen).await,
        SandboxCommand::Status { sandbox } => status(inv, &sandbox).await,
        SandboxCommand::Ls => ls(inv).await,
        SandboxCommand::Create {
            name,
            image,
            memory,
            cpus,
        } => create(inv, &name, image, memory.as_deref(), cpus).await,
        SandboxCommand::Start { name } => start(inv, &name).await,
        SandboxCommand::Stop { name } => stop(inv, &name).await,
        SandboxCommand::Rm { name } => remove(inv, &name).await,
    }
}

/// `cove sandbox up`: a local coved for other tools, until Ctrl-C.
async fn up(
    inv: &Invocation,
    workspace: Option<PathBuf>,
    listen: &str,
) -> Result<ExitCode, CliError> {
    let workspace = workspace.unwrap_or_else(|| PathBuf::from("."));
    let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
    std::fs::create_dir_all(&workspace).map_err(|e| {
        CliError::Usage(format!(
            "cannot make the workspace {}: {e}",
            workspace.display()
        ))
    })?;
    let mut daemon = LocalDaemon::start_at(&workspace, listen, Some(&coved_log())).await?;
    inv.printer.result(
        &json!({"url": daemon.url, "token": daemon.token, "workspace": workspace}),
        |_| {
            format!(
                "sandbox: {url}\ntoken: {token}\nworkspace: {}\nUse it with: COVE_SANDBOX_URL={url} COVE_SANDBOX_TOKEN={token} cove run \"...\"\nPress Ctrl-C to stop it.",
                workspace.display(),
                url = daemon.url,
                token = daemon.token,
            )
        },
    );
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = daemon.wait() => {
            return Err(CliError::Failed(format!(
                "the sandbox stopped; see {}",
                coved_log().display()
            )));
        }
    }
    daemon.stop().await;
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox status`: what the configured sandbox runs.
async fn status(inv: &Invocation, args: &SandboxArgs) -> Result<ExitCode, CliError> {
    let (spec, token) = sandbox_choice::choose(inv, args, || PathBuf::from("."))?;
    match spec {
        SandboxSpec::Local { .. } => {
            let coved = crate::sandbox::find_coved()?;
            inv.printer
                .result(&json!({"kind": "local", "coved": coved}), |_| {
                    format!("local sandboxes start per command with {}", coved.display())
                });
        }
        remote => {
            let sandbox = sandbox_choice::open(inv, remote, token, None).await?;
            let info = sandbox.client.info().await;
            let url = sandbox.client.base_url().to_string();
            sandbox.close().await;
            let info = info?;
            inv.printer.result(&json!({"url": url, "info": info}), |_| {
                format!(
                    "{url}: coved {} (API {}), workspace {}, serves {}",
                    info.version,
                    info.api_version,
                    info.workspace,
                    info.capabilities.join(", ")
                )
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn managed(inv: &Invocation, name: &str) -> Result<ManagedSandbox, CliError> {
    inv.store.sandbox(name)?.ok_or_else(|| {
        CliError::NotFound(format!(
            "no Docker sandbox {name}; `cove sandbox ls` lists them"
        ))
    })
}

/// `cove sandbox create NAME`
async fn create(
    inv: &Invocation,
    name: &str,
    image: String,
    memory: Option<&str>,
    cpus: Option<f64>,
) -> Result<ExitCode, CliError> {
    let valid = !name.is_empty()
        && name.len() <= 60
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if !valid {
        return Err(CliError::Usage(format!(
            "{name:?} is not a sandbox name: use letters, digits, - and _ (at most 60)"
        )));
    }
    if inv.file.sandboxes.contains_key(name) || inv.store.sandbox(name)?.is_some() {
        return Err(CliError::Usage(format!(
            "a sandbox named {name} exists already"
        )));
    }
    let memory_bytes = memory
        .map(|m| {
            parse_size(m).ok_or_else(|| {
                CliError::Usage(format!("--memory {m:?} is not a size like 512m or 4g"))
            })
        })
        .transpose()?;
    if let Some(c) = cpus
        && !(c > 0.0 && c <= 1024.0)
    {
        return Err(CliError::Usage(format!("--cpus {c} is not a CPU count")));
    }
    let docker = Docker::from_env()?;
    docker.ping().await?;
    let token = crate::store::new_id(32);
    let spec = ContainerSpec {
        image: image.clone(),
        memory_bytes,
        cpus,
        ..ContainerSpec::default()
    };
    inv.printer
        .note(&format!("creating sandbox {name} from {image}"));
    let info = docker.create(name, &token, &spec).await?;
    inv.store.add_sandbox(&ManagedSandbox {
        name: name.to_string(),
        provider: "docker".into(),
        container_id: info.id.clone(),
        url: info.url.clone(),
        token,
        image,
        created_at: now_ms(),
    })?;
    let url = info.url.unwrap_or_default();
    inv.printer.result(
        &json!({"name": name, "container_id": info.id, "url": url}),
        |_| format!("sandbox {name} runs at {url}; use it with: cove run --sandbox {name} \"...\""),
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox start NAME`
async fn start(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let sandbox = managed(inv, name)?;
    let docker = Docker::from_env()?;
    let info = docker.start(&sandbox.container_id).await?;
    inv.store.set_sandbox_url(name, info.url.as_deref())?;
    let url = info.url.unwrap_or_default();
    inv.printer
        .result(&json!({"name": name, "running": true, "url": url}), |_| {
            format!("sandbox {name} runs at {url}")
        });
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox stop NAME`
async fn stop(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let sandbox = managed(inv, name)?;
    let docker = Docker::from_env()?;
    docker.stop(&sandbox.container_id, 10).await?;
    inv.store.set_sandbox_url(name, None)?;
    inv.printer
        .result(&json!({"name": name, "running": false}), |_| {
            format!(
                "sandbox {name} stopped; `cove sandbox start {name}` (or a run on it) starts it again"
            )
        });
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox rm NAME`
async fn remove(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let sandbox = managed(inv, name)?;
    let docker = Docker::from_env()?;
    match docker.remove(&sandbox.container_id).await {
        // Removed outside Cove already: forget it all the same.
        Ok(()) | Err(DockerError::NotFound(_)) => {}
        Err(e) => return Err(e.into()),
    }
    inv.store.remove_sandbox(name)?;
    inv.printer
        .result(&json!({"name": name, "removed": true}), |_| {
            format!("sandbox {name} removed")
        });
    Ok(ExitCode::SUCCESS)
}

/// One row of `cove sandbox ls`.
struct Row {
    name: String,
    kind: &'static str,
    url: String,
    state: Result<InfoResponse, String>,
}

impl serde::Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(serializer)
    }
}

impl Row {
    fn json(&self) -> serde_json::Value {
        match &self.state {
            Ok(info) => {
                json!({"name": self.name, "kind": self.kind, "url": self.url, "healthy": true, "version": info.version, "api_version": info.api_version, "capabilities": info.capabilities})
            }
            Err(e) => {
                json!({"name": self.name, "kind": self.kind, "url": self.url, "healthy": false, "error": e})
            }
        }
    }

    fn line(&self) -> String {
        match &self.state {
            Ok(info) => format!(
                "{:<16} {:<7} {:<32} up    coved {} ({})",
                self.name,
                self.kind,
                self.url,
                info.version,
                info.capabilities.join(", ")
            ),
            Err(e) => format!(
                "{:<16} {:<7} {:<32} DOWN  {e}",
                self.name, self.kind, self.url
            ),
        }
    }
}

async fn check(url: &str, token: &str) -> Result<InfoResponse, String> {
    let client = CovedClient::new(url, token.to_string()).map_err(|e| e.to_string())?;
    let limit = Duration::from_secs(5);
    match tokio::time::timeout(limit, client.info()).await {
        Ok(Ok(info)) => Ok(info),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", limit.as_secs())),
    }
}

/// `cove sandbox ls`: every named and every Docker sandbox, checked at once; exits with 1
/// when one is down.
async fn ls(inv: &Invocation) -> Result<ExitCode, CliError> {
    let managed = inv.store.sandboxes()?;
    let named = inv.file.sandboxes.iter().map(|(name, s)| async move {
        Row {
            name: name.clone(),
            kind: "config",
            url: s.url.clone(),
            state: check(&s.url, s.token.as_deref().unwrap_or_default()).await,
        }
    });
    let docker = Docker::from_env().ok();
    let made = managed.iter().map(|s| {
        let docker = docker.clone();
        async move {
            let state = match &docker {
                None => Err("DOCKER_HOST is not a unix:// socket".to_string()),
                Some(docker) => match docker.inspect(&s.container_id).await {
                    Err(e) => Err(e.to_string()),
                    Ok(info) if !info.running => Err(format!("container {}", info.status)),
                    Ok(info) => match info.url {
                        Some(url) => check(&url, &s.token).await,
                        None => Err("no published port".to_string()),
                    },
                },
            };
            Row {
                name: s.name.clone(),
                kind: "docker",
                url: s.url.clone().unwrap_or_default(),
                state,
            }
        }
    });
    let mut rows = futures_util::future::join_all(named).await;
    rows.extend(futures_util::future::join_all(made).await);
    let all_up = rows.iter().all(|row| row.state.is_ok());
    inv.printer.list(
        &rows,
        "No sandboxes yet. Name one in cove.toml:\n\n[sandboxes.build-1]\nurl = \"http://10.0.0.7:7700\"\ntoken = \"...\"\n\nor make one with Docker: cove sandbox create build-1",
        Row::line,
    );
    Ok(if all_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::exit::FAILED)
    })
}
