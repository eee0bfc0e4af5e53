//! `cove sandbox snapshot NAME`, `snapshots`, `rm-snapshot REF`, `fork NAME NEW`, and
//! `create NEW --from REF`: snapshots of whole Docker sandboxes (their filesystem, what
//! the agent installed outside the workspace included), snapshots of Kubernetes sandboxes'
//! workspace volumes (VolumeSnapshots), and sandboxes made from them.

use std::process::ExitCode;

use serde_json::json;

use super::managed;
use crate::{CliError, Invocation};
use cove_core::store::ManagedSandbox;
use cove_protocol::client::CovedClient;
use cove_protocol::shell::ExecRequest;
use cove_sandbox::SandboxSpec;
use cove_sandbox::choice::pod_plan;
use cove_sandbox::docker::Docker;
use cove_sandbox::kubernetes::{Kubernetes, PodPlan, VolumeSnapshot, parse_reference};

/// A tag for a snapshot taken now: `t` and the seconds since the epoch (sortable).
fn tag_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("t{secs}")
}

/// Refuses a snapshot of sandbox `name` while a command runs in one of its shells: it could
/// catch the command's files half-written.
async fn refuse_if_busy(client: &CovedClient, name: &str) -> Result<(), CliError> {
    if let Ok(idle) = client.idle().await
        && let Some(first) = idle.busy.iter().find(|b| b.contains(" runs `"))
    {
        return Err(CliError::Usage(format!(
            "sandbox {name} is busy ({first}): a snapshot now could catch its files half-written; wait for it to end, or take it anyway with --force"
        )));
    }
    Ok(())
}

/// Takes a snapshot of sandbox `name` (Docker: its whole filesystem; Kubernetes: its
/// workspace volume); answers its reference. A command running in one of its shells could
/// leave files half-written in it: refused then, unless `force`.
pub(super) async fn take(
    inv: &Invocation,
    name: &str,
    tag: Option<String>,
    force: bool,
) -> Result<String, CliError> {
    let sandbox = managed(inv, name)?;
    if sandbox.provider == "kubernetes" {
        return Ok(take_volume(inv, &sandbox, tag, force).await?.reference());
    }
    let docker = Docker::from_env()?;
    let info = docker.inspect(&sandbox.container_id).await?;
    if info.running && !info.paused && !force {
        let url = info.url.clone().unwrap_or_default();
        cove_sandbox::tokens::ensure_own(&url, &sandbox).await?;
        let client = CovedClient::new(&url, sandbox.token.clone())
            .map_err(|e| CliError::Failed(e.to_string()))?;
        refuse_if_busy(&client, name).await?;
    }
    let tag = tag.unwrap_or_else(tag_now);
    inv.printer.note(&format!(
        "taking a snapshot of sandbox {name} (its whole filesystem)"
    ));
    Ok(docker
        .snapshot(&sandbox.container_id, name, &tag, info.paused)
        .await?)
}

/// Takes a VolumeSnapshot of Kubernetes sandbox `sandbox`'s workspace claim, once nothing
/// runs in its shells (unless `force`) and its files are synced to the volume.
async fn take_volume(
    inv: &Invocation,
    sandbox: &ManagedSandbox,
    tag: Option<String>,
    force: bool,
) -> Result<VolumeSnapshot, CliError> {
    let name = &sandbox.name;
    let plan = pod_plan(sandbox)?;
    if plan.storage_bytes.is_none() {
        return Err(CliError::Usage(format!(
            "sandbox {name} has no volume: its workspace lives and goes with its Pod, and Kubernetes takes snapshots of volumes only; make a sandbox with --storage to snapshot it"
        )));
    }
    let tag = tag.unwrap_or_else(tag_now);
    let snapshot = format!("cove-{name}-{tag}").to_ascii_lowercase();
    let valid = snapshot.len() <= 253
        && snapshot
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if !valid {
        return Err(CliError::Usage(format!(
            "--tag {tag:?}: a Kubernetes snapshot's tag has letters, digits, - and ."
        )));
    }
    let opened = inv
        .sandboxes()
        .open(SandboxSpec::Kubernetes { name: name.clone() }, None, None)
        .await?;
    let quiet = match force {
        true => Ok(()),
        false => refuse_if_busy(&opened.client, name).await,
    };
    // What the agent wrote, on the volume before the snapshot is cut.
    let synced = match &quiet {
        Ok(()) => opened
            .client
            .exec(&ExecRequest::new("sync"))
            .await
            .map(|_| ()),
        Err(_) => Ok(()),
    };
    opened.close().await;
    quiet?;
    synced.map_err(|e| CliError::Failed(format!("cannot sync sandbox {name}'s files: {e}")))?;
    inv.printer.note(&format!(
        "taking a snapshot of sandbox {name}'s workspace volume (VolumeSnapshot {snapshot} in {})",
        plan.namespace
    ));
    let kube = Kubernetes::from_env(inv.in_cluster).await?;
    Ok(kube
        .snapshot(&snapshot, sandbox.resource_name(), name, &plan, None)
        .await?)
}

