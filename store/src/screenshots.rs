//! The browser as browser tool calls of a served thread left it: one JPEG per call (call
//! ids are unique within a run, not across runs).

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, now_ms};

impl Store {
    /// Keeps `jpeg` as the browser after call `call` of `thread`'s run `run`.
    pub fn add_screenshot(
        &self,
        thread: &str,
        run: &str,
        call: &str,
        jpeg: &[u8],
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR REPLACE INTO screenshots (thread_id, run_id, call_id, jpeg, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![thread, run, call, jpeg, now_ms()],
        )?;
        Ok(())
    }

    /// The browser after call `call` of `thread`'s run `run`.
    pub fn screenshot(
        &self,
        thread: &str,
        run: &str,
        call: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT jpeg FROM screenshots WHERE thread_id = ?1 AND run_id = ?2 AND call_id = ?3",
                params![thread, run, call],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// `thread`'s newest screenshot.
    pub fn latest_screenshot(&self, thread: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT jpeg FROM screenshots WHERE thread_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT 1",
                params![thread],
                |r| r.get(0),
            )
            .optional()?)
    }
}
