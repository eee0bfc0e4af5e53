//! Waiting on the sandbox: `watch` sets a one-shot watch in coved (a command's exit or a
//! line of its output, a port, a file, a timer), `unwatch` drops one, and `wait_for_events`
//! ends the model's turn until one fires; the run waits (see `agent::wake`) and gives what
//! happened as the call's result.

use cove_protocol::watches::{CreateWatch, WatchSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{Control, ToolDef, ToolEnv, ToolResult, describe_client_error, tool};
use crate::store::NewWatch;

/// Seconds `wait_for_events` waits when the call names none.
pub const DEFAULT_WAIT_SECS: u64 = 600;

// Variants without doc comments: the tool's description says what each waits for, once.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum On {
    Exit,
    Output,
    Port,
    File,
    After,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Watch {
    on: On,
    /// What it means, in a few words ("tests to finish").
    label: String,
    /// exit, output (default "default").
    session_name: Option<String>,
    /// exit, output: the command's number; default the running one, else the last.
    command: Option<u64>,
    /// output: a regular expression.
    pattern: Option<String>,
    /// port.
    port: Option<u16>,
    /// file: relative to the workspace; a folder covers what is beneath it.
    path: Option<String>,
    /// after.
    seconds: Option<u64>,
}

fn spec_of(a: &Watch) -> Result<WatchSpec, String> {
    let session = || {
        a.session_name
            .clone()
            .unwrap_or_else(|| cove_tools::DEFAULT_SESSION.to_string())
    };
    let need = |what: &str| format!("on={} needs {what}", on_name(&a.on));
    Ok(match a.on {
        On::Exit => WatchSpec::Exit {
            session: session(),
            command: a.command,
        },
        On::Output => WatchSpec::Output {
            session: session(),
            pattern: a.pattern.clone().ok_or_else(|| need("pattern"))?,
            command: a.command,
        },
        On::Port => WatchSpec::Port {
            port: a.port.ok_or_else(|| need("port"))?,
        },
        On::File => WatchSpec::File {
            path: cove_tools::workspace_path(&a.path.clone().ok_or_else(|| need("path"))?),
        },
        On::After => WatchSpec::After {
            seconds: a.seconds.ok_or_else(|| need("seconds"))?,
        },
    })
}

fn on_name(on: &On) -> &'static str {
    match on {
        On::Exit => "exit",
        On::Output => "output",
        On::Port => "port",
        On::File => "file",
        On::After => "after",
    }
}

/// What a watch waits for, in words.
pub fn describe(spec: &WatchSpec) -> String {
    match spec {
        WatchSpec::Exit { session, command } => match command {
            Some(n) => format!("command {n} of session {session} to exit"),
            None => format!("the command in session {session} to exit"),
        },
        WatchSpec::Output {
            session, pattern, ..
        } => format!("a line matching /{pattern}/ in session {session}"),
        WatchSpec::Port { port } => format!("port {port} to listen"),
        WatchSpec::File { path } => format!("{path} to change"),
        WatchSpec::After { seconds } => format!("{seconds} s to pass"),
    }
}

