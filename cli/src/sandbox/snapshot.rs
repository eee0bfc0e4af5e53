//! `cove sandbox snapshot NAME`, `snapshots`, `rm-snapshot REF`, `fork NAME NEW`, and
//! `create NEW --from REF`: snapshots of whole Docker sandboxes (their filesystem, what
//! the agent installed outside the workspace included), and sandboxes made from them.

use std::process::ExitCode;

use serde_json::json;

use super::managed;
use crate::{CliError, Invocation};
use cove_protocol::client::CovedClient;
use cove_sandbox::docker::Docker;

/// A tag for a snapshot taken now: `t` and the seconds since the epoch (sortable).
fn tag_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("t{secs}")
}

/// Takes a snapshot of Docker sandbox `name`; answers its reference. A command running in
/// one of its shells could leave files half-written in it: refused then, unless `force`.
pub(super) async fn take(
    inv: &Invocation,
    name: &str,
    tag: Option<String>,
    force: bool,
) -> Result<String, CliError> {
    let sandbox = managed(inv, name)?;
    if sandbox.provider != "docker" {
        return Err(CliError::Usage(format!(
            "sandbox {name} is a {} sandbox: snapshots of whole sandboxes are made of Docker ones (a Kubernetes one's workspace volume can be snapshotted by the cluster; see docs/sandboxes.md)",
            sandbox.provider
        )));
    }
    let docker = Docker::from_env()?;
    let info = docker.inspect(&sandbox.container_id).await?;
    if info.running && !info.paused && !force {
        let url = info.url.clone().unwrap_or_default();
        let client = CovedClient::new(&url, sandbox.token.clone())
            .map_err(|e| CliError::Failed(e.to_string()))?;
        if let Ok(idle) = client.idle().await {
            let running: Vec<&String> =
                idle.busy.iter().filter(|b| b.contains(" runs `")).collect();
            if let Some(first) = running.first() {
                return Err(CliError::Usage(format!(
                    "sandbox {name} is busy ({first}): a snapshot now could catch its files half-written; wait for it to end, or take it anyway with --force"
                )));
            }
        }
    }
    let tag = tag.unwrap_or_else(tag_now);
    inv.printer.note(&format!(
        "taking a snapshot of sandbox {name} (its whole filesystem)"
    ));
    Ok(docker
        .snapshot(&sandbox.container_id, name, &tag, info.paused)
        .await?)
}

/// `cove sandbox snapshot NAME [--tag T] [--force]`
pub(super) async fn snapshot(
    inv: &Invocation,
    name: &str,
    tag: Option<String>,
    force: bool,
) -> Result<ExitCode, CliError> {
    let reference = take(inv, name, tag, force).await?;
    inv.printer.result(
        &json!({"sandbox": name, "snapshot": reference}),
        |_| {
            format!(
                "snapshot {reference} taken; make a sandbox from it with: cove sandbox create NEW --from {reference}"
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox snapshots`
pub(super) async fn list(inv: &Invocation) -> Result<ExitCode, CliError> {
    let snapshots = Docker::from_env()?.snapshots().await?;
    inv.printer.list(
        &snapshots,
        "No snapshots yet: cove sandbox snapshot NAME takes one",
        |s| {
            format!(
                "{:<48} of {:<16} {} MB",
                s.reference,
                s.of,
                s.size / 1_000_000
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox rm-snapshot REF`
pub(super) async fn remove(inv: &Invocation, reference: &str) -> Result<ExitCode, CliError> {
    let docker = Docker::from_env()?;
    if !docker
        .snapshots()
        .await?
        .iter()
        .any(|s| s.reference == reference)
    {
        return Err(CliError::NotFound(format!(
            "no snapshot {reference}; `cove sandbox snapshots` lists them"
        )));
    }
    docker.remove_snapshot(reference).await?;
    inv.printer
        .result(&json!({"snapshot": reference, "removed": true}), |_| {
            format!("snapshot {reference} removed")
        });
    Ok(ExitCode::SUCCESS)
}

/// The image of `--from REF`: a snapshot Docker has.
pub(super) async fn image_of(reference: &str) -> Result<String, CliError> {
    let known = Docker::from_env()?
        .snapshots()
        .await?
        .into_iter()
        .any(|s| s.reference == reference);
    if !known {
        return Err(CliError::NotFound(format!(
            "no snapshot {reference}; `cove sandbox snapshots` lists them"
        )));
    }
    Ok(reference.to_string())
}
