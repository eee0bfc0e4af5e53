//! Shell tools: commands in named, persistent sessions.

use std::time::Duration;

use cove_protocol::shell::{ExecRequest, InputRequest};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::{SandboxEnv, ToolDef, ToolResult, describe_client_error, tool, workspace_path};

/// The session of a shell call that names none.
pub const DEFAULT_SESSION: &str = "default";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ExecuteCommand {
    /// The shell command (bash). Chain steps with && and pipe freely.
    command: String,
    /// Session to run it in; sessions keep their directory, variables and functions. Use
    /// separate sessions for things that run side by side (a server and a test, say).
    session_name: Option<String>,
    /// Wait for the command to finish (true, the default) or return at once (false, for
    /// servers and other long-running processes).
    blocking: Option<bool>,
    /// Start it and return at once (the same as blocking=false), for builds, test suites
    /// and servers.
    background: Option<bool>,
    /// Seconds to wait when blocking (default 60, at most 3600). A command still running then
    /// keeps running.
    timeout: Option<u64>,
    /// Directory to run in, relative to the workspace; it stays the session's directory.
    folder: Option<String>,
}

async fn execute_command(env: &SandboxEnv, a: ExecuteCommand) -> ToolResult {
    let session = a
        .session_name
        .unwrap_or_else(|| DEFAULT_SESSION.to_string());
    let mut request = ExecRequest::new(a.command).in_session(session.clone());
    request.blocking = a.blocking.unwrap_or(true) && !a.background.unwrap_or(false);
    request.timeout_secs = a.timeout.unwrap_or(60).min(3600);
    request.cwd = a.folder.map(|f| workspace_path(&f));
    match env.sandbox.exec(&request).await {
        Ok(out) => {
            if let Ok(mut offsets) = env.read_offsets.lock() {
                offsets.insert(session.clone(), out.output_offset);
            }
            let body = if out.output.is_empty() {
                "(no output)".to_string()
            } else {
                out.output
            };
            if out.completed {
                // A non-zero exit is information for the model, not a failed tool call.
                ToolResult::ok(format!("exit code {}\n{body}", out.exit_code.unwrap_or(-1)))
            } else if out.timed_out {
                ToolResult::ok(format!(
                    "Still running in session {session:?} after {} s; it keeps running. Read more with check_command_output, answer a prompt with send_command_input, or stop it with terminate_command.\nOutput so far:\n{body}",
                    request.timeout_secs
                ))
            } else {
                let number = out
                    .command
                    .map(|n| format!(" as command {n}"))
                    .unwrap_or_default();
                ToolResult::ok(format!(
                    "Started in session {session:?}{number} without waiting. Read its output with check_command_output.\n{body}"
                ))
            }
        }
        Err(e) => ToolResult::from_client(&e),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CheckCommandOutput {
    /// The session to read.
    session_name: String,
    /// Also end the session (and everything running in it) after reading.
    kill_session: Option<bool>,
}

async fn check_command_output(env: &SandboxEnv, a: CheckCommandOutput) -> ToolResult {
    let since = env
        .read_offsets
        .lock()
        .ok()
        .and_then(|o| o.get(&a.session_name).copied())
        .unwrap_or(0);
    let out = match env.sandbox.output(&a.session_name, since).await {
        Ok(out) => out,
        Err(e) => return ToolResult::from_client(&e),
    };
    if let Ok(mut offsets) = env.read_offsets.lock() {
        offsets.insert(a.session_name.clone(), out.offset);
    }
    let status = if out.running {
        "still running".to_string()
    } else {
        match out.exit_code {
            Some(code) => format!("finished with exit code {code}"),
            None => "idle".to_string(),
        }
    };
    let body = if out.output.is_empty() {
        "(no new output)".to_string()
    } else {
        out.output
    };
    let mut text = format!("Session {:?}: {status}.\n{body}", a.session_name);
    if a.kill_session.unwrap_or(false) {
        match env.sandbox.delete_session(&a.session_name).await {
            Ok(done) => text.push_str(&format!(
                "\nSession ended ({} processes stopped).",
                done.processes_killed
            )),
            Err(e) => return ToolResult::from_client(&e),
        }
    }
    ToolResult::ok(text)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendCommandInput {
    /// The session whose running command is waiting for input.
    session_name: String,
    /// What to type.
    text: String,
    /// Press Enter after the text (default true).
    enter: Option<bool>,
}

async fn send_command_input(env: &SandboxEnv, a: SendCommandInput) -> ToolResult {
    let request = InputRequest {
        text: a.text,
        enter: a.enter.unwrap_or(true),
    };
    if let Err(e) = env.sandbox.input(&a.session_name, &request).await {
        return ToolResult::from_client(&e);
    }
    // Give the program a moment to react before reading what it printed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    check_command_output(
        env,
        CheckCommandOutput {
            session_name: a.session_name,
            kill_session: None,
        },
    )
    .await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TerminateCommand {
    /// The session to end, with everything running in it.
    session_name: String,
}

async fn terminate_command(env: &SandboxEnv, a: TerminateCommand) -> ToolResult {
    match env.sandbox.delete_session(&a.session_name).await {
        Ok(done) => {
            if let Ok(mut offsets) = env.read_offsets.lock() {
                offsets.remove(&a.session_name);
            }
            ToolResult::ok(format!(
                "Session {:?} ended; {} processes stopped.",
                a.session_name, done.processes_killed
            ))
        }
        Err(e) => ToolResult::error(describe_client_error(&e)),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListCommands {}

async fn list_commands(env: &SandboxEnv, _a: ListCommands) -> ToolResult {
    match env.sandbox.sessions().await {
        Ok(list) if list.sessions.is_empty() => ToolResult::ok("No shell sessions."),
        Ok(list) => {
            let lines: Vec<String> = list
                .sessions
                .iter()
                .map(|s| {
                    let state = if s.running { "running" } else { "idle" };
                    format!(
                        "{}: {state}; last command: {}",
                        s.name,
                        s.command.as_deref().unwrap_or("-")
                    )
                })
                .collect();
            ToolResult::ok(lines.join("\n"))
        }
        Err(e) => ToolResult::from_client(&e),
    }
}

/// The shell tools.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "execute_command",
            args: ExecuteCommand,
            summary: Some("command"),
            raw: &[],
            description: "Run a shell command in the sandbox (Linux, bash) inside a named session that keeps its working directory, environment and functions between commands. Blocking calls wait for the exit code; use blocking=false for servers and anything that runs on its own.",
            example: json!({"command": "ls -la && python3 --version", "session_name": "default", "blocking": true, "timeout": 60}),
            run: execute_command,
        },
        tool! {
            name: "check_command_output",
            args: CheckCommandOutput,
            summary: Some("session_name"),
            raw: &[],
            description: "Read what a session printed since you last looked, and whether its command is still running.",
            example: json!({"session_name": "server"}),
            run: check_command_output,
        },
        tool! {
            name: "send_command_input",
            args: SendCommandInput,
            summary: Some("text"),
            raw: &["text"],
            description: "Type into the terminal of a session whose command waits for input (a prompt, a REPL), then read what it printed.",
            example: json!({"session_name": "default", "text": "y"}),
            run: send_command_input,
        },
        tool! {
            name: "terminate_command",
            args: TerminateCommand,
            summary: Some("session_name"),
            raw: &[],
            description: "End a session and stop everything running in it.",
            example: json!({"session_name": "server"}),
            run: terminate_command,
        },
        tool! {
            name: "list_commands",
            args: ListCommands,
            summary: None,
            raw: &[],
            description: "List the shell sessions and what each is doing.",
            example: json!({}),
            run: list_commands,
        },
    ]
}
