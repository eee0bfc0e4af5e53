//! A thread's events as the server streams them: each stored (numbered through the thread)
//! before any client sees it, then announced; `GET /v1/threads/{id}/events` reads them as
//! Server-Sent Events from where the client left off (`Last-Event-ID`), at its own pace, so
//! a slow client never holds up a run and a client that reconnects misses nothing and gets
//! nothing twice.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use cove_protocol::events::RunEvent;
use cove_protocol::serve::EventsQuery;
use futures_util::Stream;
use tokio::sync::watch;

use super::ServeState;
use super::api::{ApiError, ApiQuery};
use crate::agent::events::redacted;
use crate::store::{Store, StoreError};

/// Events read from the store per step of a stream.
const BATCH: usize = 256;

/// The newest event number of each thread that has a stream or a run.
#[derive(Default)]
pub(super) struct Feeds {
    newest: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl Feeds {
    fn sender(&self, store: &Store, thread: &str) -> Result<watch::Sender<u64>, StoreError> {
        let mut newest = self.newest.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = newest.get(thread) {
            return Ok(sender.clone());
        }
        let sender = watch::Sender::new(store.last_event(thread)?);
        newest.insert(thread.to_string(), sender.clone());
        Ok(sender)
    }

    /// Stores `event` under the thread's next number and tells the streams. A takeover's
    /// link and token are left out: they are secrets of the person, asked for through
    /// `POST /v1/threads/{id}/takeover`.
    pub(super) fn publish(&self, store: &Store, event: RunEvent) -> Result<u64, StoreError> {
        let mut event = redacted(&event).into_owned();
        let thread = event.thread_id.clone();
        let run = event.run_id.clone();
        let stored = store.append_event(&thread, &run, |seq| {
            // One numbering for a client: the thread's, which the SSE id carries too.
            event.seq = seq;
            serde_json::to_string(&event).unwrap_or_default()
        })?;
        self.sender(store, &thread)?.send_replace(stored.seq);
        Ok(stored.seq)
    }

    /// Follows the thread's newest event number.
    pub(super) fn watch(
        &self,
        store: &Store,
        thread: &str,
    ) -> Result<watch::Receiver<u64>, StoreError> {
        Ok(self.sender(store, thread)?.subscribe())
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
    let thread = state.inv.store.thread(&id)?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or(query.after)
        .unwrap_or(0);
    // Watch first, then read: an event stored in between is seen by the watch.
    let watch = state.feeds.watch(&state.inv.store, &thread.id)?;
    let stream = futures_util::stream::unfold(
        (state, thread.id, after, watch, Vec::<Event>::new()),
        |(state, thread, mut after, mut watch, mut ready)| async move {
            loop {
                if let Some(event) = ready.pop() {
                    return Some((Ok(event), (state, thread, after, watch, ready)));
                }
                let store = state.inv.store.clone();
                let id = thread.clone();
                let batch =
                    tokio::task::spawn_blocking(move || store.events_after(&id, after, BATCH))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .unwrap_or_default();
                if batch.is_empty() {
                    // Nothing new: wait for the next event (or the server to stop); one
                    // stored since the read is there to be read now.
                    if *watch.borrow_and_update() > after {
                        continue;
                    }
                    if watch.changed().await.is_err() {
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
