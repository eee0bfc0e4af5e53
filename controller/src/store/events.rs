//! The events of a thread's runs as a server streamed them: numbered through the thread from
//! 1, each stored before any client sees it.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError};

/// One stored event: its number in the thread and its JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: u64,
    pub json: String,
}

impl Store {
    /// Stores an event of `thread`'s run `run`; `make` gets its number and gives its JSON.
    pub fn append_event(
        &self,
        thread: &str,
        run: &str,
        make: impl FnOnce(u64) -> String,
    ) -> Result<StoredEvent, StoreError> {
        let conn = self.conn();
        let last: i64 = conn.query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE thread_id = ?1",
            params![thread],
            |r| r.get(0),
        )?;
        let seq = u64::try_from(last).unwrap_or(0) + 1;
        let json = make(seq);
        conn.execute(
            "INSERT INTO events (thread_id, seq, run_id, event) VALUES (?1, ?2, ?3, ?4)",
            params![thread, seq as i64, run, json],
        )?;
        Ok(StoredEvent { seq, json })
    }

    /// `thread`'s events numbered above `after`, oldest first, at most `limit`.
    pub fn events_after(
        &self,
        thread: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT seq, event FROM events WHERE thread_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        )?;
        let rows = stmt
            .query_map(
                params![
                    thread,
                    i64::try_from(after).unwrap_or(i64::MAX),
                    limit as i64
                ],
                |r| {
                    Ok(StoredEvent {
                        seq: u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                        json: r.get(1)?,
                    })
                },
            )?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// The number of `thread`'s newest event (0 when it has none).
    pub fn last_event(&self, thread: &str) -> Result<u64, StoreError> {
        let last: Option<i64> = self
            .conn()
            .query_row(
                "SELECT MAX(seq) FROM events WHERE thread_id = ?1",
                params![thread],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        Ok(last.and_then(|l| u64::try_from(l).ok()).unwrap_or(0))
    }
}
