//! `cove sandbox ls`: every sandbox named in cove.toml and every one Cove made, checked at
//! once.

use std::process::ExitCode;
use std::time::Duration;

use cove_protocol::client::CovedClient;
use cove_protocol::info::InfoResponse;
use serde_json::json;

use crate::{CliError, Invocation};
use cove_core::store::ManagedSandbox;
use cove_sandbox::choice::pod_plan;
use cove_sandbox::docker::{Docker, Limits};
use cove_sandbox::kubernetes::{Kubernetes, PodState};

/// One row of `cove sandbox ls`.
struct Row {
    name: String,
    kind: &'static str,
    url: String,
    state: Result<InfoResponse, String>,
    /// A Docker sandbox frozen by `cove sandbox pause` (its state is not asked).
    paused: bool,
    /// What the engine lets a Docker sandbox use.
    limits: Option<Limits>,
}

impl serde::Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(serializer)
    }
}

impl Row {
    fn json(&self) -> serde_json::Value {
        let mut row = if self.paused {
            json!({"name": self.name, "kind": self.kind, "url": self.url, "healthy": false, "paused": true})
        } else {
            match &self.state {
                Ok(info) => {
                    json!({"name": self.name, "kind": self.kind, "url": self.url, "healthy": true, "version": info.version, "api_version": info.api_version, "capabilities": info.capabilities})
                }
                Err(e) => {
                    json!({"name": self.name, "kind": self.kind, "url": self.url, "healthy": false, "error": e})
                }
            }
        };
        if let Some(limits) = &self.limits {
            row["limits"] = json!(limits);
        }
        row
    }

    fn line(&self) -> String {
        match &self.limits {
            Some(limits) => format!("{} · {}", self.state_line(), limits.line()),
            None => self.state_line(),
        }
    }

    fn state_line(&self) -> String {
        if self.paused {
            return format!(
                "{:<16} {:<7} {:<32} PAUSED its next use resumes it",
                self.name, self.kind, self.url
            );
        }
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

/// How a Kubernetes sandbox stands: its Pod's state, and coved's answer when it is ready.
async fn pod_row_state(
    kube: &Kubernetes,
    sandbox: &ManagedSandbox,
) -> Result<InfoResponse, String> {
    let plan = pod_plan(sandbox).map_err(|e| e.to_string())?;
    match kube.state(sandbox.resource_name(), &plan.namespace).await {
        Err(e) => Err(e.to_string()),
        Ok(PodState::Missing) => Err("stopped (no Pod)".into()),
        Ok(PodState::Starting(phase)) => Err(format!("Pod {phase}")),
        Ok(PodState::Failed(why)) => Err(format!("Pod ended: {why}")),
        Ok(PodState::Ready { ip }) => {
            let tunnel = kube
                .connect(sandbox.resource_name(), &plan.namespace, ip.as_deref())
                .await
                .map_err(|e| e.to_string())?;
            cove_sandbox::tokens::ensure_own(&tunnel.url, sandbox)
                .await
                .map_err(|e| e.to_string())?;
            check(&tunnel.url, &sandbox.token).await
        }
    }
}

/// `cove sandbox ls`: every named and every Docker sandbox, checked at once; exits with 1
/// when one is down.
pub(super) async fn ls(inv: &Invocation) -> Result<ExitCode, CliError> {
    let managed = inv.store.sandboxes()?;
    let named = inv.file.sandboxes.iter().map(|(name, s)| async move {
        Row {
            name: name.clone(),
            kind: "config",
            url: s.url.clone(),
            state: check(&s.url, s.token.as_deref().unwrap_or_default()).await,
            paused: false,
            limits: None,
        }
    });
    let docker = Docker::from_env().ok();
    let kube = if managed.iter().any(|s| s.provider == "kubernetes") {
        Some(
            Kubernetes::from_env(inv.in_cluster)
                .await
                .map_err(|e| e.to_string()),
        )
    } else {
        None
    };
    let pods = managed
        .iter()
        .filter(|s| s.provider == "kubernetes")
        .map(|s| {
            let kube = kube.clone();
            async move {
                let state = match kube {
                    Some(Ok(kube)) => pod_row_state(&kube, s).await,
                    Some(Err(e)) => Err(e),
                    None => Err("no Kubernetes credentials".to_string()),
                };
                Row {
                    name: s.name.clone(),
                    kind: "k8s",
                    url: s.container_id.clone(),
                    state,
                    paused: false,
                    limits: None,
                }
            }
        });
    let made = managed
        .iter()
        .filter(|s| s.provider != "kubernetes")
        .map(|s| {
            let docker = docker.clone();
            async move {
                let mut paused = false;
                let mut limits = None;
                let state = match &docker {
                    None => Err("DOCKER_HOST cannot be used".to_string()),
                    Some(docker) => match docker.inspect(&s.container_id).await {
                        Err(e) => Err(e.to_string()),
                        Ok(info) if info.paused => {
                            limits = Some(info.limits);
                            paused = true;
                            Err("paused".to_string())
                        }
                        Ok(info) if !info.running => {
                            limits = Some(info.limits);
                            Err(format!("container {}", info.status))
                        }
                        Ok(info) => {
                            limits = Some(info.limits);
                            match info.url {
                                // Started again (by the engine, say), it takes its
                                // boot token until it is given its own.
                                Some(url) => {
                                    match cove_sandbox::tokens::ensure_own(&url, s).await {
                                        Ok(()) => check(&url, &s.token).await,
                                        Err(e) => Err(e.to_string()),
                                    }
                                }
                                None => Err("no published port".to_string()),
                            }
                        }
                    },
                };
                Row {
                    name: s.name.clone(),
                    kind: "docker",
                    url: s.url.clone().unwrap_or_default(),
                    state,
                    paused,
                    limits,
                }
            }
        });
    let mut rows = futures_util::future::join_all(named).await;
    rows.extend(futures_util::future::join_all(made).await);
    rows.extend(futures_util::future::join_all(pods).await);
    let all_up = rows.iter().all(|row| row.state.is_ok() || row.paused);
    inv.printer.list(
        &rows,
        "No sandboxes yet. Name one in cove.toml:\n\n[sandboxes.build-1]\nurl = \"http://10.0.0.7:7700\"\ntoken = \"...\"\n\nor make one with Docker (cove sandbox create build-1) or Kubernetes (cove sandbox create build-1 --kubernetes)",
        Row::line,
    );
    Ok(if all_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::FAILED)
    })
}
