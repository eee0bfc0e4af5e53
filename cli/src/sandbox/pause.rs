//! `cove sandbox pause|resume NAME`. A Docker sandbox is frozen (the cgroup freezer): its
//! processes, shells and browser included, wait in memory where they were, take no CPU,
//! and go on at resume. Its next use resumes it by itself. Kubernetes offers no freezer: a
//! paused sandbox's Pod goes and its volume stays (files kept, processes not). With
//! `idle_pause_secs`, a watcher pauses a Docker sandbox left idle that long.

use std::process::ExitCode;
use std::time::Duration;

use cove_core::store::ThreadStatus;
use cove_protocol::client::CovedClient;
use serde_json::json;

use super::managed;
use crate::{CliError, Invocation};
use cove_sandbox::choice::pod_plan;
use cove_sandbox::docker::Docker;
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
            .stop(name, &plan.namespace)
            .await?;
        inv.printer.result(
            &json!({"name": name, "paused": true, "processes_kept": false}),
            |_| {
                format!(
                    "sandbox {name} paused: its Pod {} is gone and its workspace stays on its volume (files kept, processes not); its next use, or `cove sandbox resume {name}`, makes it again",
                    pod_name(name)
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
        docker.unpause(&sandbox.container_id).await?;
    }
    inv.printer.result(
        &json!({"name": name, "paused": false, "url": info.url}),
        |_| format!("sandbox {name} runs on from where it was paused"),
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox idle-watch NAME --after SECS` (started by Cove as the sandbox opens, see
/// `idle_pause_secs`): pauses the Docker sandbox once it has been idle `after_secs`, with
/// no run on it, then ends. It ends too when another watcher has it, or the sandbox is
/// gone, stopped or paused.
pub(super) async fn idle_watch(
    inv: &Invocation,
    name: &str,
    after_secs: u64,
) -> Result<ExitCode, CliError> {
    let Some(db) = inv.store.path() else {
        return Ok(ExitCode::SUCCESS);
    };
    let Some(_watching) = cove_sandbox::idle_watch::claim(&db, name) else {
        return Ok(ExitCode::SUCCESS);
    };
    let sandbox = managed(inv, name)?;
    let docker = Docker::from_env()?;
    let after = after_secs.max(1) as f64;
    let label = format!("docker:{name}");
    loop {
        let Ok(info) = docker.inspect(&sandbox.container_id).await else {
            return Ok(ExitCode::SUCCESS);
        };
        let (true, false, Some(url)) = (info.running, info.paused, info.url) else {
            return Ok(ExitCode::SUCCESS);
        };
        let client = CovedClient::new(&url, sandbox.token.clone())
            .map_err(|e| CliError::Failed(e.to_string()))?;
        // A run on it may be waiting for its model: never paused under it.
        let live_run = inv.store.threads()?.iter().any(|t| {
            t.sandbox == label && matches!(t.status, ThreadStatus::Running | ThreadStatus::Waiting)
        });
        let wait = match client.idle().await {
            Ok(idle) if idle.busy.is_empty() && !live_run && idle.idle_secs >= after => {
                docker.pause(&sandbox.container_id).await?;
                tracing::info!(sandbox = name, idle_secs = idle.idle_secs, "paused, idle");
                return Ok(ExitCode::SUCCESS);
            }
            Ok(idle) if idle.busy.is_empty() && !live_run => after - idle.idle_secs,
            Ok(_) => after,
            // An older coved cannot say: it is never paused by idleness.
            Err(e) if e.code() == Some(&cove_protocol::ErrorCode::UnknownRoute) => {
                return Ok(ExitCode::SUCCESS);
            }
            Err(_) => after,
        };
        tokio::time::sleep(Duration::from_secs_f64(wait.clamp(0.2, 60.0))).await;
    }
}
