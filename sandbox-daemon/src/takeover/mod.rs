//! Takeover: a person drives the agent's browser from a page the daemon serves, then hands
//! it back. No VNC, X server or extra process: the page shows the active tab's CDP screencast
//! over a WebSocket and sends the person's input back as trusted CDP input events.
//!
//! One takeover at a time. It has its own token, valid only for the page and its socket and
//! only until it expires; while it lasts the agent's browser actions answer
//! `takeover_active` (reads still work). The first page to connect sends input; later ones
//! watch, and the next in line takes over input when the first leaves.

mod guard;
pub mod http;
mod input;
mod screencast;
mod viewer;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use chromiumoxide::Page;
use cove_protocol::ErrorCode;
use cove_protocol::browser::{TabInfo, Viewport};
use cove_protocol::takeover::{
    ActiveTakeover, EndedTakeover, InControl, MAX_TAKEOVER_TTL_SECS, StartTakeover, TakeoverEnd,
    TakeoverGrant, TakeoverStatus,
};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::AppState;
use crate::auth::AuthToken;
use crate::error::ApiError;
use crate::random::random_hex;
use crate::timestamp::rfc3339;

/// How takeovers behave.
#[derive(Debug, Clone)]
pub struct TakeoverSettings {
    /// Lifetime of a takeover when the caller does not say.
    pub ttl: Duration,
}

/// One screencast frame.
#[derive(Debug)]
pub struct Frame {
    pub jpeg: Bytes,
    /// The viewport the frame shows, in CSS pixels: what input coordinates map onto.
    pub width: f64,
    pub height: f64,
}

/// What every viewer shows besides the frames.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub tabs: Vec<TabInfo>,
    pub active_tab: u32,
    pub viewport: Viewport,
    /// The viewer that sends input.
    pub controller: Option<u64>,
    /// Set when the browser cannot be reached.
    pub problem: Option<String>,
    /// The dialog the page shows: the person answers it on the takeover page (a headless
    /// browser draws none).
    pub dialog: Option<cove_protocol::browser::DialogInfo>,
}

/// A takeover under way, shared by its viewers, its screencast and its timer.
pub struct Live {
    pub id: String,
    token: AuthToken,
    started_at: SystemTime,
    expires_at: SystemTime,
    message: Option<String>,
    /// The newest frame; a slow viewer skips to it.
    frames: watch::Sender<Option<Arc<Frame>>>,
    view: watch::Sender<View>,
    /// Set once, when the takeover ends.
    ended: watch::Sender<Option<TakeoverEnd>>,
    /// Connected viewers, in the order they came.
    viewers: Mutex<Vec<u64>>,
    next_viewer: AtomicU64,
    /// The active tab's page, for input; set by the screencast.
    page: Mutex<Option<Page>>,
    /// Asks the screencast to re-read the tabs now.
    refresh: Notify,
    /// The viewers' command under way (a navigation, say): one at a time, and aborted when
    /// the takeover ends so nothing a person asked for runs after the agent has the browser.
    command: Mutex<Option<JoinHandle<()>>>,
    /// Set by the screencast once it has stopped checking the tabs' navigations, after the
    /// end: the agent's own navigations wait for it.
    released: watch::Sender<bool>,
}

/// Longest an agent action waits for an ended takeover to let go of the tabs.
const RELEASE_WAIT: Duration = Duration::from_secs(5);

