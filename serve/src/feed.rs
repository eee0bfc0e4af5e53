//! A thread's events as the server streams them: each stored (numbered through the thread)
//! before any client sees it, then announced; `GET /v1/threads/{id}/events` reads them as
//! Server-Sent Events from where the client left off (`Last-Event-ID`), at its own pace, so
//! a slow client never holds up a run and a client that reconnects misses nothing and gets
//! nothing twice.
//!
//! While a thread runs, its newest events are also kept in memory (the tail), so clients
//! that keep up are served without reading the database; one that falls further behind,
//! or reads a thread that has finished, reads the store.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use cove_protocol::events::{EventKind, RunEvent};
use cove_protocol::serve::EventsQuery;
use futures_util::Stream;
use tokio::sync::watch;

use super::ServeState;
use super::error::{ApiError, ApiQuery};
use cove_core::agent::events::redacted;
use cove_core::store::{Store, StoreError, StoredEvent};

/// Events read per step of a stream.
const BATCH: usize = 256;
/// Events a running thread keeps in memory.
const TAIL: usize = 4096;

/// One thread's feed: the number of its newest event, and its newest events while it runs.
struct Feed {
    newest: watch::Sender<u64>,
    tail: Mutex<VecDeque<StoredEvent>>,
}

impl Feed {
    /// The events after `after` (at most `limit`), if the tail still holds the next one.
    fn since(&self, after: u64, limit: usize) -> Option<Vec<StoredEvent>> {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let first = tail.front()?.seq;
        let last = tail.back()?.seq;
        if after + 1 < first {
            return None;
        }
        if after >= last {
            return Some(Vec::new());
        }
        let skip = usize::try_from(after + 1 - first).ok()?;
        // The tail is dense (one writer at a time); should it not be, the store answers.
        if tail.get(skip).map(|e| e.seq) != Some(after + 1) {
            return None;
        }
        Some(tail.iter().skip(skip).take(limit).cloned().collect())
    }
}

/// The feeds of the threads that have a stream or a run.
#[derive(Default)]
pub(super) struct Feeds {
    feeds: Mutex<HashMap<String, Arc<Feed>>>,
    /// Set when the server stops: every stream ends.
    closing: watch::Sender<bool>,
    /// What passes, for `GET /metrics`.
    pub(super) metrics: super::metrics::ServeMetrics,
}

impl Feeds {
    fn feed(&self, store: &Store, thread: &str) -> Result<Arc<Feed>, StoreError> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(feed) = feeds.get(thread) {
            return Ok(feed.clone());
        }
        let feed = Arc::new(Feed {
            newest: watch::Sender::new(store.last_event(thread)?),
            tail: Mutex::new(VecDeque::new()),
        });
        feeds.insert(thread.to_string(), feed.clone());
        Ok(feed)
    }

    /// Stores `event` under the thread's next number and tells the streams.
    pub(super) fn publish(&self, store: &Store, event: RunEvent) -> Result<u64, StoreError> {
        self.publish_all(store, vec![event])
    }

    /// Stores `events` (of one thread) under its next numbers, in one transaction, and tells
    /// the streams; the number of the last. A takeover's link and token are left out: they
    /// are secrets of the person, asked for through `POST /v1/threads/{id}/takeover`.
    pub(super) fn publish_all(
        &self,
        store: &Store,
        events: Vec<RunEvent>,
    ) -> Result<u64, StoreError> {
        let Some(thread) = events.first().map(|e| e.thread_id.clone()) else {
            return Ok(0);
        };
        let feed = self.feed(store, &thread)?;
        for event in &events {
            self.metrics.saw(event);
        }
        let ended = events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ThreadRunEnd { .. }));
        // Numbering, storing and adding to the tail happen under one lock, so two writers
        // (a run's end and the next run's start) never leave the tail out of order.
        let mut tail = feed.tail.lock().unwrap_or_else(|p| p.into_inner());
        let stored = store.append_events(&thread, events.len(), |i, seq| {
            let mut event = redacted(&events[i]).into_owned();
            // One numbering for a client: the thread's, which the SSE id carries too.
            event.seq = seq;
            (
                event.run_id.clone(),
                serde_json::to_string(&event).unwrap_or_default(),
            )
        })?;
        let last = stored.last().map_or(0, |e| e.seq);
        if ended {
            // A finished thread's clients read the store, as they rarely need to.
            tail.clear();
        } else {
            tail.extend(stored);
            let over = tail.len().saturating_sub(TAIL);
            tail.drain(..over);
        }
        drop(tail);
        feed.newest.send_replace(last);
        Ok(last)
    }

    /// Ends every stream (the server is stopping).
    pub(super) fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Follows the thread's newest event number.
    fn watch(&self, store: &Store, thread: &str) -> Result<Watch, StoreError> {
        let feed = self.feed(store, thread)?;
        Ok(Watch {
            _open: self.metrics.stream_opened(),
            newest: feed.newest.subscribe(),
            closing: self.closing.subscribe(),
            feed,
        })
    }
}

/// What a stream follows: its thread's feed and the server's end.
struct Watch {
    feed: Arc<Feed>,
    /// Counts the stream as open while it lives.
    _open: super::metrics::OpenStream,
    newest: watch::Receiver<u64>,
    closing: watch::Receiver<bool>,
}

impl Watch {
    /// Waits for an event after `after`; false when the server stops.
    async fn next_after(&mut self, after: u64) -> bool {
        if *self.closing.borrow() {
            return false;
        }
        if *self.newest.borrow_and_update() > after {
            return true;
        }
        tokio::select! {
            changed = self.newest.changed() => changed.is_ok(),
            _ = self.closing.wait_for(|c| *c) => false,
        }
    }
}

/// `GET /v1/threads/{id}/events`: the thread's events after `Last-Event-ID` (or `?after=`),
/// then each new one as it happens.
pub(super) async fn events(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or(query.after)
        .unwrap_or(0);
    // Watch first, then read: an event stored in between is seen by the watch.
    let watch = state.feeds.watch(&state.store, &thread.id)?;
    let stream = futures_util::stream::unfold(
        (state, thread.id, after, watch, Vec::<Event>::new()),
        |(state, thread, mut after, mut watch, mut ready)| async move {
            loop {
                if let Some(event) = ready.pop() {
                    return Some((Ok(event), (state, thread, after, watch, ready)));
                }
                let batch = match watch.feed.since(after, BATCH) {
                    Some(batch) => batch,
                    None => {
                        let store = state.store.clone();
                        let id = thread.clone();
                        tokio::task::spawn_blocking(move || store.events_after(&id, after, BATCH))
                            .await
                            .ok()
                            .and_then(Result::ok)
                            .unwrap_or_default()
                    }
                };
                if batch.is_empty() {
                    // Nothing new: wait for the next event, or the server to stop.
                    if !watch.next_after(after).await {
                        return None;
                    }
                    continue;
                }
                after = batch.last().map_or(after, |e| e.seq);
                // Popped from the end: the oldest last.
                ready = batch
                    .into_iter()
                    .rev()
                    .map(|e| Event::default().id(e.seq.to_string()).data(e.json))
                    .collect();
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
