//! `cove serve`: its flags, read and checked here, then the server (see [`crate::serve`]).

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Args;

use super::run::RunFlags;
use super::sandbox_choice::SandboxArgs;
use super::{CliError, Invocation};
use cove_serve::{ServeError, ServeOptions};

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    /// Where to listen (port 0 picks a free one, printed).
    #[arg(long, env = "COVE_SERVE_LISTEN", default_value = "127.0.0.1:7800")]
    listen: SocketAddr,
    /// The API token (default: a new one each start, printed).
    #[arg(long, env = "COVE_SERVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The model of threads whose client names none (`provider/model`; default: cove.toml's
    /// `model`, else the one the environment's server serves or OpenAI's).
    #[arg(long, env = "COVE_MODEL")]
    model: Option<String>,
    /// The sandbox every thread gets (default: a local one per thread).
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// Settings of every run.
    #[command(flatten)]
    run: RunFlags,
}

/// `cove serve`.
pub(super) async fn serve(inv: Invocation, args: ServeArgs) -> Result<ExitCode, CliError> {
    super::trust::never_ask();
    let json = inv.printer.json();
    let options = ServeOptions {
        listen: args.listen,
        token: args.token,
        model: args.model,
        sandbox: args.sandbox.request(),
        settings: args.run.settings(),
        mcp_config: args.run.mcp_config.clone(),
        trust: args.run.trust,
        json,
        store: inv.store,
        file: inv.file,
        local: inv.local,
        in_cluster: inv.in_cluster,
    };
    cove_serve::serve(options).await.map_err(|e| match e {
        ServeError::Invalid(m) => CliError::Usage(m),
        ServeError::Setup(m) => CliError::Setup(m),
        ServeError::Failed(m) => CliError::Failed(m),
        ServeError::Session(e) => e.into(),
    })?;
    Ok(ExitCode::SUCCESS)
}
