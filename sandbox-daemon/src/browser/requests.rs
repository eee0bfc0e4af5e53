//! The requests a tab's page is waiting on (fetch, XHR, scripts loaded on demand), seen
//! through the browser's network events: a state is not read while the answer to a click
//! is still on its way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, RequestId, ResourceType,
};
use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::BrowserError;

/// A request open longer than this is a long poll or a stream, not an answer the page
/// waits for to draw itself: it no longer holds a state back.
const LONG_POLL: Duration = Duration::from_secs(1);
/// Requests the browser never reported finished are forgotten after this.
const FORGET_AFTER: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Open {
    started: HashMap<RequestId, Instant>,
    /// Requests whose end was read before their start: each event kind comes through its
    /// own channel, so a request answered at once (from the memory cache, say) may be
    /// reported finished before it is reported sent.
    ended_early: HashMap<RequestId, Instant>,
}

impl Open {
    /// Records a request the page sent.
    fn sent(&mut self, id: RequestId, now: Instant) {
        self.forget_older_than(now);
        if self.ended_early.remove(&id).is_none() {
            self.started.insert(id, now);
        }
    }

    /// Records a request's end; true when it was counted until now.
    fn ended(&mut self, id: RequestId, now: Instant) -> bool {
        if self.started.remove(&id).is_some() {
            return true;
        }
        self.forget_older_than(now);
        self.ended_early.insert(id, now);
        false
    }

    fn forget_older_than(&mut self, now: Instant) {
        let recent = |_: &RequestId, at: &mut Instant| now.duration_since(*at) < FORGET_AFTER;
        self.started.retain(recent);
        self.ended_early.retain(recent);
    }

    /// When the youngest request that still counts stops counting; None when none counts.
    fn counts_until(&self, now: Instant) -> Option<Instant> {
        self.started
            .values()
            .map(|started| *started + LONG_POLL)
            .filter(|until| *until > now)
            .max()
    }
}

/// A tab's open requests, kept up to date by a task reading the browser's events.
pub struct PendingRequests {
    open: Arc<Mutex<Open>>,
    changed: Arc<Notify>,
    task: JoinHandle<()>,
}

/// Whether the page waits on a request of this kind to show its result.
fn awaited(kind: Option<&ResourceType>) -> bool {
    matches!(
        kind,
        Some(ResourceType::Fetch | ResourceType::Xhr | ResourceType::Script)
    )
}

impl PendingRequests {
    /// Starts following `page`'s requests.
    pub async fn watch(page: &Page) -> Result<PendingRequests, BrowserError> {
        let mut sent = page
            .event_listener::<EventRequestWillBeSent>()
            .await
            .map_err(BrowserError::from_cdp)?;
        let mut finished = page
            .event_listener::<EventLoadingFinished>()
            .await
            .map_err(BrowserError::from_cdp)?;
        let mut failed = page
            .event_listener::<EventLoadingFailed>()
            .await
            .map_err(BrowserError::from_cdp)?;
        let open = Arc::new(Mutex::new(Open::default()));
        let changed = Arc::new(Notify::new());
        let (task_open, task_changed) = (open.clone(), changed.clone());
        let task = tokio::spawn(async move {
            loop {
                let (id, opened) = tokio::select! {
                    Some(ev) = sent.next() => {
                        if !awaited(ev.r#type.as_ref()) {
                            continue;
                        }
                        (ev.request_id.clone(), true)
                    }
                    Some(ev) = finished.next() => (ev.request_id.clone(), false),
                    Some(ev) = failed.next() => (ev.request_id.clone(), false),
                    else => return,
                };
                let Ok(mut open) = task_open.lock() else {
                    return;
                };
                let now = Instant::now();
                if opened {
                    open.sent(id, now);
                } else if open.ended(id, now) {
                    task_changed.notify_waiters();
                }
            }
        });
        Ok(PendingRequests {
            open,
            changed,
            task,
        })
    }

    /// Waits until no request the page may be waiting on is open, or until `deadline`;
    /// false when there was none to wait for.
    pub async fn wait_idle(&self, deadline: Instant) -> bool {
        let mut waited = false;
        loop {
            let changed = self.changed.notified();
            let now = Instant::now();
            let until = match self.open.lock() {
                Ok(open) => open.counts_until(now),
                Err(_) => None,
            };
            let Some(until) = until else {
                return waited;
            };
            if now >= deadline {
                return waited;
            }
            waited = true;
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(until.min(deadline).into()) => {}
            }
        }
    }
}

impl Drop for PendingRequests {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_counts_until_it_has_been_open_for_a_long_poll() {
        let now = Instant::now();
        let mut open = Open::default();
        assert_eq!(open.counts_until(now), None);
        open.started
            .insert(RequestId::new("old"), now - LONG_POLL * 2);
        assert_eq!(
            open.counts_until(now),
            None,
            "a long poll holds nothing back"
        );
        let young = now - Duration::from_millis(200);
        open.started.insert(RequestId::new("young"), young);
        assert_eq!(open.counts_until(now), Some(young + LONG_POLL));
    }

    #[test]
    fn a_request_reported_finished_before_sent_never_counts() {
        let now = Instant::now();
        let mut open = Open::default();
        assert!(!open.ended(RequestId::new("cached"), now));
        open.sent(RequestId::new("cached"), now);
        assert_eq!(open.counts_until(now), None);
        open.sent(RequestId::new("fetch"), now);
        assert_eq!(open.counts_until(now), Some(now + LONG_POLL));
        assert!(open.ended(RequestId::new("fetch"), now));
        assert_eq!(open.counts_until(now), None);
    }
}