/// A viewer's place in a takeover, given back when dropped (its socket closed, or its
/// upgrade never completed).
pub struct Seat {
    live: Arc<Live>,
    id: u64,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.live.leave(self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Live {
    fn expired(&self) -> bool {
        SystemTime::now() >= self.expires_at
    }

    /// Adds a viewer unless `max` watch already; the first one in line controls. The seat
    /// is taken when the request is let in, not when its socket opens: otherwise pages
    /// that ask at once all pass the count before any of them is in it.
    fn try_join(self: &Arc<Self>, max: u32) -> Option<Seat> {
        let id = self.next_viewer.fetch_add(1, Ordering::Relaxed);
        let mut admitted = false;
        self.change_viewers(|viewers| {
            if viewers.len() < max as usize {
                viewers.push(id);
                admitted = true;
            }
        });
        if !admitted {
            return None;
        }
        // The tab list is only kept fresh while someone watches.
        self.refresh.notify_one();
        Some(Seat {
            live: Arc::clone(self),
            id,
        })
    }

    /// Removes a viewer; control passes to the next in line.
    fn leave(&self, id: u64) {
        self.change_viewers(|viewers| viewers.retain(|v| *v != id));
    }

    /// Changes the line of viewers and tells them who controls now.
    fn change_viewers(&self, change: impl FnOnce(&mut Vec<u64>)) {
        let mut viewers = lock(&self.viewers);
        change(&mut viewers);
        let controller = viewers.first().copied();
        drop(viewers);
        self.view.send_if_modified(|v| {
            let changed = v.controller != controller;
            v.controller = controller;
            changed
        });
    }

    fn viewer_count(&self) -> u32 {
        u32::try_from(lock(&self.viewers).len()).unwrap_or(u32::MAX)
    }

    /// The page input goes to.
    fn page(&self) -> Option<Page> {
        lock(&self.page).clone()
    }

    /// Runs `command` unless another is still under way; false if one is.
    fn run_command(&self, command: impl Future<Output = ()> + Send + 'static) -> bool {
        let mut slot = lock(&self.command);
        if slot.as_ref().is_some_and(|task| !task.is_finished()) {
            return false;
        }
        *slot = Some(tokio::spawn(command));
        true
    }

    /// Stops the command under way, if any.
    fn abort_command(&self) {
        if let Some(task) = lock(&self.command).take() {
            task.abort();
        }
    }

    fn describe(&self) -> ActiveTakeover {
        ActiveTakeover {
            id: self.id.clone(),
            started_at: rfc3339(self.started_at),
            expires_at: rfc3339(self.expires_at),
            message: self.message.clone(),
            viewers: self.viewer_count(),
        }
    }
}

#[derive(Default)]
struct Inner {
    active: Option<(Arc<Live>, Vec<JoinHandle<()>>)>,
    last_ended: Option<EndedTakeover>,
    /// The takeover that ended last, until its screencast has let go of the tabs.
    ending: Option<Arc<Live>>,
}

/// The daemon's takeovers: at most one under way.
pub struct TakeoverManager {
    settings: TakeoverSettings,
    inner: Mutex<Inner>,
    /// Bumped when a takeover starts or ends, for `GET ?wait_secs`.
    changes: watch::Sender<u64>,
}

impl TakeoverManager {
    /// No takeover yet.
    pub fn new(settings: TakeoverSettings) -> Self {
        TakeoverManager {
            settings,
            inner: Mutex::new(Inner::default()),
            changes: watch::Sender::new(0),
        }
    }

    /// The takeover under way, if any, ending it first if its time ran out.
    fn current(&self) -> Option<Arc<Live>> {
        let live = lock(&self.inner).active.as_ref().map(|(l, _)| l.clone())?;
        if live.expired() {
            self.end(Some(&live.id), TakeoverEnd::Expired, None);
            return None;
        }
        Some(live)
    }

    /// Whether the takeover `id` is the one under way.
    pub fn is_current(&self, id: &str) -> bool {
        self.current().is_some_and(|live| live.id == id)
    }

    /// The takeover a presented token opens, if it is the current one's and still valid.
    pub fn authorize(&self, presented: &str) -> Option<Arc<Live>> {
        self.current().filter(|live| live.token.matches(presented))
    }

    /// Waits (a moment at most) until the takeover that ended last has taken its checks off
    /// the tabs and stopped its screencast.
    async fn wait_for_release(&self) {
        let ending = lock(&self.inner).ending.clone();
        if let Some(live) = ending {
            let mut released = live.released.subscribe();
            let _ =
                tokio::time::timeout(RELEASE_WAIT, released.wait_for(|released| *released)).await;
            let mut inner = lock(&self.inner);
            if inner.ending.as_ref().is_some_and(|e| Arc::ptr_eq(e, &live)) {
                inner.ending = None;
            }
        }
    }

    /// Refuses agent actions while a person has control; once they handed back, waits (a
    /// moment at most) until the person's checks are off the tabs.
    pub async fn check_agent_may_act(&self) -> Result<(), ApiError> {
        match self.current() {
            None => {
                self.wait_for_release().await;
                Ok(())
            }
            Some(live) => Err(ApiError::new(
                ErrorCode::TakeoverActive,
                format!(
                    "a person has control of the browser (takeover until {}); reading the state and screenshots still works; act again after they hand it back",
                    rfc3339(live.expires_at)
                ),
            )),
        }
    }

    /// Whether a takeover is under way.
    pub fn is_active(&self) -> bool {
        self.current().is_some()
    }

    /// Who is in control, waiting up to `wait` for a takeover under way to end.
    pub async fn status(&self, wait: Option<Duration>) -> TakeoverStatus {
        let mut changes = self.changes.subscribe();
        if let Some(wait) = wait
            && let Some(live) = self.current()
        {
            let mut ended = live.ended.subscribe();
            let until = live
                .expires_at
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = changes.changed() => {}
                () = async { let _ = ended.wait_for(Option::is_some).await; } => {}
                // Expiry is noticed by reading; wake for it.
                _ = tokio::time::sleep(until) => {}
            }
        }
        let active = self.current().map(|l| l.describe());
        TakeoverStatus {
            in_control: if active.is_some() {
                InControl::Person
            } else {
                InControl::Agent
            },
            active,
            last_ended: lock(&self.inner).last_ended.clone(),
        }
    }

    /// Starts a takeover, or answers with the one under way. `base` is the daemon's address
    /// as people reach it.
    pub async fn start(
        &self,
        app: &AppState,
        base: &str,
        request: StartTakeover,
    ) -> Result<TakeoverGrant, ApiError> {
        let ttl = match request.ttl_secs {
            None => self.settings.ttl,
            Some(secs) if (1..=MAX_TAKEOVER_TTL_SECS).contains(&secs) => Duration::from_secs(secs),
            Some(_) => {
                return Err(ApiError::invalid_request(format!(
                    "ttl_secs must be between 1 and {MAX_TAKEOVER_TTL_SECS}"
                )));
            }
        };
        let base = base.trim_end_matches('/').to_string();
        if let Some(live) = self.current() {
            return Ok(grant(&base, &live));
        }
        // The last takeover's screencast stops when it is released; a new one started
        // before that would be stopped with it, leaving its viewers a still picture.
        self.wait_for_release().await;
        // The person needs a browser to look at: launch it now, so a missing Chromium is
        // the caller's error and not a blank page.
        let tab = app.browser.live_tab().await?;
        let now = SystemTime::now();
        let live = Arc::new(Live {
            id: random_hex(8),
            token: AuthToken::generate(),
            started_at: now,
            expires_at: now + ttl,
            message: request.message.filter(|m| !m.trim().is_empty()),
            frames: watch::Sender::new(None),
            view: watch::Sender::new(View {
                tabs: tab.tabs.clone(),
                active_tab: tab.tab_id,
                viewport: tab.viewport,
                controller: None,
                problem: None,
                dialog: tab.dialog.clone(),
            }),
            ended: watch::Sender::new(None),
            viewers: Mutex::new(Vec::new()),
            next_viewer: AtomicU64::new(1),
            page: Mutex::new(Some(tab.page.clone())),
            refresh: Notify::new(),
            command: Mutex::new(None),
            released: watch::Sender::new(false),
        });
        let mut inner = lock(&self.inner);
        if let Some((existing, _)) = &inner.active {
            // Another start won the race.
            return Ok(grant(&base, existing));
        }
        let pump = tokio::spawn(screencast::pump(app.clone(), live.clone(), tab));
        let timer = {
            let app = app.clone();
            let id = live.id.clone();
            tokio::spawn(async move {
                tokio::time::sleep(ttl).await;
                app.takeover.end(Some(&id), TakeoverEnd::Expired, None);
            })
        };
        inner.active = Some((live.clone(), vec![pump, timer]));
        drop(inner);
        self.changes.send_modify(|n| *n += 1);
        tracing::info!(id = %live.id, ttl_secs = ttl.as_secs(), "browser takeover started");
        Ok(grant(&base, &live))
    }

    /// Ends the takeover `id` (or whichever is under way), handing the browser back to the
    /// agent. Returns what ended, if anything did.
    pub fn end(
        &self,
        id: Option<&str>,
        reason: TakeoverEnd,
        note: Option<String>,
    ) -> Option<EndedTakeover> {
        let mut inner = lock(&self.inner);
        let matches = inner
            .active
            .as_ref()
            .is_some_and(|(live, _)| id.is_none_or(|id| live.id == id));
        if !matches {
            return None;
        }
        let (live, tasks) = inner.active.take()?;
        let ended = EndedTakeover {
            id: live.id.clone(),
            reason,
            note: note.filter(|n| !n.trim().is_empty()),
            ended_at: rfc3339(SystemTime::now()),
        };
        inner.last_ended = Some(ended.clone());
        inner.ending = Some(live.clone());
        drop(inner);
        // The screencast sees this and stops itself; the timer is no longer needed.
        live.ended.send_replace(Some(reason));
        live.abort_command();
        for task in tasks.into_iter().skip(1) {
            task.abort();
        }
        self.changes.send_modify(|n| *n += 1);
        tracing::info!(id = %live.id, ?reason, "browser takeover ended");
        Some(ended)
    }
}

fn grant(base: &str, live: &Live) -> TakeoverGrant {
    TakeoverGrant {
        id: live.id.clone(),
        url: format!("{base}/takeover?token={}", live.token.expose()),
        token: live.token.expose().to_string(),
        expires_at: rfc3339(live.expires_at),
    }
}
