//! Runs of a thread, and the waits a run records while something outside it (a person with
//! the browser) has to act before it can go on.

use cove_protocol::events::RunStatus;
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Decision, RequestKind, Store, StoreError, ThreadStatus, new_id, now_ms, stored_names};
use cove_protocol::conversation::ChatMessage;

stored_names! {
    /// Where a run is: under way, or how it ended.
    pub enum RunState {
        Running = "running",
        Paused = "paused",
        Completed = "completed",
        Stopped = "stopped",
        Failed = "failed",
    }
}

impl From<RunStatus> for RunState {
    fn from(status: RunStatus) -> RunState {
        match status {
            RunStatus::Completed => RunState::Completed,
            RunStatus::Paused => RunState::Paused,
            RunStatus::Stopped => RunState::Stopped,
            RunStatus::Failed => RunState::Failed,
        }
    }
}

stored_names! {
    /// What a paused run waits for.
    pub enum PauseKind {
        /// The user's answer to the agent's question.
        Ask = "ask",
        /// A person to hand the browser back.
        Takeover = "takeover",
        /// The user's approval of the plan the agent proposed.
        Plan = "plan",
        /// The user's decision on permission requests no one could answer during the run.
        Permission = "permission",
    }
}

/// A run of a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    pub thread_id: String,
    pub status: RunState,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub iterations: u32,
    pub error: Option<String>,
    /// For a paused run: what it waits for.
    pub pause_kind: Option<PauseKind>,
    /// For a paused run: what the agent asked.
    pub pause_text: Option<String>,
}

/// A live run waiting on its thread for a person to hand the browser back: a takeover
/// request, seen from the run and from `cove reply`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub thread_id: String,
    pub run_id: String,
    /// The request it is.
    pub request_id: String,
    /// The process running the run.
    pub pid: i64,
    pub since: i64,
    /// Replies are the user messages after this one.
    pub after_message: i64,
}

/// A thread that was `waiting` is `running` again (its run's wait ended).
pub(super) fn running_again(conn: &rusqlite::Connection, thread: &str) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE threads SET status = ?2, updated_at = ?3 WHERE id = ?1 AND status = ?4",
        params![
            thread,
            ThreadStatus::Running,
            now_ms(),
            ThreadStatus::Waiting
        ],
    )?;
    Ok(())
}

const RUN_COLUMNS: &str =
    "id, thread_id, status, started_at, ended_at, iterations, error, pause_kind, pause_text";

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Run> {
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
}

impl Store {
    /// Starts a run of a thread.
    pub fn start_run(&self, thread: &str) -> Result<Run, StoreError> {
        let run = Run {
            id: new_id(6),
            thread_id: thread.to_string(),
            status: RunState::Running,
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
        self.set_thread_status(thread, ThreadStatus::Running)?;
        Ok(run)
    }

    /// Counts an iteration of a run.
    pub fn count_iteration(&self, run: &str, iterations: u32) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE runs SET iterations = ?2 WHERE id = ?1")?
            .execute(params![run, iterations])?;
        Ok(())
    }

    /// Ends a run (and sets its thread's status to match); a paused run says what it waits
    /// for.
    pub fn end_run(
        &self,
        run: &Run,
        status: RunStatus,
        error: Option<&str>,
        pause: Option<(PauseKind, &str)>,
    ) -> Result<(), StoreError> {
        let state = RunState::from(status);
        self.conn().execute(
            "UPDATE runs SET status = ?2, ended_at = ?3, error = ?4, pause_kind = ?5, pause_text = ?6
             WHERE id = ?1",
            params![
                run.id,
                state,
                now_ms(),
                error,
                pause.map(|p| p.0),
                pause.map(|p| p.1)
            ],
        )?;
        self.set_thread_status(&run.thread_id, state.into())
    }

    /// The latest run of a thread.
    pub fn last_run(&self, thread: &str) -> Result<Option<Run>, StoreError> {
        let run = self
            .conn()
            .query_row(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE thread_id = ?1
                     ORDER BY started_at DESC, rowid DESC LIMIT 1"
                ),
                params![thread],
                run_row,
            )
            .optional()?;
        Ok(run)
    }

    /// The runs of a thread, oldest first.
    pub fn runs(&self, thread: &str) -> Result<Vec<Run>, StoreError> {
        let conn = self.conn();
        let mut statement = conn.prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE thread_id = ?1 ORDER BY started_at, rowid"
        ))?;
        let runs = statement.query_map(params![thread], run_row)?;
        Ok(runs.collect::<Result<_, _>>()?)
    }

    /// Records that `run` (in this process) waits on the thread for a person to hand the
    /// browser back (a takeover request); returns the id of the thread's newest message,
    /// after which a reply would arrive.
    pub fn begin_wait(&self, thread: &str, run: &str) -> Result<i64, StoreError> {
        let conn = self.conn();
        let after = super::messages::last_message_id(&conn, thread)?;
        // A wait left by a process that died is over: this one replaces it.
        super::requests::close_waiting(
            &conn,
            thread,
            RequestKind::Takeover,
            Decision::Withdrawn,
            None,
        )?;
        conn.execute(
            "INSERT INTO requests (id, thread_id, run_id, kind, call_id, tool, summary, why,
                                   arguments, fingerprint, created_at, pid, after_message)
             VALUES (?1, ?2, ?3, ?4, '', 'web_browser_takeover', 'hand the browser back',
                     'a person has the browser', '{}', '', ?5, ?6, ?7)",
            params![
                new_id(4),
                thread,
                run,
                RequestKind::Takeover,
                now_ms(),
                std::process::id(),
                after
            ],
        )?;
        drop(conn);
        self.set_thread_status(thread, ThreadStatus::Waiting)?;
        Ok(after)
    }

    /// The takeover wait under way on a thread, if any (its process may have died since).
    pub fn wait_of(&self, thread: &str) -> Result<Option<Wait>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT thread_id, run_id, id, COALESCE(pid, 0), created_at, COALESCE(after_message, 0)
                 FROM requests WHERE thread_id = ?1 AND kind = ?2 AND decision IS NULL
                 ORDER BY created_at DESC LIMIT 1",
                params![thread, RequestKind::Takeover],
                |r| {
                    Ok(Wait {
                        thread_id: r.get(0)?,
                        run_id: r.get(1)?,
                        request_id: r.get(2)?,
                        pid: r.get(3)?,
                        since: r.get(4)?,
                        after_message: r.get(5)?,
                    })
                },
            )
            .optional()?)
    }

    /// Ends the takeover wait on a thread (the browser is back, or its process is gone); the
    /// run is running again.
    pub fn end_wait(&self, thread: &str) -> Result<(), StoreError> {
        let conn = self.conn();
        super::requests::close_waiting(
            &conn,
            thread,
            RequestKind::Takeover,
            Decision::Answered,
            None,
        )?;
        running_again(&conn, thread)?;
        Ok(())
    }

    /// Delivers a reply to the run waiting on the thread: stores it as the user's message
    /// if a wait is still recorded. Returns whether it was delivered.
    pub fn deliver_reply(&self, thread: &str, message: &ChatMessage) -> Result<bool, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let waiting: Option<String> = tx
            .query_row(
                "SELECT run_id FROM requests WHERE thread_id = ?1 AND kind = ?2 AND decision IS NULL
                 ORDER BY created_at DESC LIMIT 1",
                params![thread, RequestKind::Takeover],
                |r| r.get(0),
            )
            .optional()?;
        let Some(run) = waiting else {
            return Ok(false);
        };
        super::messages::insert_llm(&tx, thread, Some(&run), message)?;
        tx.commit()?;
        Ok(true)
    }
}