async fn watch(env: &ToolEnv, a: Watch) -> ToolResult {
    let Some(book) = &env.book else {
        return ToolResult::error("watches need a stored thread");
    };
    let spec = match spec_of(&a) {
        Ok(spec) => spec,
        Err(e) => return ToolResult::error(e),
    };
    let request = CreateWatch {
        spec,
        label: Some(a.label.clone()),
        ttl_secs: None,
    };
    let info = match env.sandbox.create_watch(&request).await {
        Ok(info) => info,
        Err(e) => return ToolResult::from_client(&e),
    };
    let description = describe(&info.spec);
    let expires_at = humantime::parse_rfc3339(&info.expires_at)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(i64::MAX, |d| {
            i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
        });
    let recorded = book.store.add_watch(
        &book.thread,
        &NewWatch {
            id: info.id.clone(),
            label: info.label.clone(),
            description: description.clone(),
            expires_at,
        },
    );
    if let Err(e) = recorded {
        // Not waited on if not recorded: drop it rather than leave it firing for no one.
        let _ = env.sandbox.delete_watch(&info.id).await;
        return ToolResult::error(format!("the watch could not be recorded: {e}"));
    }
    ToolResult::ok(format!(
        "Watch {} set: {description} ({}). wait_for_events waits for it; it expires at {}.",
        info.id, a.label, info.expires_at
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Unwatch {
    /// The watch's id.
    id: String,
}

async fn unwatch(env: &ToolEnv, a: Unwatch) -> ToolResult {
    let Some(book) = &env.book else {
        return ToolResult::error("watches need a stored thread");
    };
    match book.store.drop_watch(&book.thread, &a.id) {
        Ok(true) => {}
        Ok(false) => return ToolResult::error(format!("no watch {:?} is pending", a.id)),
        Err(e) => return ToolResult::error(e.to_string()),
    }
    match env.sandbox.delete_watch(&a.id).await {
        // Fired meanwhile: dropped all the same, its event is not delivered.
        Ok(_) | Err(cove_protocol::client::ClientError::Api { status: 404, .. }) => {
            ToolResult::ok(format!("Watch {} dropped.", a.id))
        }
        Err(e) => ToolResult::error(describe_client_error(&e)),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitForEvents {
    /// Seconds at most (default 600).
    timeout: Option<u64>,
    /// Only these watch ids (default: any pending).
    watches: Option<Vec<String>>,
}

async fn wait_for_events(env: &ToolEnv, a: WaitForEvents) -> ToolResult {
    let Some(book) = &env.book else {
        return ToolResult::error("watches need a stored thread");
    };
    let pending = match book.store.pending_watches(&book.thread) {
        Ok(pending) => pending,
        Err(e) => return ToolResult::error(e.to_string()),
    };
    let wanted = a.watches.unwrap_or_default();
    let unknown: Vec<&String> = wanted
        .iter()
        .filter(|w| !pending.iter().any(|p| &p.id == *w))
        .collect();
    if !unknown.is_empty() {
        return ToolResult::error(format!(
            "no pending watch {unknown:?}; pending: {:?}",
            pending.iter().map(|p| &p.id).collect::<Vec<_>>()
        ));
    }
    if pending.is_empty() {
        return ToolResult::error("no watch is pending: set one with watch first");
    }
    let timeout_secs = a.timeout.unwrap_or(DEFAULT_WAIT_SECS).max(1);
    let mut result = ToolResult::ok(format!("Waiting up to {timeout_secs} s."));
    result.control = Some(Control::WaitForEvents {
        call_id: String::new(),
        tool: String::new(),
        timeout_secs,
        watches: wanted,
    });
    result
}

/// The watch tools.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "watch",
            args: Watch,
            summary: Some("label"),
            raw: &[],
            description: "Set a one-shot watch in the sandbox: on=exit (a command ends: exit code, last lines), output (a line of its output matches pattern), port (something listens), file (path changes or appears), after (seconds pass). Start long work with execute_command background=true, watch it, then wait_for_events instead of polling.",
            example: json!({"on": "output", "session_name": "build", "pattern": "BUILD (OK|FAILED)", "label": "the build's verdict"}),
            run: watch,
        },
        tool! {
            name: "unwatch",
            args: Unwatch,
            summary: Some("id"),
            raw: &[],
            description: "Drop a pending watch.",
            example: json!({"id": "w1a2b3c4d5e6"}),
            run: unwatch,
        },
        tool! {
            name: "wait_for_events",
            args: WaitForEvents,
            summary: Some("timeout"),
            raw: &[],
            description: "End your turn until a pending watch fires (or the timeout passes); the result says what happened: exit codes, the matched lines, the port, the changed paths. Several can fire at once.",
            example: json!({"timeout": 600}),
            run: wait_for_events,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_say_what_they_wait_for() {
        let exit = WatchSpec::Exit {
            session: "build".into(),
            command: Some(3),
        };
        assert_eq!(describe(&exit), "command 3 of session build to exit");
        let a: Watch = serde_json::from_value(json!({"on": "port", "label": "x"})).unwrap();
        assert_eq!(spec_of(&a).unwrap_err(), "on=port needs port");
        let a: Watch =
            serde_json::from_value(json!({"on": "file", "label": "x", "path": "/workspace/out"}))
                .unwrap();
        assert_eq!(spec_of(&a).unwrap(), WatchSpec::File { path: "out".into() });
    }
}
