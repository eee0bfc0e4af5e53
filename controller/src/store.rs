//! Persistence in SQLite: threads, their messages and their runs.
//!
//! Messages follow Suna's split: LLM messages (what the model is sent) and status messages
//! (what happened, for people and tools). Every message is committed on its own as soon as it
//! exists, in WAL mode, so a controller killed mid-run loses nothing it had already said.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::ChatMessage;

/// What went wrong with the database, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Check the path and its permissions.
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    /// The named thread does not exist.
    #[error("no thread {0:?}; `cove threads` lists them")]
    NoThread(String),
    /// A query failed (disk full, database locked by another writer).
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A stored message could not be read back.
    #[error("a stored message is unreadable: {0}")]
    Corrupt(String),
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
    /// `local:<workspace path>` or a daemon URL.
    pub sandbox: String,
    /// The status of its latest run (`running`, `paused`, `completed`, `failed`, `stopped`).
    pub status: String,
}

/// A run of a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    pub thread_id: String,
    pub status: String,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub iterations: u32,
    pub error: Option<String>,
    /// For a paused run: `ask` or `takeover`.
    pub pause_kind: Option<String>,
    /// For a paused run: what the agent asked.
    pub pause_text: Option<String>,
}

/// One stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub id: i64,
    pub thread_id: String,
    pub run_id: Option<String>,
    /// `user`, `assistant`, `tool` (LLM messages) or `status`.
    pub kind: String,
    pub is_llm_message: bool,
    pub content: Value,
    pub created_at: i64,
}

/// A knowledge entry: for every thread (`thread_id` none) or for one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knowledge {
    pub id: i64,
    pub thread_id: Option<String>,
    pub name: String,
    pub content: String,
    pub created_at: i64,
}

/// A summary that stands for a range of a thread's LLM messages in what the model is sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The summary's own message id.
    pub id: i64,
    /// The first and last LLM message ids it replaces.
    pub first: i64,
    pub last: i64,
    pub text: String,
}

/// A run waiting on its thread for something outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub thread_id: String,
    pub run_id: String,
    /// `takeover`.
    pub kind: String,
    /// The process running the run.
    pub pid: i64,
    pub since: i64,
    /// Replies are the user messages after this one.
    pub after_message: i64,
}

/// A sandbox a provider made for Cove (a Docker container).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManagedSandbox {
    pub name: String,
    /// `docker`.
    pub provider: String,
    pub container_id: String,
    /// Where coved answered at its last start.
    pub url: Option<String>,
    #[serde(skip)]
    pub token: String,
    pub image: String,
    pub created_at: i64,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A short random id.
