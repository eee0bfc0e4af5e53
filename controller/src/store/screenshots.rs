//! The browser as browser tool calls of a served thread left it: one JPEG per call.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError, now_ms};

impl Store {
    /// Keeps `jpeg` as the browser after `thread`'s call `call_id` (a second one replaces it).
    pub fn add_screenshot(
        &self,
        thread: &str,
        call_id: &str,
        jpeg: &[u8],
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR REPLACE INTO screenshots (thread_id, call_id, jpeg, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![thread, call_id, jpeg, now_ms()],
        )?;
        Ok(())
    }

    /// The browser after `thread`'s call `call_id`.
    pub fn screenshot(&self, thread: &str, call_id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT jpeg FROM screenshots WHERE thread_id = ?1 AND call_id = ?2",
                params![thread, call_id],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// `thread`'s newest screenshot and the call it followed.
    pub fn latest_screenshot(&self, thread: &str) -> Result<Option<(String, Vec<u8>)>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT call_id, jpeg FROM screenshots WHERE thread_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT 1",
                params![thread],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }
}
