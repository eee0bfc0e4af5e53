//! `cove sandbox pause|resume NAME`. A Docker sandbox is frozen (the cgroup freezer): its
//! processes, shells and browser included, wait in memory where they were, take no CPU,
//! and go on at resume. Its next use resumes it by itself. Kubernetes offers no freezer: a
//! paused sandbox's Pod goes and its volume stays (files kept, processes not). With
//! `idle_pause_secs`, a watcher pauses a sandbox left idle that long (a Kubernetes one only
//! with a volume, which keeps its files).

use std::process::ExitCode;
use std::time::Duration;

use cove_core::store::ThreadStatus;
use cove_protocol::client::CovedClient;
use serde_json::json;

use super::managed;
use crate::{CliError, Invocation};
use cove_sandbox::choice::pod_plan;
use cove_sandbox::docker::Docker;
use cove_sandbox::idle_watch;
use cove_sandbox::kubernetes::{Kubernetes, pod_name};

/// `cove sandbox pause NAME`
pub(super) async fn pause(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let sandbox = managed(inv, name)?;
    if sandbox.provider == "kubernetes" {
        let plan = pod_plan(&sandbox)?;
        if plan.storage_bytes.is_none() {
            return Err(CliError::Usage(format!(
                "sandbox {name} has no volume: Kubernetes cannot freeze a Pod, and without a volume its workspace would go with it; `cove sandbox stop {name}` if that is what you mean"
            )));
        }
        Kubernetes::from_env(inv.in_cluster)
            .await?
            .stop(sandbox.resource_name(), &plan.namespace)
            .await?;
        inv.printer.result(
            &json!({"name": name, "paused": true, "processes_kept": false}),
            |_| {
                format!(
                    "sandbox {name} paused: its Pod {} is gone and its workspace stays on its volume (files kept, processes not); its next use, or `cove sandbox resume {name}`, makes it again",
                    pod_name(sandbox.resource_name())
                )
            },
        );
        return Ok(ExitCode::SUCCESS);
    }
    let docker = Docker::from_env()?;
    let info = docker.inspect(&sandbox.container_id).await?;
    if !info.running {
        return Err(CliError::Usage(format!(
            "sandbox {name} is not running (container {}): there is nothing to pause",
            info.status
        )));
    }
    if !info.paused {
        docker.pause(&sandbox.container_id).await?;
    }
    inv.printer.result(
        &json!({"name": name, "paused": true, "processes_kept": true}),
        |_| {
            format!(
                "sandbox {name} paused: its processes wait in memory and take no CPU; its next use, or `cove sandbox resume {name}`, lets them go on"
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox resume NAME`
pub(super) async fn resume(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let sandbox = managed(inv, name)?;
    if sandbox.provider == "kubernetes" {
        return super::start(inv, name).await;
    }
    let docker = Docker::from_env()?;
    let info = docker.inspect(&sandbox.container_id).await?;
    if !info.running {
        return Err(CliError::Usage(format!(
            "sandbox {name} is stopped, not paused (container {}): `cove sandbox start {name}`",
            info.status
        )));
    }
    if info.paused {
        docker.resume(&sandbox.container_id).await?;
    }
    inv.printer.result(
        &json!({"name": name, "paused": false, "url": info.url}),
        |_| format!("sandbox {name} runs on from where it was paused"),
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox idle-watch NAME --after SECS` (started by Cove as the sandbox opens, see
/// `idle_pause_secs`): pauses the Docker sandbox once it has been idle `after_secs`, with
/// nothing holding it open and no run on it, and waits while it is paused. It ends when
/// another watcher has it, or the sandbox is gone or stopped.
pub(super) async fn idle_watch(
    inv: &Invocation,
    name: &str,
    after_secs: u64,
) -> Result<ExitCode, CliError> {
    let Some(db) = inv.store.path() else {
        return Ok(ExitCode::SUCCESS);
    };
    let Some(_watching) = idle_watch::claim(&db, name) else {
        return Ok(ExitCode::SUCCESS);
    };
    let sandbox = managed(inv, name)?;
    let after = after_secs.max(1) as f64;
    if sandbox.provider == "kubernetes" {
        return idle_watch_pod(inv, &db, &sandbox, after).await;
    }
    let docker = Docker::from_env()?;
    loop {
        let Ok(info) = docker.inspect(&sandbox.container_id).await else {
            return Ok(ExitCode::SUCCESS);
        };
        let wait = match (info.running, info.paused, info.url) {
            (false, _, _) | (true, false, None) => return Ok(ExitCode::SUCCESS),
            // Paused: its next use resumes it, and this watches on from there.
            (true, true, _) => after,
            (true, false, Some(url)) => {
                let client = CovedClient::new(&url, sandbox.token.clone())
                    .map_err(|e| CliError::Failed(e.to_string()))?;
                let label = format!("docker:{name}");
                match idle_for(inv, &client, &label).await {
                    Idle::For(secs) if secs >= after => {
                        // Nothing may hold it open as it pauses; asked once more, with
                        // the lock held, so no use begins in between.
                        if let Some(_unused) = idle_watch::unused(&db, name)
                            && matches!(idle_for(inv, &client, &label).await, Idle::For(s) if s >= after)
                        {
                            docker.pause(&sandbox.container_id).await?;
                            tracing::info!(sandbox = name, "paused, idle");
                        }
                        after
                    }
                    Idle::For(secs) => after - secs,
                    Idle::Busy => after,
                    Idle::Never => return Ok(ExitCode::SUCCESS),
                }
            }
        };
        tokio::time::sleep(Duration::from_secs_f64(wait.clamp(0.2, 60.0))).await;
    }
}

/// [`idle_watch`] of a Kubernetes sandbox with a volume: once it has been idle `after`
/// seconds, its Pod goes and its volume stays (its next use makes it again, and starts a
/// watcher anew). It ends when the Pod is gone.
async fn idle_watch_pod(
    inv: &Invocation,
    db: &std::path::Path,
    sandbox: &cove_core::store::ManagedSandbox,
    after: f64,
) -> Result<ExitCode, CliError> {
    let name = &sandbox.name;
    let plan = pod_plan(sandbox)?;
    if plan.storage_bytes.is_none() {
        // Its files would go with its Pod.
        return Ok(ExitCode::SUCCESS);
    }
    let kube = Kubernetes::from_env(inv.in_cluster).await?;
    let resource = sandbox.resource_name();
    loop {
        let ip = match kube.state(resource, &plan.namespace).await {
            Ok(cove_sandbox::kubernetes::PodState::Ready { ip }) => ip,
            Ok(cove_sandbox::kubernetes::PodState::Starting(_)) => {
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
            _ => return Ok(ExitCode::SUCCESS),
        };
        let Ok(tunnel) = kube.connect(resource, &plan.namespace, ip.as_deref()).await else {
            return Ok(ExitCode::SUCCESS);
        };
        let client = CovedClient::new(&tunnel.url, sandbox.token.clone())
            .map_err(|e| CliError::Failed(e.to_string()))?;
        let label = format!("k8s:{name}");
        let wait = match idle_for(inv, &client, &label).await {
            Idle::For(secs) if secs >= after => {
                if let Some(_unused) = idle_watch::unused(db, name)
                    && matches!(idle_for(inv, &client, &label).await, Idle::For(s) if s >= after)
                {
                    drop(tunnel);
                    kube.stop(resource, &plan.namespace).await?;
                    tracing::info!(sandbox = %name, "paused, idle: its Pod went, its volume stays");
                    return Ok(ExitCode::SUCCESS);
                }
                after
            }
            Idle::For(secs) => after - secs,
            Idle::Busy => after,
            Idle::Never => return Ok(ExitCode::SUCCESS),
        };
        drop(tunnel);
        tokio::time::sleep(Duration::from_secs_f64(wait.clamp(0.2, 60.0))).await;
    }
}

/// How long a sandbox has been idle, as the watcher sees it.
enum Idle {
    For(f64),
    /// In use, or a run on it is under way.
    Busy,
    /// Its coved cannot say (an older one): never paused for idleness.
    Never,
}

/// `label`: how threads record the sandbox (`docker:NAME`, `k8s:NAME`).
async fn idle_for(inv: &Invocation, client: &CovedClient, label: &str) -> Idle {
    // A run on it may be waiting for its model: never paused under it.
    let live_run = inv.store.threads().is_ok_and(|threads| {
        threads.iter().any(|t| {
            t.sandbox == *label && matches!(t.status, ThreadStatus::Running | ThreadStatus::Waiting)
        })
    });
    match client.idle().await {
        Ok(idle) if idle.busy.is_empty() && !live_run => Idle::For(idle.idle_secs),
        Ok(_) => Idle::Busy,
        Err(e) if e.code() == Some(&cove_protocol::ErrorCode::UnknownRoute) => Idle::Never,
        Err(_) => Idle::Busy,
    }
}
