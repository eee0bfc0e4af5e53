//! Cove's run on a task, as a child `cove run` against the task's coved (the same run the
//! Harbor agent makes): its events kept, its questions answered "decide for yourself", and
//! interrupted at the task's limit.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use cove_protocol::events::{EventKind, RunEvent};
use rustix::process::{Pid, Signal, kill_process};
use tokio::process::Command;

use super::EvalError;
use crate::error::exit;

/// What a question gets in an unattended run (as in the Harbor agent).
const NO_ONE_TO_ASK: &str = "No one can answer: this is an unattended evaluation. Decide for yourself, state the assumption you make, and finish the task.";
/// How many questions (or plans) are answered before the run is left paused.
const ANSWERS: usize = 3;
/// How long an interrupted cove may take to record its run's end.
const GRACE: Duration = Duration::from_secs(15);

/// How to run the agent.
pub(super) struct AgentSettings {
    pub(super) cove: PathBuf,
    pub(super) model: Option<String>,
    pub(super) max_iterations: Option<u32>,
    pub(super) max_cost: Option<f64>,
}

/// How the agent's work ended.
#[derive(Debug, Default)]
pub(super) struct AgentEnd {
    /// cove's last exit code; none when it was interrupted at the limit.
    pub(super) code: Option<i32>,
    pub(super) timed_out: bool,
    /// Why the run failed, in cove's words.
    pub(super) error: Option<String>,
    pub(super) usage: Usage,
}

/// Tokens and cost of every run of the task's thread.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub(super) struct Usage {
    pub(super) input_tokens: u64,
    pub(super) cached_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) cost_usd: Option<f64>,
}

/// Runs cove on `instruction` against the coved at `url` until it ends or `limit` passes;
/// its events go to `out/events.jsonl`, its stderr to `out/cove.log`, its thread to
/// `out/cove.db`.
pub(super) async fn run(
    settings: &AgentSettings,
    instruction: &str,
    url: &str,
    token: &str,
    out: &Path,
    limit: Duration,
) -> Result<AgentEnd, EvalError> {
    let deadline = tokio::time::Instant::now() + limit;
    let events_path = out.join("events.jsonl");
    let mut end = AgentEnd::default();
    let mut code = cove(settings, &["run", instruction], url, token, out, deadline).await?;
    for _ in 0..ANSWERS {
        let thread = thread_of(&read_events(&events_path));
        let next: Vec<&str> = match (code, thread.as_deref()) {
            (Some(c), Some(t)) if c == i32::from(exit::PAUSED) => vec!["reply", t, NO_ONE_TO_ASK],
            (Some(c), Some(t)) if c == i32::from(exit::AWAITING_APPROVAL) => vec!["approve", t],
            _ => break,
        };
        code = cove(settings, &next, url, token, out, deadline).await?;
    }
    let events = read_events(&events_path);
    end.code = code;
    end.timed_out = code.is_none();
    end.usage = usage(&events);
    if let Some(c) = code
        && c != 0
        && c != i32::from(exit::STOPPED)
    {
        end.error = Some(
            last_error(&events, &out.join("cove.log"))
                .unwrap_or_else(|| format!("cove exited with {c}")),
        );
    }
    Ok(end)
}

