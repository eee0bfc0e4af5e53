//! Knowledge entries: text every run of every thread, or of one thread, is given.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, now_ms};

/// A knowledge entry: for every thread (`thread_id` none) or for one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knowledge {
    pub id: i64,
    pub thread_id: Option<String>,
    pub name: String,
    pub content: String,
    pub created_at: i64,
}

impl Store {
    /// Adds a knowledge entry for every thread (`thread` none) or for one; returns its id.
    pub fn add_knowledge(
        &self,
        thread: Option<&str>,
        name: &str,
        content: &str,
    ) -> Result<i64, StoreError> {
        let conn = self.conn();
        conn.execute(
            "INSERT INTO knowledge (thread_id, name, content, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![thread, name, content, now_ms()],
        )?;
        Ok(conn.last_insert_rowid())
    }

    /// The entries a run of `thread` sees (every-thread entries and its own), or, for no
    /// thread, every entry.
    pub fn knowledge(&self, thread: Option<&str>) -> Result<Vec<Knowledge>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, thread_id, name, content, created_at FROM knowledge
             WHERE ?1 IS NULL OR thread_id IS NULL OR thread_id = ?1 ORDER BY id",
        )?;
        let rows = stmt
            .query_map(params![thread], |r| {
                Ok(Knowledge {
                    id: r.get(0)?,
                    thread_id: r.get(1)?,
                    name: r.get(2)?,
                    content: r.get(3)?,
                    created_at: r.get(4)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Removes a knowledge entry; false if there was none.
    pub fn remove_knowledge(&self, id: i64) -> Result<bool, StoreError> {
        Ok(self
            .conn()
            .execute("DELETE FROM knowledge WHERE id = ?1", params![id])?
            > 0)
    }
}
