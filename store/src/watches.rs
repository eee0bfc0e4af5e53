//! The watches a thread's agent set in its sandbox, and the wait a run is in for them.
//!
//! coved fires a watch once; what the store adds is whether its event has reached the
//! model. A wait's result is stored in the same transaction that marks its events
//! delivered and ends the wait, so a controller killed at any point delivers each event
//! exactly once: before the commit the wait is still recorded and is taken up again,
//! after it the result is in the conversation and the wait is gone.

use rusqlite::{OptionalExtension, Row, params};

use super::{Store, StoreError, ThreadStatus, now_ms, stored_names};
use cove_protocol::conversation::ChatMessage;

stored_names! {
    /// Where a watch is, from the thread's side.
    pub enum WatchState {
        /// Set; its event has not reached the model.
        Pending = "pending",
        /// Its event is in the conversation.
        Delivered = "delivered",
        /// The agent dropped it, or the sandbox lost it.
        Dropped = "dropped",
    }
}

/// A watch to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWatch {
    /// coved's id.
    pub id: String,
    pub label: Option<String>,
    /// What it waits for, in words ("exit of command 3 in session build").
    pub description: String,
    /// Milliseconds since the epoch.
    pub expires_at: i64,
}

/// A watch of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadWatch {
    pub id: String,
    pub label: Option<String>,
    pub description: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub state: WatchState,
}

impl ThreadWatch {
    /// Its label, else what it waits for.
    pub fn title(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.description)
    }
}

/// A run waiting for its thread's watches to fire (the call `wait_for_events` made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventWait {
    pub thread_id: String,
    pub run_id: String,
    /// The call whose result the events become.
    pub call_id: String,
    pub tool: String,
    /// What it waits for, in a few words ("tests to finish").
    pub summary: String,
    /// The watches it waits for (none: any of the thread's).
    pub watches: Vec<String>,
    pub created_at: i64,
    /// When it gives up (milliseconds since the epoch).
    pub deadline: i64,
}

fn watch_row(r: &Row<'_>) -> rusqlite::Result<ThreadWatch> {
    Ok(ThreadWatch {
        id: r.get(0)?,
        label: r.get(1)?,
        description: r.get(2)?,
        created_at: r.get(3)?,
        expires_at: r.get(4)?,
        state: r.get(5)?,
    })
}

impl Store {
    /// Records a watch the agent set.
    pub fn add_watch(&self, thread: &str, watch: &NewWatch) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR REPLACE INTO watches
                 (thread_id, id, label, description, created_at, expires_at, state)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                thread,
                watch.id,
                watch.label,
                watch.description,
                now_ms(),
                watch.expires_at,
                WatchState::Pending
            ],
        )?;
        Ok(())
    }

    /// The thread's watches whose events have not reached the model, oldest first.
    pub fn pending_watches(&self, thread: &str) -> Result<Vec<ThreadWatch>, StoreError> {
        let conn = self.conn();
        let mut statement = conn.prepare_cached(
            "SELECT id, label, description, created_at, expires_at, state FROM watches
             WHERE thread_id = ?1 AND state = ?2 ORDER BY created_at, rowid",
        )?;
        let rows = statement.query_map(params![thread, WatchState::Pending], watch_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Marks a pending watch dropped; false when the thread has no such pending watch.
    pub fn drop_watch(&self, thread: &str, id: &str) -> Result<bool, StoreError> {
        let changed = self.conn().execute(
            "UPDATE watches SET state = ?3 WHERE thread_id = ?1 AND id = ?2 AND state = ?4",
            params![thread, id, WatchState::Dropped, WatchState::Pending],
        )?;
        Ok(changed > 0)
    }

    /// Records that a run waits for the thread's watches; the thread is `waiting`.
    pub fn begin_event_wait(&self, wait: &EventWait) -> Result<(), StoreError> {
        let watches =
            serde_json::to_string(&wait.watches).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.conn().execute(
            "INSERT OR REPLACE INTO event_waits
                 (thread_id, run_id, call_id, tool, summary, watches, created_at, deadline)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                wait.thread_id,
                wait.run_id,
                wait.call_id,
                wait.tool,
                wait.summary,
                watches,
                wait.created_at,
                wait.deadline
            ],
        )?;
        self.set_thread_status(&wait.thread_id, ThreadStatus::Waiting)
    }

    /// The wait for events recorded on a thread, if any (its process may have died since).
    pub fn event_wait(&self, thread: &str) -> Result<Option<EventWait>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT thread_id, run_id, call_id, tool, summary, watches, created_at, deadline
                 FROM event_waits WHERE thread_id = ?1",
                params![thread],
                |r| {
                    Ok((
                        EventWait {
                            thread_id: r.get(0)?,
                            run_id: r.get(1)?,
                            call_id: r.get(2)?,
                            tool: r.get(3)?,
                            summary: r.get(4)?,
                            watches: Vec::new(),
                            created_at: r.get(6)?,
                            deadline: r.get(7)?,
                        },
                        r.get::<_, String>(5)?,
                    ))
                },
            )
            .optional()?;
        row.map(|(mut wait, watches)| {
            wait.watches = serde_json::from_str(&watches)
                .map_err(|e| StoreError::Corrupt(format!("event wait of {thread}: {e}")))?;
            Ok(wait)
        })
        .transpose()
    }

    /// Forgets the thread's wait without a result (the run was stopped): its call is then
    /// answered as interrupted, like any other.
    pub fn end_event_wait(&self, thread: &str) -> Result<(), StoreError> {
        let conn = self.conn();
        conn.execute(
            "DELETE FROM event_waits WHERE thread_id = ?1",
            params![thread],
        )?;
        super::runs::running_again(&conn, thread)?;
        Ok(())
    }

    /// Ends the thread's wait with `result` (the wait's call's result): stores it, marks the
    /// `delivered` watches (id, the event as JSON) delivered and `lost` ones dropped, and
    /// forgets the wait, all at once. Returns the result's message id.
    pub fn deliver_events(
        &self,
        thread: &str,
        run: &str,
        result: &ChatMessage,
        delivered: &[(String, String)],
        lost: &[String],
    ) -> Result<i64, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let id = super::messages::insert_llm(&tx, thread, Some(run), result)?;
        for (watch, event) in delivered {
            tx.execute(
                "UPDATE watches SET state = ?3, event = ?4 WHERE thread_id = ?1 AND id = ?2",
                params![thread, watch, WatchState::Delivered, event],
            )?;
        }
        for watch in lost {
            tx.execute(
                "UPDATE watches SET state = ?3 WHERE thread_id = ?1 AND id = ?2",
                params![thread, watch, WatchState::Dropped],
            )?;
        }
        tx.execute(
            "DELETE FROM event_waits WHERE thread_id = ?1",
            params![thread],
        )?;
        super::runs::running_again(&tx, thread)?;
        tx.commit()?;
        Ok(id)
    }
}
