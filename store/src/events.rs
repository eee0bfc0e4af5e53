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
    /// Stores `count` events of `thread` under its next numbers, in one transaction:
    /// `make` gets each one's index and number and gives its run's id and its JSON.
    pub fn append_events(
        &self,
        thread: &str,
        count: usize,
        mut make: impl FnMut(usize, u64) -> (String, String),
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let last: i64 = tx.query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE thread_id = ?1",
            params![thread],
            |r| r.get(0),
        )?;
        let first = u64::try_from(last).unwrap_or(0) + 1;
        let mut stored = Vec::with_capacity(count);
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO events (thread_id, seq, run_id, event) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for i in 0..count {
                let seq = first + i as u64;
                let (run, json) = make(i, seq);
                insert.execute(params![thread, seq as i64, run, json])?;
                stored.push(StoredEvent { seq, json });
            }
        }
        tx.commit()?;
        Ok(stored)
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
            "SELECT seq, event FROM events WHERE thread_id = ?1 AND seq > ?2 AND branch = 0
             ORDER BY seq LIMIT ?3",
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

    /// The number of `thread`'s newest event a client is shown (0 when it has none): one a
    /// rewind left aside is not.
    pub fn last_event(&self, thread: &str) -> Result<u64, StoreError> {
        let last: Option<i64> = self
            .conn()
            .query_row(
                "SELECT MAX(seq) FROM events WHERE thread_id = ?1 AND branch = 0",
                params![thread],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        Ok(last.and_then(|l| u64::try_from(l).ok()).unwrap_or(0))
    }
}
