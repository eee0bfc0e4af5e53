//! Which sandbox a command works in (`--sandbox`, `cove.toml`, the name of a sandbox Cove
//! made with Docker or Kubernetes, `k8s:NAME`, or a local one) and opening it: a stopped
//! Docker sandbox is started first, then reached at its current URL; a Kubernetes sandbox's
//! Pod is made again if it is gone (stopped, evicted), then reached through port-forward.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{CliError, Invocation};
use crate::config;
use crate::sandbox::docker::Docker;
use crate::sandbox::kubernetes::{Kubernetes, PodPlan};
use crate::sandbox::{Sandbox, SandboxSpec};
use crate::store::ManagedSandbox;

/// The flags that choose a sandbox.
#[derive(Debug, Clone, Args)]
pub(super) struct SandboxArgs {
    /// `local` (start coved here, walled in), `host` (start coved here with no walls: the
    /// agent runs as you), the URL of a running coved, or a sandbox's name.
    #[arg(long, env = "COVE_SANDBOX_URL")]
    pub sandbox: Option<String>,
    /// Token of a remote sandbox.
    #[arg(long, env = "COVE_SANDBOX_TOKEN", hide_env_values = true)]
    pub sandbox_token: Option<String>,
    /// Workspace folder of a local sandbox.
    #[arg(long, env = "COVE_WORKSPACE")]
    pub workspace: Option<PathBuf>,
}

/// Where a local sandbox's daemon writes its log.
pub(super) fn coved_log() -> PathBuf {
    config::data_dir().join("logs/coved.log")
}

/// The sandbox `args` choose, and its token; a local one gets `default_workspace` unless
/// `--workspace` names one.
pub(super) fn choose(
    inv: &Invocation,
    args: &SandboxArgs,
    default_workspace: impl FnOnce() -> PathBuf,
) -> Result<(SandboxSpec, Option<String>), CliError> {
    let choice = args.sandbox.clone().or_else(|| inv.file.sandbox.clone());
    if let Some(name) = choice.as_deref().and_then(|c| c.strip_prefix("k8s:")) {
        // Made on first use when Cove does not know it yet.
        return match inv.store.sandbox(name)? {
            Some(made) if made.provider != "kubernetes" => Err(CliError::Usage(format!(
                "sandbox {name} is a {} sandbox, not a Kubernetes one: use --sandbox {name}",
                made.provider
            ))),
            _ => Ok((
                SandboxSpec::Kubernetes {
                    name: name.to_string(),
                },
                None,
            )),
        };
    }
    if let Some(name) = choice.as_deref()
        && !inv.file.sandboxes.contains_key(name)
        && let Some(made) = inv.store.sandbox(name)?
    {
        let name = name.to_string();
        return Ok((
            if made.provider == "kubernetes" {
                SandboxSpec::Kubernetes { name }
            } else {
                SandboxSpec::Docker { name }
            },
            None,
        ));
    }
    if let Some(named) = choice.as_deref().and_then(|n| inv.file.sandboxes.get(n)) {
        let token = args
            .sandbox_token
            .clone()
            .or_else(|| named.token.clone())
            .or_else(|| inv.file.sandbox_token.clone());
        return Ok((
            SandboxSpec::Remote {
                url: named.url.clone(),
            },
            token,
        ));
    }
    let token = args.sandbox_token.clone().or_else(|| {
        choice
            .as_deref()
            .and_then(|url| inv.file.token_for(url))
            .or_else(|| inv.file.sandbox_token.clone())
    });
    match choice.as_deref() {
        None | Some("local") | Some("host") => {
            let workspace = args.workspace.clone().unwrap_or_else(default_workspace);
            let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
            Ok((
                if choice.as_deref() == Some("host") {
                    SandboxSpec::Host { workspace }
                } else {
                    SandboxSpec::Local { workspace }
                },
                None,
            ))
        }
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => Ok((
            SandboxSpec::Remote {
                url: url.to_string(),
            },
            token,
        )),
        Some(other) => {
            let names: Vec<&str> = inv.file.sandboxes.keys().map(String::as_str).collect();
            Err(CliError::Usage(format!(
                "--sandbox must be `local`, `host`, a URL or a sandbox named in cove.toml ({}), not {other:?}",
                if names.is_empty() {
                    "none are".to_string()
                } else {
                    names.join(", ")
                }
            )))
        }
    }
}

/// The token for `spec`, a thread's sandbox: `--sandbox-token` only for the sandbox
/// `--sandbox` names (or any when none is named), else the one cove.toml gives its address.
/// A token belongs to the sandbox it was given for.
pub(super) fn token_for(
    inv: &Invocation,
    args: &SandboxArgs,
    spec: &SandboxSpec,
) -> Option<String> {
    let SandboxSpec::Remote { url } = spec else {
        return None;
    };
    let given_for_it = args.sandbox.is_none()
        || choose(inv, args, PathBuf::new).is_ok_and(|(chosen, _)| chosen.label() == spec.label());
    match &args.sandbox_token {
        Some(token) if given_for_it => Some(token.clone()),
        _ => inv.file.token_for(url),
    }
}