pub fn new_id(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if getrandom::fill(&mut buf).is_err() {
        let n = now_ms().to_le_bytes();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = n[i % n.len()] ^ (i as u8).wrapping_mul(31);
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    model TEXT NOT NULL,
    tool_mode TEXT NOT NULL,
    sandbox TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL REFERENCES threads(id),
    status TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at INTEGER,
    iterations INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    pause_kind TEXT,
    pause_text TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs(thread_id, started_at);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL REFERENCES threads(id),
    run_id TEXT,
    kind TEXT NOT NULL,
    is_llm_message INTEGER NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_thread ON messages(thread_id, id);
CREATE TABLE IF NOT EXISTS waits (
    thread_id TEXT PRIMARY KEY REFERENCES threads(id),
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    pid INTEGER NOT NULL,
    since INTEGER NOT NULL,
    after_message INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sandboxes (
    name TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    container_id TEXT NOT NULL,
    url TEXT,
    token TEXT NOT NULL,
    image TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS knowledge (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT REFERENCES threads(id),
    name TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
";

/// A `threads` row, selected in the column order of [`Thread`].
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
    })
}

/// Stored LLM messages, `(id, JSON)`, read back.
fn decode_messages(rows: Vec<(i64, String)>) -> Result<Vec<(i64, ChatMessage)>, StoreError> {
    rows.into_iter()
        .map(|(id, content)| {
            serde_json::from_str(&content)
                .map(|m| (id, m))
                .map_err(|e| StoreError::Corrupt(format!("message {id}: {e}")))
        })
        .collect()
}

/// The database.
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
}

impl Store {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        let open_error = |source| StoreError::Open {
            path: path.display().to_string(),
            source,
        };
        let conn = Connection::open(path).map_err(open_error)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_error)?;
        // NORMAL in WAL mode: a commit survives the process dying; only an OS crash can lose
        // the last commits.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_error)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_error)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_error)?;
        conn.execute_batch(SCHEMA).map_err(open_error)?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    /// An in-memory database (tests, benchmarks).
    pub fn in_memory() -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(SCHEMA)?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates a thread.
    pub fn create_thread(
        &self,
        title: &str,
        model: &str,
        tool_mode: &str,
        sandbox: &str,
    ) -> Result<Thread, StoreError> {
        let now = now_ms();
        let thread = Thread {
            id: new_id(4),
            title: title.chars().take(200).collect(),
            created_at: now,
            updated_at: now,
            model: model.to_string(),
            tool_mode: tool_mode.to_string(),
            sandbox: sandbox.to_string(),
            status: "new".to_string(),
        };
        self.conn().execute(
            "INSERT INTO threads (id, title, created_at, updated_at, model, tool_mode, sandbox, status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![thread.id, thread.title, now, now, thread.model, thread.tool_mode, thread.sandbox, thread.status],
        )?;
        Ok(thread)
    }

    /// The thread called `id` (a unique prefix of it is enough).
    pub fn thread(&self, id: &str) -> Result<Thread, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, title, created_at, updated_at, model, tool_mode, sandbox, status
             FROM threads WHERE id = ?1 OR id LIKE ?2 ORDER BY id = ?1 DESC LIMIT 2",
        )?;
        let rows: Vec<Thread> = stmt
            .query_map(params![id, format!("{id}%")], thread_row)?
            .collect::<Result<_, _>>()?;
        match rows.as_slice() {
            [one] => Ok(one.clone()),
            [exact, _] if exact.id == id => Ok(exact.clone()),
            _ => Err(StoreError::NoThread(id.to_string())),
        }
    }

    /// Every thread, newest first.
    pub fn threads(&self) -> Result<Vec<Thread>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, title, created_at, updated_at, model, tool_mode, sandbox, status
             FROM threads ORDER BY updated_at DESC",
        )?;
        let rows = stmt.query_map([], thread_row)?.collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Sets a thread's status.
    pub fn set_thread_status(&self, thread: &str, status: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE threads SET status = ?2, updated_at = ?3 WHERE id = ?1",
            params![thread, status, now_ms()],
        )?;
        Ok(())
    }

    /// Records where a thread's sandbox is.
    pub fn set_thread_sandbox(&self, thread: &str, sandbox: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE threads SET sandbox = ?2, updated_at = ?3 WHERE id = ?1",
            params![thread, sandbox, now_ms()],
        )?;
        Ok(())
    }

    /// Stores a message; returns its id.
    pub fn append(
        &self,
        thread: &str,
        run: Option<&str>,
        kind: &str,
        is_llm: bool,
        content: &Value,
    ) -> Result<i64, StoreError> {
        let conn = self.conn();
        // Cached: a run stores several messages per iteration.
        conn.prepare_cached(
            "INSERT INTO messages (thread_id, run_id, kind, is_llm_message, content, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            thread,
            run,
            kind,
            is_llm,
            content.to_string(),
            now_ms()
        ])?;
        Ok(conn.last_insert_rowid())
    }

    /// Stores an LLM message; returns its id.
    pub fn append_llm(
        &self,
        thread: &str,
        run: Option<&str>,
        message: &ChatMessage,
    ) -> Result<i64, StoreError> {
        let kind = match message.role {
            crate::llm::Role::User => "user",
            crate::llm::Role::Assistant => "assistant",
            crate::llm::Role::Tool => "tool",
        };
        let content =
            serde_json::to_value(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.append(thread, run, kind, true, &content)
    }

    /// Every message of a thread, oldest first.
    pub fn messages(&self, thread: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, thread_id, run_id, kind, is_llm_message, content, created_at
             FROM messages WHERE thread_id = ?1 ORDER BY id",
        )?;
        let rows = stmt
            .query_map(params![thread], |r| {
                let content: String = r.get(5)?;
                Ok(StoredMessage {
                    id: r.get(0)?,
                    thread_id: r.get(1)?,
                    run_id: r.get(2)?,
                    kind: r.get(3)?,
                    is_llm_message: r.get(4)?,
                    content: serde_json::from_str(&content).unwrap_or(Value::String(content)),
                    created_at: r.get(6)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// The LLM messages of a thread with their ids, oldest first.
    pub fn llm_messages(&self, thread: &str) -> Result<Vec<(i64, ChatMessage)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, content FROM messages
             WHERE thread_id = ?1 AND is_llm_message = 1 ORDER BY id",
        )?;
        let rows: Vec<(i64, String)> = stmt
            .query_map(params![thread], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        decode_messages(rows)
    }

    /// One stored LLM message of `thread`, if it has that id.
    pub fn llm_message(&self, thread: &str, id: i64) -> Result<Option<ChatMessage>, StoreError> {
        let conn = self.conn();
        let content: Option<String> = conn
            .query_row(
                "SELECT content FROM messages WHERE id = ?1 AND thread_id = ?2 AND is_llm_message = 1",
                params![id, thread],
                |r| r.get(0),
            )
            .optional()?;
        content
            .map(|c| {
                serde_json::from_str(&c)
                    .map_err(|e| StoreError::Corrupt(format!("message {id}: {e}")))
            })
            .transpose()
    }

    /// Stores a summary of messages `first..=last` of `thread` (the messages stay).
    pub fn add_summary(
        &self,
        thread: &str,
        run: Option<&str>,
        first: i64,
        last: i64,
        text: &str,
    ) -> Result<i64, StoreError> {
        let content = serde_json::json!({"first": first, "last": last, "text": text});
        self.append(thread, run, "summary", false, &content)
    }

    /// The newest summary of `thread`.
    pub fn latest_summary(&self, thread: &str) -> Result<Option<Summary>, StoreError> {
        let conn = self.conn();
        let row: Option<(i64, String)> = conn
            .query_row(
                "SELECT id, content FROM messages WHERE thread_id = ?1 AND kind = 'summary' ORDER BY id DESC LIMIT 1",
                params![thread],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((id, content)) = row else {
            return Ok(None);
        };
        let value: Value = serde_json::from_str(&content)
            .map_err(|e| StoreError::Corrupt(format!("summary {id}: {e}")))?;
        match (
            value["first"].as_i64(),
            value["last"].as_i64(),
            value["text"].as_str(),
        ) {
            (Some(first), Some(last), Some(text)) => Ok(Some(Summary {
                id,
                first,
                last,
                text: text.to_string(),
            })),
            _ => Err(StoreError::Corrupt(format!("summary {id}: missing fields"))),
        }
    }

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

    /// Starts a run of a thread.
    pub fn start_run(&self, thread: &str) -> Result<Run, StoreError> {
        let run = Run {
            id: new_id(6),
            thread_id: thread.to_string(),
            status: "running".into(),
            started_at: now_ms(),
            ended_at: None,
            iterations: 0,
            error: None,
            pause_kind: None,
            pause_text: None,
        };
        self.conn().execute(
            "INSERT INTO runs (id, thread_id, status, started_at) VALUES (?1, ?2, ?3, ?4)",
            params![run.id, run.thread_id, run.status, run.started_at],
        )?;
        self.set_thread_status(thread, "running")?;
        Ok(run)
    }

    /// Counts an iteration of a run.
    pub fn count_iteration(&self, run: &str, iterations: u32) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE runs SET iterations = ?2 WHERE id = ?1")?
            .execute(params![run, iterations])?;
        Ok(())
    }

    /// Ends a run (and sets its thread's status to match).
    pub fn end_run(
        &self,
        run: &Run,
        status: &str,
        error: Option<&str>,
        pause: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE runs SET status = ?2, ended_at = ?3, error = ?4, pause_kind = ?5, pause_text = ?6 WHERE id = ?1",
            params![run.id, status, now_ms(), error, pause.map(|p| p.0), pause.map(|p| p.1)],
        )?;
        self.set_thread_status(&run.thread_id, status)
    }

    /// Records that `run` (in this process) waits on the thread for something outside it
    /// (a person handing the browser back); returns the id of the thread's newest message,
    /// after which a reply would arrive.
    pub fn begin_wait(&self, thread: &str, run: &str, kind: &str) -> Result<i64, StoreError> {
        let conn = self.conn();
        let after: i64 = conn.query_row(
            "SELECT COALESCE(MAX(id), 0) FROM messages WHERE thread_id = ?1",
            params![thread],
            |r| r.get(0),
        )?;
        conn.execute(
            "INSERT OR REPLACE INTO waits (thread_id, run_id, kind, pid, since, after_message)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![thread, run, kind, std::process::id(), now_ms(), after],
        )?;
        drop(conn);
        self.set_thread_status(thread, "waiting")?;
        Ok(after)
    }

    /// The wait under way on a thread, if any (its process may have died since).
    pub fn wait_of(&self, thread: &str) -> Result<Option<Wait>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT thread_id, run_id, kind, pid, since, after_message FROM waits WHERE thread_id = ?1",
                params![thread],
                |r| {
                    Ok(Wait {
                        thread_id: r.get(0)?,
                        run_id: r.get(1)?,
                        kind: r.get(2)?,
                        pid: r.get(3)?,
                        since: r.get(4)?,
                        after_message: r.get(5)?,
                    })
                },
            )
            .optional()?)
    }

    /// Ends the wait on a thread; the run is running again.
    pub fn end_wait(&self, thread: &str) -> Result<(), StoreError> {
        let conn = self.conn();
        conn.execute("DELETE FROM waits WHERE thread_id = ?1", params![thread])?;
        conn.execute(
            "UPDATE threads SET status = 'running', updated_at = ?2 WHERE id = ?1 AND status = 'waiting'",
            params![thread, now_ms()],
        )?;
        Ok(())
    }

    /// Delivers a reply to the run waiting on the thread: stores it as the user's message
    /// if a wait is still recorded. Returns whether it was delivered.
    pub fn deliver_reply(&self, thread: &str, message: &ChatMessage) -> Result<bool, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let waiting: Option<String> = tx
            .query_row(
                "SELECT run_id FROM waits WHERE thread_id = ?1",
                params![thread],
                |r| r.get(0),
            )
            .optional()?;
        let Some(run) = waiting else {
            return Ok(false);
        };
        let content =
            serde_json::to_value(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        tx.execute(
            "INSERT INTO messages (thread_id, run_id, kind, is_llm_message, content, created_at)
             VALUES (?1, ?2, 'user', 1, ?3, ?4)",
            params![thread, run, content.to_string(), now_ms()],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// The thread's user messages stored after message `after`. (Polled while a run waits:
    /// it reads only the new rows, not the history.)
    pub fn user_messages_after(
        &self,
        thread: &str,
        after: i64,
    ) -> Result<Vec<(i64, ChatMessage)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, content FROM messages
             WHERE thread_id = ?1 AND id > ?2 AND is_llm_message = 1 AND kind = 'user' ORDER BY id",
        )?;
        let rows: Vec<(i64, String)> = stmt
            .query_map(params![thread, after], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        decode_messages(rows)
    }

    /// Records a sandbox a provider made.
    pub fn add_sandbox(&self, s: &ManagedSandbox) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO sandboxes (name, provider, container_id, url, token, image, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                s.name,
                s.provider,
                s.container_id,
                s.url,
                s.token,
                s.image,
                s.created_at
            ],
        )?;
        Ok(())
    }

    /// Every sandbox a provider made, by name.
    pub fn sandboxes(&self) -> Result<Vec<ManagedSandbox>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT name, provider, container_id, url, token, image, created_at FROM sandboxes ORDER BY name",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ManagedSandbox {
                    name: r.get(0)?,
                    provider: r.get(1)?,
                    container_id: r.get(2)?,
                    url: r.get(3)?,
                    token: r.get(4)?,
                    image: r.get(5)?,
                    created_at: r.get(6)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// The sandbox a provider made under `name`.
    pub fn sandbox(&self, name: &str) -> Result<Option<ManagedSandbox>, StoreError> {
        Ok(self.sandboxes()?.into_iter().find(|s| s.name == name))
    }

    /// Records where a managed sandbox answers since its last start.
    pub fn set_sandbox_url(&self, name: &str, url: Option<&str>) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE sandboxes SET url = ?2 WHERE name = ?1",
            params![name, url],
        )?;
        Ok(())
    }

    /// Forgets a managed sandbox.
    pub fn remove_sandbox(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn()
            .execute("DELETE FROM sandboxes WHERE name = ?1", params![name])?
            > 0)
    }

    /// The latest run of a thread.
    pub fn last_run(&self, thread: &str) -> Result<Option<Run>, StoreError> {
        let conn = self.conn();
        let run = conn
            .query_row(
                "SELECT id, thread_id, status, started_at, ended_at, iterations, error, pause_kind, pause_text
                 FROM runs WHERE thread_id = ?1 ORDER BY started_at DESC, rowid DESC LIMIT 1",
                params![thread],
                |r| {
                    Ok(Run {
                        id: r.get(0)?,
                        thread_id: r.get(1)?,
                        status: r.get(2)?,
                        started_at: r.get(3)?,
                        ended_at: r.get(4)?,
                        iterations: r.get(5)?,
                        error: r.get(6)?,
                        pause_kind: r.get(7)?,
                        pause_text: r.get(8)?,
                    })
                },
            )
            .optional()?;
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn threads_messages_and_runs_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db/cove.db");
        let store = Store::open(&path).unwrap();
        let thread = store
            .create_thread("Build a site", "openai/gpt-4o", "native", "local:/tmp/ws")
            .unwrap();
        assert_eq!(store.thread(&thread.id).unwrap(), thread);
        assert_eq!(
            store.thread(&thread.id[..4]).unwrap().id,
            thread.id,
            "a prefix is enough"
        );
        assert!(matches!(store.thread("nope"), Err(StoreError::NoThread(_))));
        let run = store.start_run(&thread.id).unwrap();
        store
            .append_llm(&thread.id, Some(&run.id), &ChatMessage::user("hi"))
            .unwrap();
        store
            .append(
                &thread.id,
                Some(&run.id),
                "status",
                false,
                &json!({"type": "finish"}),
            )
            .unwrap();
        store
            .append_llm(&thread.id, Some(&run.id), &ChatMessage::assistant("hello"))
            .unwrap();
        let llm = store.llm_messages(&thread.id).unwrap();
        assert_eq!(llm.len(), 2, "status messages are not sent to the model");
        assert_eq!(llm[1].1.text(), "hello");
        assert_eq!(store.messages(&thread.id).unwrap().len(), 3);
        store
            .end_run(&run, "paused", None, Some(("ask", "Which colour?")))
            .unwrap();
        let last = store.last_run(&thread.id).unwrap().unwrap();
        assert_eq!(
            (last.status.as_str(), last.pause_text.as_deref()),
            ("paused", Some("Which colour?"))
        );
        assert_eq!(store.thread(&thread.id).unwrap().status, "paused");
        drop(store);
        // Reopening finds everything.
        let again = Store::open(&path).unwrap();
        assert_eq!(again.llm_messages(&thread.id).unwrap().len(), 2);
        assert_eq!(again.threads().unwrap().len(), 1);
    }
}
