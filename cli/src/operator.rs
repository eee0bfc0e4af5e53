//! The operator's commands: the sandbox's shell, files and browser by hand, no model
//! involved (`cove exec`, `ls`, `cat`, `browse`, `screenshot`, `recording`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use cove_protocol::ErrorCode;
use cove_protocol::browser::{NavigateTo, StateQuery};
use cove_protocol::client::ClientError;
use cove_protocol::files::{ListQuery, ReadRequest};
use cove_protocol::shell::ExecRequest;
use serde_json::json;

use super::sandbox_choice::{SandboxArgs, open_for_command};
use super::{CliError, Invocation};

/// How long `cove exec` waits for its command.
const EXEC_LIMIT_SECS: u64 = 600;

#[derive(Debug, Args)]
pub(super) struct ExecArgs {
    command: String,
    #[arg(long, default_value = "default")]
    session: String,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Debug, Args)]
pub(super) struct LsArgs {
    #[arg(default_value = ".")]
    path: String,
    #[arg(long, default_value_t = 1)]
    depth: u32,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Debug, Args)]
pub(super) struct CatArgs {
    path: String,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Debug, Args)]
pub(super) struct BrowseArgs {
    url: String,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Debug, Args)]
pub(super) struct ScreenshotArgs {
    #[arg(short, long, default_value = "screenshot.jpg")]
    output: PathBuf,
    /// Open this URL first.
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Debug, Args)]
pub(super) struct RecordingArgs {
    /// The shell session (the agent's commands run in `default` unless it names another).
    #[arg(long, default_value = "default")]
    session: String,
    /// Where to write it (`-`: standard output); by default SESSION.cast in this folder.
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

/// `cove exec CMD`: exits with the command's exit code.
pub(super) async fn exec(inv: &Invocation, args: ExecArgs) -> Result<ExitCode, CliError> {
    let sandbox = open_for_command(inv, &args.sandbox).await?;
    let result = sandbox
        .client
        .exec(
            &ExecRequest::new(args.command)
                .in_session(args.session)
                .with_timeout(EXEC_LIMIT_SECS),
        )
        .await;
    sandbox.close().await;
    let out = result?;
    inv.printer.verbatim(&out, |out| out.output.clone());
    if !out.completed {
        inv.printer
            .note(&format!("still running after {EXEC_LIMIT_SECS} s"));
    }
    Ok(ExitCode::from(
        u8::try_from(out.exit_code.unwrap_or(1).clamp(0, 255)).unwrap_or(1),
    ))
}

/// `cove ls [PATH]`
pub(super) async fn ls(inv: &Invocation, args: LsArgs) -> Result<ExitCode, CliError> {
    let sandbox = open_for_command(inv, &args.sandbox).await?;
    let result = sandbox
        .client
        .list(&ListQuery {
            path: args.path,
            depth: args.depth,
        })
        .await;
    sandbox.close().await;
    inv.printer.verbatim(&result?, |list| {
        list.entries
            .iter()
            .map(|e| format!("{}{}\n", e.path, if e.is_dir { "/" } else { "" }))
            .collect()
    });
    Ok(ExitCode::SUCCESS)
}

/// `cove cat FILE`
pub(super) async fn cat(inv: &Invocation, args: CatArgs) -> Result<ExitCode, CliError> {
    let sandbox = open_for_command(inv, &args.sandbox).await?;
    let result = sandbox.client.read(&ReadRequest::whole(args.path)).await;
    sandbox.close().await;
    inv.printer.verbatim(&result?, |file| file.content.clone());
    Ok(ExitCode::SUCCESS)
}

/// `cove browse URL`: the page as the agent would see it.
pub(super) async fn browse(inv: &Invocation, args: BrowseArgs) -> Result<ExitCode, CliError> {
    let sandbox = open_for_command(inv, &args.sandbox).await?;
    let result = sandbox
        .client
        .browser(&NavigateTo { url: args.url }, StateQuery::lean())
        .await;
    sandbox.close().await;
    inv.printer.result(&result?, |state| {
        format!("{} — {}\n{}", state.title, state.url, state.elements)
    });
    Ok(ExitCode::SUCCESS)
}

/// `cove screenshot [-o FILE]`: a JPEG of the browser.
pub(super) async fn screenshot(
    inv: &Invocation,
    args: ScreenshotArgs,
) -> Result<ExitCode, CliError> {
    let sandbox = open_for_command(inv, &args.sandbox).await?;
    let result = async {
        if let Some(url) = args.url {
            sandbox
                .client
                .browser(&NavigateTo { url }, StateQuery::lean())
                .await?;
        }
        sandbox.client.screenshot().await
    }
    .await;
    sandbox.close().await;
    let jpeg = result?;
    let output = &args.output;
    std::fs::write(output, &jpeg)
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", output.display())))?;
    inv.printer
        .result(&json!({"path": output, "bytes": jpeg.len()}), |_| {
            format!("{} ({} bytes)", output.display(), jpeg.len())
        });
    Ok(ExitCode::SUCCESS)
}

/// `cove recording [--session S] [-o FILE]`: the session's terminal as asciicast v2, for
/// `asciinema play` or any asciicast player.
pub(super) async fn recording(inv: &Invocation, args: RecordingArgs) -> Result<ExitCode, CliError> {
    let sandbox = open_for_command(inv, &args.sandbox).await?;
    let result = sandbox.client.recording(&args.session).await;
    let sessions = match &result {
        Err(ClientError::Api {
            code: ErrorCode::NotFound,
            ..
        }) => sandbox.client.sessions().await.ok(),
        _ => None,
    };
    sandbox.close().await;
    if let Some(list) = sessions {
        let names: Vec<&str> = list.sessions.iter().map(|s| s.name.as_str()).collect();
        return Err(CliError::NotFound(format!(
            "no session {} in this sandbox ({}); a local sandbox's sessions end with the command that started it, so record from a sandbox that stays (`cove sandbox up`, Docker, remote)",
            args.session,
            if names.is_empty() {
                "it has none".to_string()
            } else {
                format!("it has {}", names.join(", "))
            }
        )));
    }
    let cast = result?;
    let output = args
        .output
        .unwrap_or_else(|| PathBuf::from(format!("{}.cast", args.session)));
    if output.as_os_str() == "-" {
        inv.printer.verbatim(&cast, |cast| cast.clone());
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::write(&output, &cast)
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", output.display())))?;
    let events = cast.lines().count().saturating_sub(1);
    inv.printer.result(
        &json!({"path": output, "bytes": cast.len(), "events": events}),
        |_| {
            format!(
                "{} ({events} events; play it with `asciinema play {}`)",
                output.display(),
                output.display()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}
