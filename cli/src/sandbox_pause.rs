//! `cove sandbox pause|resume NAME`. A Docker sandbox is frozen (the cgroup freezer): its
//! processes, shells and browser included, wait in memory where they were, take no CPU,
//! and go on at resume. Its next use resumes it by itself. Kubernetes offers no freezer: a
//! paused sandbox's Pod goes and its volume stays (files kept, processes not).

use std::process::ExitCode;

use serde_json::json;

use super::sandbox::managed;
use super::{CliError, Invocation};
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
        return super::sandbox::start(inv, name).await;
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
