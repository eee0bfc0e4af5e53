//! Watches and the events they fire: what the agent waits for in the sandbox.
//!
//! A watch is one-shot: a task waits for its condition (woken by the session's own
//! changes, inotify, the kernel's socket table looked up when sessions print, or a timer:
//! nothing ticks while nothing can happen) and fires one event, or `expired` when its
//! lifetime ends first. Events are kept in order with increasing ids, so a caller long-polls
//! `GET /v1/events?after=` and takes up where it left off, across its own restarts.

mod command;
mod files;
pub mod http;
mod port;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use cove_protocol::watches::{
    CreateWatch, DEFAULT_TTL_SECS, EventList, Happened, MAX_EVENTS_WAIT_SECS, MAX_TTL_SECS,
    SandboxEvent, WatchInfo, WatchList, WatchSpec,
};
use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::random::random_hex;
use crate::shell::{ShellError, ShellManager};
use crate::timestamp::rfc3339;

/// Events kept for callers that come back late.
const KEPT_EVENTS: usize = 4096;
/// Watches waiting at once.
const MAX_WATCHES: usize = 64;
/// File watches waiting at once: each holds an inotify instance, of which a user has 128.
const MAX_FILE_WATCHES: usize = 16;
/// Characters of a label kept.
const MAX_LABEL: usize = 200;

/// What went wrong with a watch request, by what the caller does next.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Fix the request.
    #[error("{0}")]
    Invalid(String),
    /// The session, command or watch named does not exist: check the name.
    #[error("{0}")]
    NotFound(String),
    /// Delete a watch (or let one fire) first.
    #[error("{0}")]
    TooMany(String),
    /// The path is outside the workspace.
    #[error("{0} is outside the workspace; watch a path inside it")]
    Outside(String),
}

impl From<ShellError> for WatchError {
    fn from(e: ShellError) -> Self {
        match e {
            ShellError::NotFound(_) => WatchError::NotFound(e.to_string()),
            other => WatchError::Invalid(other.to_string()),
        }
    }
}

struct Pending {
    info: WatchInfo,
    task: AbortHandle,
    file: bool,
}

#[derive(Default)]
struct Inner {
    watches: HashMap<String, Pending>,
    /// Ids in the order they were made, for listings.
    order: Vec<String>,
    events: VecDeque<SandboxEvent>,
    last: u64,
}

/// Every watch of the daemon and the events they fired.
pub struct Watches {
    boot: String,
    workspace: PathBuf,
    inner: Arc<Mutex<Inner>>,
    /// The newest event's id: long polls wait on it.
    fired: Arc<watch::Sender<u64>>,
}

impl Drop for Watches {
    fn drop(&mut self) {
        for pending in self.lock().watches.values() {
            pending.task.abort();
        }
    }
}