/// The plan of a new Kubernetes sandbox whose workspace is made from snapshot `reference`
/// (`k8s:NAMESPACE/NAME`): `base`'s, or the defaults; its volume as large as the snapshot
/// needs unless `storage_bytes` says.
pub(super) async fn plan_from(
    inv: &Invocation,
    reference: &str,
    base: Option<PodPlan>,
    storage_bytes: Option<i64>,
) -> Result<Option<PodPlan>, CliError> {
    let Some((namespace, name)) = parse_reference(reference) else {
        return Ok(None);
    };
    let kube = Kubernetes::from_env(inv.in_cluster).await?;
    let found = kube
        .volume_snapshot(namespace, name)
        .await?
        .ok_or_else(|| {
            CliError::NotFound(format!(
                "no snapshot {reference}; `cove sandbox snapshots` lists them"
            ))
        })?;
    if !found.ready {
        return Err(CliError::Failed(format!(
            "snapshot {reference} is not ready to use{}",
            found.error.map(|e| format!(": {e}")).unwrap_or_default()
        )));
    }
    let storage_bytes = storage_bytes
        .or_else(|| {
            found
                .restore_size
                .as_deref()
                .and_then(cove_sandbox::docker::parse_size)
        })
        .or(base.as_ref().and_then(|b| b.storage_bytes))
        .ok_or_else(|| {
            CliError::Usage(format!(
                "snapshot {reference} does not say how large a volume it needs: give --storage"
            ))
        })?;
    let mut plan = base.unwrap_or(PodPlan {
        namespace: namespace.to_string(),
        image: cove_sandbox::docker::DEFAULT_IMAGE.into(),
        cpu: None,
        memory_bytes: None,
        storage_bytes: None,
        deadline_secs: None,
        shm_bytes: cove_sandbox::docker::ContainerSpec::default().shm_bytes,
        installation: None,
        pod_uid: None,
        restore_from: None,
        disk_bytes: None,
    });
    plan.namespace = namespace.to_string();
    plan.storage_bytes = Some(storage_bytes);
    plan.restore_from = Some(name.to_string());
    plan.pod_uid = None;
    plan.installation = None;
    Ok(Some(plan))
}

/// `cove sandbox fork NAME NEW` of a Kubernetes sandbox: a snapshot of its volume, and a
/// new sandbox whose volume is made from it.
pub(super) async fn fork_pod(
    inv: &Invocation,
    source: &ManagedSandbox,
    new: &str,
    force: bool,
) -> Result<ExitCode, CliError> {
    let taken = take_volume(inv, source, None, force).await?;
    let base = pod_plan(source)?;
    let plan = plan_from(inv, &taken.reference(), Some(base), None)
        .await?
        .ok_or_else(|| CliError::Failed("the snapshot has no reference".into()))?;
    let kube = Kubernetes::from_env(inv.in_cluster).await?;
    inv.sandboxes().make_pod_sandbox(&kube, new, plan).await?;
    inv.printer.result(
        &json!({"name": new, "from": taken.reference()}),
        |_| {
            format!(
                "sandbox {new} made from {} (a snapshot of {}'s workspace volume); use it with: cove run --sandbox {new} \"...\"",
                taken.reference(),
                source.name
            )
        },
    );
    Ok(ExitCode::SUCCESS)
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
    let made = inv.store.sandboxes()?;
    let pods: Vec<&ManagedSandbox> = made.iter().filter(|s| s.provider == "kubernetes").collect();
    let mut rows = Vec::new();
    let docker = match Docker::from_env() {
        Ok(docker) => docker.snapshots().await,
        Err(e) => Err(e),
    };
    match docker {
        Ok(found) => rows.extend(found.into_iter().map(|s| {
            json!({"provider": "docker", "reference": s.reference, "of": s.of, "size": format!("{} MB", s.size / 1_000_000)})
        })),
        // Without Kubernetes sandboxes, Docker is all there is to ask.
        Err(e) if pods.is_empty() => return Err(e.into()),
        Err(e) => tracing::debug!(error = %e, "Docker was not looked at"),
    }
    if !pods.is_empty() {
        let kube = Kubernetes::from_env(inv.in_cluster).await?;
        let mut namespaces: Vec<String> = pods
            .iter()
            .filter_map(|s| pod_plan(s).ok().map(|p| p.namespace))
            .collect();
        namespaces.sort();
        namespaces.dedup();
        for namespace in namespaces {
            for s in kube.snapshots_in(&namespace).await? {
                let state = match (&s.error, s.ready) {
                    (Some(e), _) => format!("failed: {e}"),
                    (None, true) => s.restore_size.clone().unwrap_or_default(),
                    (None, false) => "not ready yet".into(),
                };
                rows.push(json!({"provider": "kubernetes", "reference": s.reference(), "of": s.of, "size": state, "ready": s.ready}));
            }
        }
    }
    inv.printer.list(
        &rows,
        "No snapshots yet: cove sandbox snapshot NAME takes one",
        |row| {
            format!(
                "{:<48} of {:<16} {}",
                row["reference"].as_str().unwrap_or_default(),
                row["of"].as_str().unwrap_or_default(),
                row["size"].as_str().unwrap_or_default()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox rm-snapshot REF`
pub(super) async fn remove(inv: &Invocation, reference: &str) -> Result<ExitCode, CliError> {
    if let Some((namespace, name)) = parse_reference(reference) {
        let kube = Kubernetes::from_env(inv.in_cluster).await?;
        if kube.volume_snapshot(namespace, name).await?.is_none() {
            return Err(CliError::NotFound(format!(
                "no snapshot {reference}; `cove sandbox snapshots` lists them"
            )));
        }
        kube.remove_volume_snapshot(namespace, name).await?;
        inv.printer
            .result(&json!({"snapshot": reference, "removed": true}), |_| {
                format!("snapshot {reference} removed")
            });
        return Ok(ExitCode::SUCCESS);
    }
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
