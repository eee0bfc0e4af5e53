//! Emitting run events: numbered without gaps, stored as status messages, handed to whoever
//! renders them.

use std::sync::{Arc, Mutex};

use cove_protocol::events::{EventKind, RunEvent};
use tokio::sync::mpsc::UnboundedSender;

use crate::store::{Store, now_ms};

/// The event as stored: a takeover's link and token are for the person, not the database.
pub fn redacted(event: &RunEvent) -> std::borrow::Cow<'_, RunEvent> {
    match &event.kind {
        EventKind::Takeover {
            text, expires_at, ..
        } => std::borrow::Cow::Owned(RunEvent {
            kind: EventKind::Takeover {
                text: text.clone(),
                url: None,
                token: None,
                expires_at: expires_at.clone(),
            },
            ..event.clone()
        }),
        _ => std::borrow::Cow::Borrowed(event),
    }
}

/// Emits the events of one run.
#[derive(Debug)]
pub struct Emitter {
    thread_id: String,
    run_id: String,
    store: Arc<Store>,
    /// The next sequence number; the lock also keeps delivery in sequence order.
    next: Mutex<u64>,
    sink: Option<UnboundedSender<RunEvent>>,
}

impl Emitter {
    /// An emitter for a run; events go to `sink` when there is one.
    pub fn new(
        thread_id: &str,
        run_id: &str,
        store: Arc<Store>,
        sink: Option<UnboundedSender<RunEvent>>,
    ) -> Self {
        Emitter {
            thread_id: thread_id.to_string(),
            run_id: run_id.to_string(),
            store,
            next: Mutex::new(0),
            sink,
        }
    }

    /// Keeps `shot`, the browser after call `call`, for the thread's record (`cove export`,
    /// the page). Losing it loses only the picture.
    pub fn keep_screenshot(&self, call: &str, shot: &cove_protocol::browser::Screenshot) {
        use base64::Engine as _;
        let Ok(jpeg) = base64::engine::general_purpose::STANDARD.decode(&shot.base64) else {
            return;
        };
        if let Err(e) = self
            .store
            .add_screenshot(&self.thread_id, &self.run_id, call, &jpeg)
        {
            tracing::warn!(error = %e, "cannot keep a screenshot");
        }
    }

    /// Emits one event.
    pub fn emit(&self, kind: EventKind) {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let event = RunEvent {
            seq: *next,
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            timestamp_ms: u64::try_from(now_ms()).unwrap_or(0),
            kind,
        };
        *next += 1;
        // Text chunks are stored whole, as the assistant message; everything else as a status.
        if !matches!(event.kind, EventKind::AssistantText { .. })
            && let Ok(content) = serde_json::to_value(redacted(&event))
            && let Err(e) = self
                .store
                .append_status(&self.thread_id, Some(&self.run_id), &content)
        {
            tracing::warn!(error = %e, "cannot store a status message");
        }
        if let Some(sink) = &self.sink {
            let _ = sink.send(event);
        }
    }
}