impl Watches {
    /// No watches yet, over the workspace at `workspace`.
    pub fn new(workspace: PathBuf) -> Self {
        Watches {
            boot: random_hex(8),
            workspace,
            inner: Arc::default(),
            fired: Arc::new(watch::channel(0).0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a watch and starts waiting for it.
    pub fn create(
        &self,
        request: CreateWatch,
        shell: &ShellManager,
    ) -> Result<WatchInfo, WatchError> {
        let ttl = request.ttl_secs.unwrap_or(DEFAULT_TTL_SECS);
        if ttl == 0 || ttl > MAX_TTL_SECS {
            return Err(WatchError::Invalid(format!(
                "ttl_secs is 1 to {MAX_TTL_SECS}"
            )));
        }
        // A timer lives at least until it rings.
        let ttl = match request.spec {
            WatchSpec::After { seconds } => ttl.max(seconds.saturating_add(1)),
            _ => ttl,
        };
        let is_file = matches!(request.spec, WatchSpec::File { .. });
        {
            let inner = self.lock();
            if inner.watches.len() >= MAX_WATCHES {
                return Err(WatchError::TooMany(format!(
                    "{MAX_WATCHES} watches are waiting already; delete one first"
                )));
            }
            if is_file && inner.watches.values().filter(|p| p.file).count() >= MAX_FILE_WATCHES {
                return Err(WatchError::TooMany(format!(
                    "{MAX_FILE_WATCHES} file watches are waiting already; delete one first"
                )));
            }
        }
        let condition = self.condition(&request.spec, shell)?;
        let now = SystemTime::now();
        let info = WatchInfo {
            id: format!("w{}", random_hex(6)),
            spec: request.spec,
            label: request
                .label
                .map(|l| l.chars().take(MAX_LABEL).collect::<String>())
                .filter(|l| !l.trim().is_empty()),
            created_at: rfc3339(now),
            expires_at: rfc3339(now + Duration::from_secs(ttl)),
            fired: None,
        };
        let fire = Firing {
            id: info.id.clone(),
            label: info.label.clone(),
            inner: self.inner.clone(),
            fired: self.fired.clone(),
        };
        // Registered before its task can fire, so the firing finds it.
        let mut inner = self.lock();
        let task = tokio::spawn(async move {
            let happened = tokio::select! {
                happened = condition => happened,
                () = tokio::time::sleep(Duration::from_secs(ttl)) => Happened::Expired,
            };
            fire.fire(happened);
        });
        inner.order.push(info.id.clone());
        inner.watches.insert(
            info.id.clone(),
            Pending {
                info: info.clone(),
                task: task.abort_handle(),
                file: is_file,
            },
        );
        Ok(info)
    }

    /// The future that resolves with what happened, checked and resolved now so a bad
    /// request is refused before anything waits.
    fn condition(
        &self,
        spec: &WatchSpec,
        shell: &ShellManager,
    ) -> Result<BoxFuture<'static, Happened>, WatchError> {
        Ok(match spec {
            WatchSpec::Exit { session, command } => {
                let target = shell.session(session)?;
                let seq = target.target(*command)?;
                Box::pin(command::exited(target, seq))
            }
            WatchSpec::Output {
                session,
                pattern,
                command,
            } => {
                let regex = regex::RegexBuilder::new(pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| WatchError::Invalid(format!("pattern {pattern:?}: {e}")))?;
                let target = shell.session(session)?;
                let seq = target.target(*command)?;
                Box::pin(command::matched(target, seq, regex))
            }
            WatchSpec::Port { port } => {
                if *port == 0 {
                    return Err(WatchError::Invalid("port is 1 to 65535".into()));
                }
                Box::pin(port::listening(*port, shell.activity()))
            }
            WatchSpec::File { path } => {
                let target = files::Target::resolve(&self.workspace, path)?;
                Box::pin(files::changed(target))
            }
            WatchSpec::After { seconds } => {
                let seconds = *seconds;
                if seconds == 0 || seconds > MAX_TTL_SECS {
                    return Err(WatchError::Invalid(format!(
                        "seconds is 1 to {MAX_TTL_SECS}"
                    )));
                }
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_secs(seconds)).await;
                    Happened::TimerDone { seconds }
                })
            }
        })
    }

    /// The watches not fired yet, oldest first.
    pub fn list(&self) -> WatchList {
        let inner = self.lock();
        WatchList {
            watches: inner
                .order
                .iter()
                .filter_map(|id| inner.watches.get(id))
                .map(|p| p.info.clone())
                .collect(),
        }
    }

    /// Drops a watch that has not fired.
    pub fn delete(&self, id: &str) -> Result<WatchInfo, WatchError> {
        let mut inner = self.lock();
        let pending = inner.watches.remove(id).ok_or_else(|| {
            WatchError::NotFound(format!(
                "no watch {id:?} is waiting (it fired, expired or never was); GET /v1/watches lists them"
            ))
        })?;
        inner.order.retain(|w| w != id);
        pending.task.abort();
        Ok(pending.info)
    }

    /// The events after `after`, waiting up to `wait_secs` for the first.
    pub async fn events(&self, after: u64, wait_secs: u64) -> EventList {
        let wait = Duration::from_secs(wait_secs.min(MAX_EVENTS_WAIT_SECS));
        let mut fired = self.fired.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let list = self.events_after(after);
            if !list.events.is_empty() || list.missed > 0 {
                return list;
            }
            // `changed` only sees what came after the subscription, made before the look.
            match tokio::time::timeout_at(deadline, fired.changed()).await {
                Ok(Ok(())) => continue,
                _ => return self.events_after(after),
            }
        }
    }

    fn events_after(&self, after: u64) -> EventList {
        let inner = self.lock();
        let first_kept = inner.events.front().map_or(inner.last + 1, |e| e.id);
        let missed = if after < inner.last {
            first_kept.saturating_sub(after + 1)
        } else {
            0
        };
        EventList {
            events: inner
                .events
                .iter()
                .filter(|e| e.id > after)
                .cloned()
                .collect(),
            last: inner.last,
            missed,
            boot: self.boot.clone(),
        }
    }
}

/// What a watch's task needs to fire it.
struct Firing {
    id: String,
    label: Option<String>,
    inner: Arc<Mutex<Inner>>,
    fired: Arc<watch::Sender<u64>>,
}

impl Firing {
    fn fire(self, happened: Happened) {
        let id = {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            if inner.watches.remove(&self.id).is_none() {
                // Deleted while it fired.
                return;
            }
            inner.order.retain(|w| *w != self.id);
            inner.last += 1;
            let id = inner.last;
            if inner.events.len() == KEPT_EVENTS {
                inner.events.pop_front();
            }
            inner.events.push_back(SandboxEvent {
                id,
                watch: self.id.clone(),
                label: self.label,
                at: rfc3339(SystemTime::now()),
                happened,
            });
            id
        };
        tracing::debug!(watch = %self.id, event = id, "watch fired");
        self.fired.send_replace(id);
    }
}
