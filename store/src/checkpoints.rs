//! Where in a thread's conversation each checkpoint of its workspace was taken: coved keeps
//! the files, the store keeps the point (after which message, by which run, and why).

use rusqlite::params;
use serde::Serialize;

use super::{Decision, RequestKind, Store, StoreError, ThreadStatus, now_ms};

/// The reason of a checkpoint taken as a run began.
pub const RUN_START: &str = "run start";

/// One checkpoint of a thread's workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadCheckpoint {
    /// coved's id (`c12`), within `sandbox`'s store.
    pub checkpoint: String,
    /// The sandbox that keeps it.
    pub sandbox: String,
    pub run_id: String,
    /// The thread's newest message when it was taken.
    pub after_message: i64,
    /// What it follows: "run start", or the tool calls of an iteration.
    pub reason: String,
    pub files: u64,
    /// Paths that changed since the checkpoint before it.
    pub changed: u64,
    pub created_at: i64,
}

impl ThreadCheckpoint {
    /// A thread's status when its conversation ends at this checkpoint: where a run began,
    /// as the run before it left it (done, or new when none did); in the middle of a run, a
    /// run to resume.
    pub fn status_then(&self) -> ThreadStatus {
        if self.reason != RUN_START {
            ThreadStatus::Stopped
        } else if self.after_message == 0 {
            ThreadStatus::New
        } else {
            ThreadStatus::Completed
        }
    }
}

impl Store {
    /// Keeps a checkpoint of `thread`'s workspace.
    pub fn add_checkpoint(
        &self,
        thread: &str,
        checkpoint: &ThreadCheckpoint,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint, sandbox, run_id, after_message, reason, files, changed, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                thread,
                checkpoint.checkpoint,
                checkpoint.sandbox,
                checkpoint.run_id,
                checkpoint.after_message,
                checkpoint.reason,
                checkpoint.files as i64,
                checkpoint.changed as i64,
                if checkpoint.created_at > 0 { checkpoint.created_at } else { now_ms() },
            ],
        )?;
        Ok(())
    }

    /// `thread`'s checkpoints, oldest first.
    pub fn checkpoints(&self, thread: &str) -> Result<Vec<ThreadCheckpoint>, StoreError> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT checkpoint, sandbox, run_id, after_message, reason, files, changed, created_at
             FROM checkpoints WHERE thread_id = ?1 ORDER BY created_at, rowid",
        )?;
        let rows = statement.query_map(params![thread], |r| {
            Ok(ThreadCheckpoint {
                checkpoint: r.get(0)?,
                sandbox: r.get(1)?,
                run_id: r.get(2)?,
                after_message: r.get(3)?,
                reason: r.get(4)?,
                files: r.get::<_, i64>(5)? as u64,
                changed: r.get::<_, i64>(6)? as u64,
                created_at: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// What a rewind of the conversation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rewound {
    /// The number the messages left behind carry (`cove show --all` shows them).
    pub branch: i64,
    /// Messages left behind.
    pub messages: u64,
}

impl Store {
    /// Takes `thread`'s conversation back to message `after`: later messages are kept, as
    /// a branch of their own the model is never sent, and what the thread waited for (a
    /// question, a permission, a plan, the browser) is withdrawn.
    pub fn rewind_conversation(
        &self,
        thread: &str,
        to: &ThreadCheckpoint,
    ) -> Result<Rewound, StoreError> {
        let after = to.after_message;
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let branch: i64 = tx.query_row(
            "SELECT COALESCE(MAX(branch), 0) + 1 FROM messages WHERE thread_id = ?1",
            params![thread],
            |r| r.get(0),
        )?;
        let moved = tx.execute(
            "UPDATE messages SET branch = ?3 WHERE thread_id = ?1 AND id > ?2 AND branch = 0",
            params![thread, after, branch],
        )?;
        // The streamed events go aside with the run they belong to: from the checkpoint's
        // run on when it was taken as that run began, else from the run after it.
        let cut: Option<i64> = if to.reason == RUN_START {
            tx.query_row(
                "SELECT MIN(seq) FROM events WHERE thread_id = ?1 AND run_id = ?2 AND branch = 0",
                params![thread, to.run_id],
                |r| r.get(0),
            )?
        } else {
            tx.query_row(
                "SELECT MIN(seq) FROM events WHERE thread_id = ?1 AND branch = 0 AND run_id != ?2
                 AND seq > (SELECT COALESCE(MAX(seq), 0) FROM events WHERE thread_id = ?1 AND run_id = ?2)",
                params![thread, to.run_id],
                |r| r.get(0),
            )?
        };
        if let Some(cut) = cut {
            tx.execute(
                "UPDATE events SET branch = ?3 WHERE thread_id = ?1 AND seq >= ?2 AND branch = 0",
                params![thread, cut, branch],
            )?;
        }
        for kind in [
            RequestKind::Permission,
            RequestKind::Plan,
            RequestKind::Ask,
            RequestKind::Takeover,
        ] {
            super::requests::close_waiting(&tx, thread, kind, Decision::Withdrawn, None)?;
        }
        let status = to.status_then();
        tx.execute(
            "UPDATE threads SET status = ?2, updated_at = ?3 WHERE id = ?1",
            params![thread, status, now_ms()],
        )?;
        tx.commit()?;
        Ok(Rewound {
            branch,
            messages: moved as u64,
        })
    }
}

impl Store {
    /// Copies `from`'s conversation up to message `upto` (the branch in use) into thread
    /// `to`, summaries pointing at the copies; the id of the last copy (0 when none).
    pub fn copy_conversation(&self, from: &str, to: &str, upto: i64) -> Result<i64, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let rows: Vec<(i64, String, bool, String, i64)> = {
            let mut statement = tx.prepare(
                "SELECT id, kind, is_llm_message, content, created_at FROM messages
                 WHERE thread_id = ?1 AND id <= ?2 AND branch = 0 ORDER BY id",
            )?;
            let rows = statement.query_map(params![from, upto], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?;
            rows.collect::<Result<_, _>>()?
        };
        let mut moved = std::collections::HashMap::new();
        let mut last = 0;
        for (id, kind, is_llm, mut content, created_at) in rows {
            if kind == "summary" {
                // A summary names the range it stands for by the originals' ids.
                if let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&content) {
                    for end in ["first", "last"] {
                        if let Some(new) = value[end].as_i64().and_then(|old| moved.get(&old)) {
                            value[end] = serde_json::json!(new);
                        }
                    }
                    content = value.to_string();
                }
            }
            tx.execute(
                "INSERT INTO messages (thread_id, run_id, kind, is_llm_message, content, created_at)
                 VALUES (?1, NULL, ?2, ?3, ?4, ?5)",
                params![to, kind, is_llm, content, created_at],
            )?;
            last = tx.last_insert_rowid();
            moved.insert(id, last);
        }
        tx.commit()?;
        Ok(last)
    }
}
