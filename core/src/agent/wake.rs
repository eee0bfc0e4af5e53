//! Waiting for the sandbox's watches to fire (`wait_for_events`).
//!
//! The run long-polls coved's `/v1/events`, which answers the moment a watch fires, so
//! nothing ticks while nothing happens. Every poll starts from the daemon's first kept
//! event: which of them the model has already had is the store's to say (a watch is
//! delivered once, in the transaction that stores the wait's result), so a controller that
//! was killed mid-wait and resumed gets what fired meanwhile, and nothing twice.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use cove_protocol::client::CovedClient;
use cove_protocol::watches::{Happened, SandboxEvent};

use crate::store::{EventWait, Store, StoreError, ThreadWatch, now_ms};

/// After the first event, how long the run lingers for others: watches that fire together
/// (a build's last line and its exit) wake it together.
const TOGETHER: Duration = Duration::from_millis(25);
/// The longest single long poll.
const POLL_SECS: u64 = 30;
/// How long the sandbox may stay unreachable before the wait gives up.
const UNREACHABLE_LIMIT: Duration = Duration::from_secs(120);

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Woken {
    /// What the model is told.
    pub text: String,
    /// The watches whose events it carries, with each event as JSON.
    pub delivered: Vec<(String, String)>,
    /// Watches the sandbox no longer knows (it restarted): dropped.
    pub lost: Vec<String>,
    pub timed_out: bool,
}

/// The pending watches `wait` waits for.
fn awaited(store: &Store, wait: &EventWait) -> Result<Vec<ThreadWatch>, StoreError> {
    let mut pending = store.pending_watches(&wait.thread_id)?;
    if !wait.watches.is_empty() {
        pending.retain(|w| wait.watches.contains(&w.id));
    }
    Ok(pending)
}

