//! Which sandbox a command works in (`--sandbox`, `cove.toml`, a Docker sandbox's name, or a
//! local one) and opening it: a stopped Docker sandbox is started first, then reached at its
//! current URL.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{CliError, Invocation};
use crate::config;
use crate::sandbox::docker::Docker;
use crate::sandbox::{Sandbox, SandboxSpec};

/// The flags that choose a sandbox.
#[derive(Debug, Clone, Args)]
pub(super) struct SandboxArgs {
    /// `local` (start coved here), the URL of a running coved, or a sandbox's name.
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
    if let Some(name) = choice.as_deref()
        && !inv.file.sandboxes.contains_key(name)
        && inv.store.sandbox(name)?.is_some()
    {
        return Ok((
            SandboxSpec::Docker {
                name: name.to_string(),
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
        None | Some("local") => {
            let workspace = args.workspace.clone().unwrap_or_else(default_workspace);
            let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
            Ok((SandboxSpec::Local { workspace }, None))
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
                "--sandbox must be `local`, a URL or a sandbox named in cove.toml ({}), not {other:?}",
                if names.is_empty() {
                    "none are".to_string()
                } else {
                    names.join(", ")
                }
            )))
        }
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
    let SandboxSpec::Docker { name } = &spec else {
        return Ok(Sandbox::open(spec, token, log).await?);
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
    let mut sandbox = Sandbox::open(SandboxSpec::Remote { url }, Some(managed.token), log).await?;
    // Threads remember the name, not the URL of this start.
    sandbox.spec = spec;
    Ok(sandbox)
}