/// One cove command to its end, or interrupted at `deadline` (then `None`).
async fn cove(
    settings: &AgentSettings,
    command: &[&str],
    url: &str,
    token: &str,
    out: &Path,
    deadline: tokio::time::Instant,
) -> Result<Option<i32>, EvalError> {
    let (verb, rest) = command.split_first().unwrap_or((&"run", &[]));
    let mut args: Vec<String> = [
        "--json",
        verb,
        "--no-prompt",
        "--permissions",
        "yolo",
        "--sandbox",
        url,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if *verb == "run"
        && let Some(model) = &settings.model
    {
        args.extend(["--model".into(), model.clone()]);
    }
    if let Some(n) = settings.max_iterations {
        args.extend(["--max-iterations".into(), n.to_string()]);
    }
    if let Some(usd) = settings.max_cost {
        args.extend(["--max-cost".into(), usd.to_string()]);
    }
    // `--`: an instruction may start with a dash.
    args.push("--".into());
    args.extend(rest.iter().map(|s| s.to_string()));
    let open = |name: &str| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out.join(name))
            .map_err(|e| EvalError::Setup(format!("{}: {e}", out.join(name).display())))
    };
    let mut child = Command::new(&settings.cove)
        .args(&args)
        .env("COVE_SANDBOX_TOKEN", token)
        .env("COVE_DB", out.join("cove.db"))
        .stdin(Stdio::null())
        .stdout(open("events.jsonl")?)
        .stderr(open("cove.log")?)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| EvalError::Setup(format!("cannot start {}: {e}", settings.cove.display())))?;
    tokio::select! {
        status = child.wait() => Ok(status.ok().and_then(|s| s.code())),
        _ = tokio::time::sleep_until(deadline) => {
            // Interrupted, cove records the run's end; killed if it does not.
            if let Some(pid) = child.id().and_then(|id| Pid::from_raw(id as i32)) {
                let _ = kill_process(pid, Signal::INT);
            }
            if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
            Ok(None)
        }
    }
}

/// The run events of `path` (as `cove run --json` prints them); a line cut short, or
/// another result, is skipped.
fn read_events(path: &Path) -> Vec<RunEvent> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<RunEvent>(l).ok())
        .collect()
}

fn thread_of(events: &[RunEvent]) -> Option<String> {
    events.first().map(|e| e.thread_id.clone())
}

fn usage(events: &[RunEvent]) -> Usage {
    let mut sum = Usage::default();
    for event in events {
        if let EventKind::ThreadRunEnd { usage, cost, .. } = &event.kind {
            sum.input_tokens += usage.input_tokens;
            sum.cached_tokens += usage.cached_tokens;
            sum.output_tokens += usage.output_tokens;
            if let Some(cost) = cost {
                sum.cost_usd = Some(sum.cost_usd.unwrap_or(0.0) + cost);
            }
        }
    }
    sum
}

/// cove's last fatal error event, else its last line on stderr.
fn last_error(events: &[RunEvent], log: &Path) -> Option<String> {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::Error {
                message,
                fatal: true,
            } => Some(message.clone()),
            _ => None,
        })
        .or_else(|| {
            std::fs::read_to_string(log)
                .ok()?
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_owned)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_sums_every_run_and_the_error_is_the_fatal_one() {
        let events: Vec<RunEvent> = [
            json!({"type": "thread_run_end", "status": "failed", "usage": {"calls": 1, "input_tokens": 10, "cached_tokens": 4, "cache_write_tokens": 0, "output_tokens": 2}, "cost": 0.5}),
            json!({"type": "error", "message": "retrying", "fatal": false}),
            json!({"type": "error", "message": "cannot reach openai", "fatal": true}),
            json!({"type": "thread_run_end", "status": "completed", "usage": {"calls": 1, "input_tokens": 5, "cached_tokens": 0, "cache_write_tokens": 0, "output_tokens": 1}}),
        ]
        .into_iter()
        .enumerate()
        .map(|(seq, mut e)| {
            e["seq"] = json!(seq);
            e["thread_id"] = json!("t1");
            e["run_id"] = json!("r1");
            e["timestamp_ms"] = json!(1);
            serde_json::from_value(e).unwrap()
        })
        .collect();
        let u = usage(&events);
        assert_eq!(
            (u.input_tokens, u.cached_tokens, u.output_tokens),
            (15, 4, 3)
        );
        assert_eq!(u.cost_usd, Some(0.5));
        assert_eq!(
            last_error(&events, Path::new("/nonexistent")).as_deref(),
            Some("cannot reach openai")
        );
    }
}