/// Waits until a watch `wait` waits for fires, its deadline passes, or the sandbox is lost.
pub(crate) async fn wait(
    sandbox: &CovedClient,
    store: &Store,
    wait: &EventWait,
) -> Result<Woken, StoreError> {
    let mut lost = lost_watches(sandbox, store, wait).await?;
    let mut unreachable_since: Option<Instant> = None;
    let mut boot: Option<String> = None;
    loop {
        let pending = awaited(store, wait)?;
        let ids: HashSet<&str> = pending
            .iter()
            .map(|w| w.id.as_str())
            .filter(|id| !lost.contains(&id.to_string()))
            .collect();
        if ids.is_empty() {
            return Ok(ended(&pending, &lost, "No watch is left to wait for."));
        }
        let left_ms = (wait.deadline - now_ms()).max(0);
        let wait_secs = (left_ms as u64).div_ceil(1000).min(POLL_SECS);
        let list = match sandbox.events(0, wait_secs).await {
            Ok(list) => list,
            Err(e) => {
                let since = *unreachable_since.get_or_insert_with(Instant::now);
                if since.elapsed() > UNREACHABLE_LIMIT {
                    return Ok(ended(
                        &pending,
                        &lost,
                        &format!("The sandbox stopped answering while you waited: {e}."),
                    ));
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        unreachable_since = None;
        if boot.as_ref().is_some_and(|b| *b != list.boot) {
            // The daemon restarted: what it knew is gone.
            lost = lost_watches(sandbox, store, wait).await?;
        }
        boot = Some(list.boot.clone());
        let mut ours: Vec<SandboxEvent> = list
            .events
            .into_iter()
            .filter(|e| ids.contains(e.watch.as_str()))
            .collect();
        if !ours.is_empty() {
            tokio::time::sleep(TOGETHER).await;
            if let Ok(more) = sandbox.events(list.last, 0).await {
                ours.extend(
                    more.events
                        .into_iter()
                        .filter(|e| ids.contains(e.watch.as_str())),
                );
            }
            return Ok(fired(&pending, ours, lost));
        }
        if left_ms == 0 || wait.deadline <= now_ms() {
            let secs = ((wait.deadline - wait.created_at).max(0) / 1000).max(1);
            let mut woken = ended(&pending, &lost, &format!("Nothing fired within {secs} s."));
            woken.timed_out = true;
            return Ok(woken);
        }
    }
}

/// The awaited watches the sandbox neither waits on nor has fired: it restarted since.
async fn lost_watches(
    sandbox: &CovedClient,
    store: &Store,
    wait: &EventWait,
) -> Result<Vec<String>, StoreError> {
    // The list first: one that fires between the two looks is then among the events.
    let (Ok(live), Ok(events)) = (sandbox.watches().await, sandbox.events(0, 0).await) else {
        // Unreachable now: the wait itself finds out whether for long.
        return Ok(Vec::new());
    };
    let known: HashSet<&str> = live
        .watches
        .iter()
        .map(|w| w.id.as_str())
        .chain(events.events.iter().map(|e| e.watch.as_str()))
        .collect();
    Ok(awaited(store, wait)?
        .into_iter()
        .filter(|w| !known.contains(w.id.as_str()))
        .map(|w| w.id)
        .collect())
}

fn ended(pending: &[ThreadWatch], lost: &[String], opening: &str) -> Woken {
    let mut text = opening.to_string();
    text.push_str(&lost_text(pending, lost));
    text.push_str(&still_pending(pending, &[], lost));
    Woken {
        text,
        delivered: Vec::new(),
        lost: lost.to_vec(),
        timed_out: false,
    }
}

fn fired(pending: &[ThreadWatch], events: Vec<SandboxEvent>, lost: Vec<String>) -> Woken {
    let mut lines = Vec::new();
    let mut delivered = Vec::new();
    let mut seen = HashSet::new();
    for event in events {
        if !seen.insert(event.watch.clone()) {
            continue;
        }
        let title = pending
            .iter()
            .find(|w| w.id == event.watch)
            .map_or(event.watch.as_str(), ThreadWatch::title);
        lines.push(format!(
            "Watch {} ({title}): {}",
            event.watch,
            happened_text(&event.happened)
        ));
        delivered.push((
            event.watch.clone(),
            serde_json::to_string(&event).unwrap_or_default(),
        ));
    }
    let done: Vec<&str> = delivered.iter().map(|(w, _)| w.as_str()).collect();
    let mut text = lines.join("\n");
    text.push_str(&lost_text(pending, &lost));
    text.push_str(&still_pending(pending, &done, &lost));
    Woken {
        text,
        delivered,
        lost,
        timed_out: false,
    }
}

fn lost_text(pending: &[ThreadWatch], lost: &[String]) -> String {
    let names: Vec<String> = pending
        .iter()
        .filter(|w| lost.contains(&w.id))
        .map(|w| format!("{} ({})", w.id, w.title()))
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(
            "\nThe sandbox restarted and no longer has: {}; set them again if still needed.",
            names.join(", ")
        )
    }
}

fn still_pending(pending: &[ThreadWatch], done: &[&str], lost: &[String]) -> String {
    let left: Vec<String> = pending
        .iter()
        .filter(|w| !done.contains(&w.id.as_str()) && !lost.contains(&w.id))
        .map(|w| format!("{} ({})", w.id, w.title()))
        .collect();
    if left.is_empty() {
        String::new()
    } else {
        format!("\nStill pending: {}.", left.join(", "))
    }
}

/// What happened, as the model reads it.
pub(crate) fn happened_text(happened: &Happened) -> String {
    match happened {
        Happened::Exited {
            session,
            command,
            command_text,
            exit_code,
            tail,
        } => {
            let mut text = format!(
                "command {command} of session {session} (`{}`) exited with code {exit_code}",
                one_line(command_text)
            );
            if !tail.is_empty() {
                text.push_str(&format!("; its last lines:\n{tail}"));
            }
            text
        }
        Happened::Matched {
            session,
            command,
            lines,
        } => {
            let shown: Vec<String> = lines
                .iter()
                .map(|l| format!("line {}: {}", l.line, l.text))
                .collect();
            format!(
                "command {command} of session {session} printed:\n{}",
                shown.join("\n")
            )
        }
        Happened::EndedWithoutMatch {
            session,
            command,
            exit_code,
        } => format!(
            "command {command} of session {session} exited with code {exit_code} without printing a matching line"
        ),
        Happened::Listening { port } => format!("port {port} is listening"),
        Happened::Changed { paths, more } => {
            let mut text = format!("changed: {}", paths.join(", "));
            if *more > 0 {
                text.push_str(&format!(" and {more} more"));
            }
            text
        }
        Happened::TimerDone { seconds } => format!("{seconds} s have passed"),
        Happened::Expired => "expired without firing".to_string(),
        Happened::Failed { reason } => format!("could not go on: {reason}"),
    }
}

fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let mut line: String = first.chars().take(120).collect();
    if line.len() < text.len() {
        line.push('…');
    }
    line
}

/// The note each model call carries while watches are pending, so the model knows what it
/// set and what `wait_for_events` would wait for.
pub(crate) fn pending_note(pending: &[ThreadWatch]) -> Option<String> {
    if pending.is_empty() {
        return None;
    }
    let now = now_ms();
    let lines: Vec<String> = pending
        .iter()
        .map(|w| {
            let label = w
                .label
                .as_deref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default();
            format!(
                "- {}: {}{label}, set {} ago",
                w.id,
                w.description,
                crate::format::duration_words((now - w.created_at).max(0) as u64 / 1000)
            )
        })
        .collect();
    Some(format!(
        "Watches pending (wait_for_events wakes you when one fires; unwatch drops one):\n{}",
        lines.join("\n")
    ))
}
