//! The flags that choose the sandbox a command works in (`--sandbox`, `--sandbox-token`,
//! `--workspace`), and the sandbox layer's choice and opening as a command's.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{CliError, Invocation};
use cove_sandbox::choice::SandboxRequest;
use cove_sandbox::{Sandbox, SandboxSpec};

/// The flags that choose a sandbox.
#[derive(Debug, Clone, Default, Args)]
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

pub(super) use cove_sandbox::coved_log;

impl SandboxArgs {
    /// The request these flags make.
    pub(super) fn request(&self) -> SandboxRequest {
        SandboxRequest {
            sandbox: self.sandbox.clone(),
            token: self.sandbox_token.clone(),
            workspace: self.workspace.clone(),
        }
    }
}

/// The sandbox `args` choose, and its token; a local one gets `default_workspace` unless
/// `--workspace` names one.
pub(super) fn choose(
    inv: &Invocation,
    args: &SandboxArgs,
    default_workspace: impl FnOnce() -> PathBuf,
) -> Result<(SandboxSpec, Option<String>), CliError> {
    Ok(inv.sandboxes().choose(&args.request(), default_workspace)?)
}

/// The token for `spec`, a thread's sandbox (see [`Sandboxes::token_for`](cove_sandbox::choice::Sandboxes::token_for)).
pub(super) fn token_for(
    inv: &Invocation,
    args: &SandboxArgs,
    spec: &SandboxSpec,
) -> Option<String> {
    inv.sandboxes().token_for(&args.request(), spec)
}

/// Refuses a pool for a command on one sandbox: each choice of `pool:NAME` takes a new
/// sandbox, which such a command would leave behind.
pub(super) fn refuse_pool(inv: &Invocation, args: &SandboxArgs) -> Result<(), CliError> {
    let choice = args.sandbox.clone().or_else(|| inv.file.sandbox.clone());
    match choice.as_deref().and_then(|c| c.strip_prefix("pool:")) {
        Some(pool) => Err(CliError::Usage(format!(
            "--sandbox pool:{pool} would take a new sandbox from the pool for this command alone: name the sandbox (`cove sandbox ls`), or take one with `cove sandbox create NAME --pool {pool}`"
        ))),
        None => Ok(()),
    }
}

/// The sandbox of a command that needs no model (`exec`, `ls`, `cat`, …): a local one works
/// in the current folder.
pub(super) async fn open_for_command(
    inv: &Invocation,
    args: &SandboxArgs,
) -> Result<Sandbox, CliError> {
    refuse_pool(inv, args)?;
    let (spec, token) = choose(inv, args, || PathBuf::from("."))?;
    open(inv, spec, token, Some(&coved_log())).await
}

/// Opens the sandbox a thread's label names (with its token; `args` may give one).
pub(super) async fn open_thread(
    inv: &Invocation,
    label: &str,
    args: &SandboxArgs,
) -> Result<Sandbox, CliError> {
    let spec = SandboxSpec::from_label(label);
    let token = token_for(inv, args, &spec);
    open(inv, spec, token, Some(&coved_log())).await
}

/// Opens `spec`'s sandbox; a Docker one is started first when it is not running.
pub(super) async fn open(
    inv: &Invocation,
    spec: SandboxSpec,
    token: Option<String>,
    log: Option<&Path>,
) -> Result<Sandbox, CliError> {
    Ok(inv.sandboxes().open(spec, token, log).await?)
}