/// The sandbox of a command that needs no model (`exec`, `ls`, `cat`, …): a local one works
/// in the current folder.
pub(super) async fn open_for_command(
    inv: &Invocation,
    args: &SandboxArgs,
) -> Result<Sandbox, CliError> {
    let (spec, token) = choose(inv, args, || PathBuf::from("."))?;
    open(inv, spec, token, Some(&coved_log())).await
}

/// Opens `spec`'s sandbox; a Docker one is started first when it is not running.
pub(super) async fn open(
    inv: &Invocation,
    spec: SandboxSpec,
    token: Option<String>,
    log: Option<&Path>,
) -> Result<Sandbox, CliError> {
    if let SandboxSpec::Kubernetes { name } = &spec {
        return open_pod(inv, name).await;
    }
    if let SandboxSpec::Host { workspace } = &spec {
        inv.printer.warn(&format!(
            "warning: --sandbox host: no walls; the agent's commands run as you, on this machine, and can read and change anything you can (workspace {})",
            workspace.display()
        ));
    }
    let SandboxSpec::Docker { name } = &spec else {
        return Ok(Sandbox::open(spec, token, log, &inv.local).await?);
    };
    let managed = inv.store.sandbox(name)?.ok_or_else(|| {
        CliError::NotFound(format!(
            "no sandbox {name}: it was removed; `cove sandbox ls` lists what there is"
        ))
    })?;
    let docker = Docker::from_env()?;
    let mut info = docker.inspect(&managed.container_id).await?;
    if !info.running {
        inv.printer.note(&format!("starting sandbox {name}"));
        info = docker.start(&managed.container_id).await?;
    }
    let url = info
        .url
        .ok_or_else(|| CliError::Failed(format!("sandbox {name} publishes no port")))?;
    inv.store.set_sandbox_url(name, Some(&url))?;
    let mut sandbox = Sandbox::open(
        SandboxSpec::Remote { url },
        Some(managed.token),
        log,
        &inv.local,
    )
    .await?;
    // Threads remember the name, not the URL of this start.
    sandbox.spec = spec;
    Ok(sandbox)
}

/// Keeps the uid of the Pod a Kubernetes sandbox runs in now with its plan, when it changed
/// (the Pod was made again): the next use refuses any other Pod of that name.
pub(super) fn keep_pod_uid(
    inv: &Invocation,
    name: &str,
    mut plan: PodPlan,
    uid: Option<String>,
) -> Result<(), CliError> {
    if uid.is_some() && uid != plan.pod_uid {
        plan.pod_uid = uid;
        if let Ok(spec) = serde_json::to_string(&plan) {
            inv.store.set_sandbox_spec(name, &spec)?;
        }
    }
    Ok(())
}

/// The plan a Kubernetes sandbox was made with.
pub(super) fn pod_plan(made: &ManagedSandbox) -> Result<PodPlan, CliError> {
    made.spec
        .as_deref()
        .and_then(|spec| serde_json::from_str(spec).ok())
        .ok_or_else(|| {
            CliError::Failed(format!(
                "sandbox {} has no Pod plan recorded; remove it (`cove sandbox rm {}`) and make it again",
                made.name, made.name
            ))
        })
}

/// Opens Kubernetes sandbox `name`: its Pod is made again if it is gone, then coved is
/// reached (port-forward from outside the cluster, the Pod's address inside).
async fn open_pod(inv: &Invocation, name: &str) -> Result<Sandbox, CliError> {
    let kube = Kubernetes::from_env(inv.in_cluster).await?;
    let made = match inv.store.sandbox(name)? {
        Some(made) => made,
        // `--sandbox k8s:NAME` for a sandbox Cove does not know: made now, with the
        // defaults `cove sandbox create NAME --kubernetes` has.
        None => {
            super::sandbox::check_name(inv, name, true)?;
            let plan = PodPlan {
                namespace: kube.default_namespace.clone(),
                image: crate::sandbox::docker::DEFAULT_IMAGE.into(),
                cpu: None,
                memory_bytes: None,
                storage_bytes: None,
                deadline_secs: None,
                shm_bytes: crate::sandbox::docker::ContainerSpec::default().shm_bytes,
                installation: None,
                pod_uid: None,
            };
            super::sandbox::make_pod_sandbox(inv, &kube, name, plan).await?
        }
    };
    let plan = pod_plan(&made)?;
    let started = kube.ensure_running(name, &made.token, &plan).await?;
    keep_pod_uid(inv, name, plan.clone(), started.uid.clone())?;
    if started.remade {
        let why = started
            .why
            .as_deref()
            .map(|w| format!(" (its Pod had ended: {w})"))
            .unwrap_or_default();
        inv.printer.note(&if started.lost_workspace {
            format!(
                "sandbox {name} was started again{why} and lost its workspace: it has no volume (make it with --storage to keep one)"
            )
        } else {
            format!("sandbox {name} was started again{why}; its workspace is on its volume")
        });
    }
    let tunnel = kube
        .connect(name, &plan.namespace, started.ip.as_deref())
        .await?;
    Ok(Sandbox::through(
        tunnel,
        made.token.clone(),
        SandboxSpec::Kubernetes {
            name: name.to_string(),
        },
    )
    .await?)
}
