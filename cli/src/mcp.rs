//! `cove mcp ls|doctor`, and the MCP servers of a run: read from the usual files (and
//! `--mcp-config`), started in the background as soon as the command begins.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use super::{CliError, Invocation};
use cove_core::mcp::config::{self as mcp_config, ConfigProblem, Transport};
use cove_core::mcp::{McpHub, ServerState, config_files};

#[derive(Debug, Subcommand)]
pub(super) enum McpCommand {
    /// Start the configured servers and list each with its status and tools.
    Ls {
        /// Also read servers from this file (repeatable).
        #[arg(long = "mcp-config")]
        files: Vec<PathBuf>,
    },
    /// Check the configuration files: each problem with its file, line and column.
    Doctor {
        /// Also read servers from this file (repeatable).
        #[arg(long = "mcp-config")]
        files: Vec<PathBuf>,
    },
}

/// Runs a `cove mcp` command.
pub(super) async fn command(inv: &Invocation, cmd: McpCommand) -> Result<ExitCode, CliError> {
    match cmd {
        McpCommand::Ls { files } => ls(inv, &files).await,
        McpCommand::Doctor { files } => doctor(inv, &files),
    }
}

/// The files read, in order: the usual ones, then `extra`.
fn files(extra: &[PathBuf]) -> Vec<PathBuf> {
    let project = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut files = config_files(&project);
    files.extend(extra.iter().cloned());
    files
}

async fn ls(inv: &Invocation, extra: &[PathBuf]) -> Result<ExitCode, CliError> {
    // Listing starts them: a folder's own servers only once the user trusts it.
    let project = super::trust::project_trusted(inv, false, true);
    let (servers, problems) = cove_core::mcp::configured(extra, project);
    for problem in &problems {
        inv.printer.note(&format!("{problem}"));
    }
    if servers.is_empty() {
        inv.printer.list(
            &Vec::<serde_json::Value>::new(),
            &format!(
                "No MCP servers configured. Cove reads `mcpServers` from: {}",
                files(extra)
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            |_| String::new(),
        );
        return Ok(ExitCode::SUCCESS);
    }
    inv.printer.note(&format!(
        "starting {} server(s) to list their tools…",
        servers.iter().filter(|s| s.enabled).count()
    ));
    let hub = McpHub::start(servers.clone());
    let tools = hub.tools().await;
    let statuses = hub.statuses();
    let mut rows = Vec::new();
    for status in &statuses {
        let config = servers.iter().find(|s| s.name == status.name);
        let transport = match config.map(|c| &c.transport) {
            Some(Transport::Stdio { command, .. }) => format!("stdio: {command}"),
            Some(Transport::Http { url, .. }) => format!("http: {url}"),
            None => String::new(),
        };
        let (state, error) = match &status.state {
            ServerState::Ready { .. } => ("ready", None),
            ServerState::Failed(why) => ("failed", Some(why.clone())),
            ServerState::Disabled => ("disabled", None),
            ServerState::Starting => ("starting", None),
        };
        let server_tools: Vec<serde_json::Value> = tools
            .iter()
            .filter(|t| t.server.name() == status.name)
            .map(|t| json!({"name": t.name, "tool": t.raw, "description": t.description}))
            .collect();
        rows.push(json!({
            "server": status.name,
            "status": state,
            "error": error,
            "transport": transport,
            "source": status.source,
            "tools": server_tools,
        }));
    }
    hub.shutdown().await;
    inv.printer.list(&rows, "", |row| {
        let mut out = format!(
            "{} ({}, {}) — {}",
            row["server"].as_str().unwrap_or_default(),
            row["transport"].as_str().unwrap_or_default(),
            row["source"].as_str().unwrap_or_default(),
            row["status"].as_str().unwrap_or_default(),
        );
        if let Some(error) = row["error"].as_str() {
            out.push_str(&format!(": {error}"));
        }
        for tool in row["tools"].as_array().into_iter().flatten() {
            let description: String = tool["description"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(90)
                .collect();
            out.push_str(&format!(
                "\n  {}  {description}",
                tool["name"].as_str().unwrap_or_default()
            ));
        }
        out
    });
    let failed = statuses
        .iter()
        .any(|s| matches!(s.state, ServerState::Failed(_)));
    Ok(if failed || !problems.is_empty() {
        ExitCode::from(super::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

fn doctor(inv: &Invocation, extra: &[PathBuf]) -> Result<ExitCode, CliError> {
    // Checking starts nothing: every file is read, the folder's own included.
    let (servers, mut problems) = cove_core::mcp::configured(extra, true);
    for file in extra {
        if !file.exists() {
            problems.push(ConfigProblem {
                file: file.clone(),
                line: 1,
                column: 1,
                message: "no such file".into(),
            });
        }
    }
    // A stdio command that is not on PATH fails at every run: say so now.
    for server in servers.iter().filter(|s| s.enabled) {
        if let Transport::Stdio { command, .. } = &server.transport
            && !command_exists(command)
        {
            let text = std::fs::read_to_string(&server.source).unwrap_or_default();
            let (line, column) = mcp_config::position_of_key(&text, &server.name);
            problems.push(ConfigProblem {
                file: server.source.clone(),
                line,
                column,
                message: format!(
                    "server {:?}: command {command:?} is not installed or not on PATH",
                    server.name
                ),
            });
        }
    }
    let rows: Vec<serde_json::Value> = problems
        .iter()
        .map(|p| json!({"file": p.file, "line": p.line, "column": p.column, "message": p.message}))
        .collect();
    let read_from: Vec<String> = files(extra)
        .iter()
        .filter(|f| f.exists())
        .map(|f| f.display().to_string())
        .collect();
    let fine = if read_from.is_empty() {
        "No MCP configuration files found.".to_string()
    } else {
        format!(
            "No problems: {} server(s) in {}.",
            servers.len(),
            read_from.join(", ")
        )
    };
    inv.printer.list(&rows, &fine, |row| {
        format!(
            "{}:{}:{}: {}",
            row["file"].as_str().unwrap_or_default(),
            row["line"],
            row["column"],
            row["message"].as_str().unwrap_or_default()
        )
    });
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::exit::FAILED)
    })
}

/// Whether `command` names an executable: a path, or a name found on PATH.
fn command_exists(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &std::path::Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        return executable(std::path::Path::new(command));
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| executable(&dir.join(command)))
    })
}
