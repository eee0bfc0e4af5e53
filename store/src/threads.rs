//! Threads: a conversation with its settings and the state of its latest run.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{RunState, Store, StoreError, new_id, now_ms, stored_names};

stored_names! {
    /// Where a thread is: new, or the state of its latest run (`waiting` while that run
    /// waits for a person to hand the browser back).
    pub enum ThreadStatus {
        New = "new",
        Running = "running",
        Waiting = "waiting",
        Paused = "paused",
        Completed = "completed",
        Stopped = "stopped",
        Failed = "failed",
    }
}

impl From<RunState> for ThreadStatus {
    fn from(state: RunState) -> ThreadStatus {
        match state {
            RunState::Running => ThreadStatus::Running,
            RunState::Paused => ThreadStatus::Paused,
            RunState::Completed => ThreadStatus::Completed,
            RunState::Stopped => ThreadStatus::Stopped,
            RunState::Failed => ThreadStatus::Failed,
        }
    }
}

/// A thread's settings and state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    pub id: String,
    pub title: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// `provider/model`.
    pub model: String,
    /// `native` or `xml`.
    pub tool_mode: String,
    /// Where its sandbox is: `local:<workspace path>`, `docker:<name>` or a daemon URL.
    pub sandbox: String,
    pub status: ThreadStatus,
    /// The thread whose agent started this one as a sub-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The fork of the sandbox's workspace it works in (a sub-agent's own copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<String>,
}

/// What a new thread is made of. The id can be drawn first (`NewThread::fresh_id`), so that
/// what is named after the thread, such as a local workspace, is known before the row exists.
#[derive(Debug, Clone)]
pub struct NewThread {
    pub id: String,
    pub title: String,
    pub model: String,
    pub tool_mode: String,
    pub sandbox: String,
    /// The thread whose agent starts it (a sub-agent's).
    pub parent: Option<String>,
    /// The fork of the workspace it works in.
    pub fork: Option<String>,
}

impl NewThread {
    /// A thread with a fresh id.
    pub fn new(title: &str, model: &str, tool_mode: &str, sandbox: &str) -> NewThread {
        NewThread {
            id: NewThread::fresh_id(),
            title: title.to_string(),
            model: model.to_string(),
            tool_mode: tool_mode.to_string(),
            sandbox: sandbox.to_string(),
            parent: None,
            fork: None,
        }
    }

    /// The same thread, a sub-agent of `parent`.
    pub fn child_of(mut self, parent: &str) -> NewThread {
        self.parent = Some(parent.to_string());
        self
    }

    /// The same thread, working in fork `fork` of the sandbox's workspace.
    pub fn in_fork(mut self, fork: Option<String>) -> NewThread {
        self.fork = fork;
        self
    }

    /// A fresh thread id.
    pub fn fresh_id() -> String {
        new_id(4)
    }
}

/// Now, in milliseconds, but always after the last thread this process made: sub-agents'
/// threads are made within a millisecond of each other, and their order is their creation's.
fn creation_ms() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = now_ms();
    let previous = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(now.max(last + 1))
        })
        .unwrap_or(now);
    now.max(previous + 1)
}

/// A `threads` row, selected in the column order of [`Thread`].
const THREAD_COLUMNS: &str =
    "id, title, created_at, updated_at, model, tool_mode, sandbox, status, parent_id, fork";

fn thread_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Thread> {
    Ok(Thread {
        id: r.get(0)?,
        title: r.get(1)?,
        created_at: r.get(2)?,
        updated_at: r.get(3)?,
        model: r.get(4)?,
        tool_mode: r.get(5)?,
        sandbox: r.get(6)?,
        status: r.get(7)?,
        parent_id: r.get(8)?,
        fork: r.get(9)?,
    })
}

impl Store {
    /// Creates a thread.
    pub fn create_thread(&self, new: NewThread) -> Result<Thread, StoreError> {
        let now = creation_ms();
        let thread = Thread {
            id: new.id,
            title: new.title.chars().take(200).collect(),
            created_at: now,
            updated_at: now,
            model: new.model,
            tool_mode: new.tool_mode,
            sandbox: new.sandbox,
            status: ThreadStatus::New,
            parent_id: new.parent,
            fork: new.fork,
        };
        self.conn().execute(
            &format!(
                "INSERT INTO threads ({THREAD_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
            ),
            params![
                thread.id,
                thread.title,
                now,
                now,
                thread.model,
                thread.tool_mode,
                thread.sandbox,
                thread.status,
                thread.parent_id,
                thread.fork
            ],
        )?;
        Ok(thread)
    }

    /// The thread called `id` (a unique prefix of it is enough, as people type them).
    pub fn thread(&self, id: &str) -> Result<Thread, StoreError> {
        let conn = self.conn();
        // A prefix compared as text: LIKE would read `%` and `_` in it as wildcards.
        let mut stmt = conn.prepare(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads
             WHERE id = ?1 OR substr(id, 1, length(?1)) = ?1 ORDER BY id = ?1 DESC LIMIT 2"
        ))?;
        let rows: Vec<Thread> = stmt
            .query_map(params![id], thread_row)?
            .collect::<Result<_, _>>()?;
        match rows.as_slice() {
            [one] => Ok(one.clone()),
            [exact, _] if exact.id == id => Ok(exact.clone()),
            _ => Err(StoreError::NoThread(id.to_string())),
        }
    }

    /// The thread whose id is exactly `id` (for programs, which have the whole id).
    pub fn thread_exact(&self, id: &str) -> Result<Thread, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?1"
        ))?;
        stmt.query_map(params![id], thread_row)?
            .next()
            .transpose()?
            .ok_or_else(|| StoreError::NoThread(id.to_string()))
    }

    /// The sub-agents' threads `parent` started, oldest first.
    pub fn children(&self, parent: &str) -> Result<Vec<Thread>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE parent_id = ?1 ORDER BY created_at, rowid"
        ))?;
        let rows = stmt
            .query_map(params![parent], thread_row)?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Every thread, newest first.
    pub fn threads(&self) -> Result<Vec<Thread>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads ORDER BY updated_at DESC"
        ))?;
        let rows = stmt.query_map([], thread_row)?.collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Deletes a thread and everything stored of it (its runs and their model calls, its
    /// messages, events, screenshots, requests, plans, grants and knowledge), at once. Its
    /// workspace's files are not the store's and stay where they are.
    pub fn delete_thread(&self, id: &str) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let found = tx.query_row(
            "SELECT COUNT(*) FROM threads WHERE id = ?1",
            params![id],
            |row| row.get::<_, i64>(0),
        )?;
        if found == 0 {
            return Err(StoreError::NoThread(id.to_string()));
        }
        tx.execute(
            "DELETE FROM model_calls WHERE run_id IN (SELECT id FROM runs WHERE thread_id = ?1)",
            params![id],
        )?;
        for table in [
            "spawns",
            "event_waits",
            "watches",
            "checkpoints",
            "screenshots",
            "events",
            "grants",
            "plans",
            "requests",
            "knowledge",
            "messages",
            "runs",
        ] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE thread_id = ?1"),
                params![id],
            )?;
        }
        tx.execute("DELETE FROM threads WHERE id = ?1", params![id])?;
        tx.commit()?;
        Ok(())
    }

    /// Sets a thread's status.
    pub fn set_thread_status(&self, thread: &str, status: ThreadStatus) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE threads SET status = ?2, updated_at = ?3 WHERE id = ?1",
            params![thread, status, now_ms()],
        )?;
        Ok(())
    }
}
