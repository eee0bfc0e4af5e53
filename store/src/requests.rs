//! Everything a thread waits for from the user, in one table: a tool call that needs their
//! permission, the plan to approve, the answer to the agent's question, the browser handed
//! back. Stored, so a decision given from another terminal, or while no process runs the
//! thread, reaches the run, a run killed while one waits waits again when resumed, and
//! `cove threads` can say what each thread waits for.

use rusqlite::{OptionalExtension, Row, params};
use serde_json::Value;

use super::{Store, StoreError, new_id, now_ms, stored_names};

stored_names! {
    /// What a request asks.
    pub enum RequestKind {
        /// Whether a tool call may run.
        Permission = "permission",
        /// The approval of the plan the agent proposed.
        Plan = "plan",
        /// The answer to the agent's question (`ask`).
        Ask = "ask",
        /// A person to hand the browser back (`web_browser_takeover`).
        Takeover = "takeover",
    }
}

stored_names! {
    /// An answer the user may give.
    pub enum Decision {
        /// Run this call.
        AllowOnce = "allow_once",
        /// Run this call and every identical one of the thread from now on (waiting ones too).
        AllowForThread = "allow_for_thread",
        /// Do not run it; the model is told, with the user's reason.
        Deny = "deny",
        /// The plan is approved (as proposed, or as the user edited it).
        Approve = "approve",
        /// The plan is turned down, with the user's reason if they gave one.
        Reject = "reject",
        /// The user answered the question, or handed the browser back.
        Answered = "answered",
        /// The run itself closed it: a newer plan replaced the waiting one.
        Withdrawn = "withdrawn",
    }
}

impl Decision {
    /// Whether the call runs.
    pub fn allows(self) -> bool {
        self != Decision::Deny
    }
}

impl RequestKind {
    /// The decisions a request of this kind takes.
    pub fn offered(self) -> &'static [Decision] {
        match self {
            RequestKind::Permission => &[
                Decision::AllowOnce,
                Decision::AllowForThread,
                Decision::Deny,
            ],
            RequestKind::Plan => &[Decision::Approve, Decision::Reject],
            RequestKind::Ask | RequestKind::Takeover => &[Decision::Answered],
        }
    }
}

/// A request for the store to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRequest {
    pub thread_id: String,
    pub run_id: String,
    pub kind: RequestKind,
    /// The tool call it gates.
    pub call_id: String,
    pub tool: String,
    /// One line saying what will happen.
    pub summary: String,
    /// Why it asks.
    pub why: String,
    pub arguments: Value,
    /// Requests with the same fingerprint are identical: one `allow_for_thread` answers all.
    pub fingerprint: String,
}

/// A stored request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: String,
    pub thread_id: String,
    pub run_id: String,
    pub kind: RequestKind,
    pub call_id: String,
    pub tool: String,
    pub summary: String,
    pub why: String,
    pub arguments: Value,
    pub fingerprint: String,
    pub created_at: i64,
    /// None while it waits.
    pub decision: Option<Decision>,
    /// The user's words with the decision.
    pub reason: Option<String>,
    pub decided_at: Option<i64>,
}

/// What deciding a request did.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    pub request: Request,
    /// Other waiting requests of the thread the same decision answered (`allow_for_thread`).
    pub also: Vec<Request>,
}

/// Why a decision cannot be taken; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("thread {thread} has no request {id:?}; `cove threads` lists the requests waiting")]
    NoRequest { thread: String, id: String },
    #[error("request {id} was already answered ({decision}); nothing was changed")]
    AlreadyDecided { id: String, decision: Decision },
    #[error("request {id} asks for {kind}: answer it with {offered}; nothing was changed")]
    NotOffered {
        id: String,
        kind: RequestKind,
        offered: String,
    },
    #[error("{0}")]
    Store(#[from] StoreError),
}

const COLUMNS: &str = "id, thread_id, run_id, kind, call_id, tool, summary, why, arguments, \
                       fingerprint, created_at, decision, reason, decided_at";

fn read_request(r: &Row<'_>) -> rusqlite::Result<Request> {
    let arguments: String = r.get(8)?;
    Ok(Request {
        id: r.get(0)?,
        thread_id: r.get(1)?,
        run_id: r.get(2)?,
        kind: r.get(3)?,
        call_id: r.get(4)?,
        tool: r.get(5)?,
        summary: r.get(6)?,
        why: r.get(7)?,
        arguments: serde_json::from_str(&arguments).unwrap_or(Value::String(arguments)),
        fingerprint: r.get(9)?,
        created_at: r.get(10)?,
        decision: r.get(11)?,
        reason: r.get(12)?,
        decided_at: r.get(13)?,
    })
}

impl Store {
    /// Records a request; it waits until decided.
    pub fn open_request(&self, new: NewRequest) -> Result<Request, StoreError> {
        let request = Request {
            id: new_id(4),
            thread_id: new.thread_id,
            run_id: new.run_id,
            kind: new.kind,
            call_id: new.call_id,
            tool: new.tool,
            summary: new.summary,
            why: new.why,
            arguments: new.arguments,
            fingerprint: new.fingerprint,
            created_at: now_ms(),
            decision: None,
            reason: None,
            decided_at: None,
        };
        self.conn().execute(
            &format!("INSERT INTO requests ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, NULL, NULL, NULL)"),
            params![
                request.id,
                request.thread_id,
                request.run_id,
                request.kind,
                request.call_id,
                request.tool,
                request.summary,
                request.why,
                request.arguments.to_string(),
                request.fingerprint,
                request.created_at,
            ],
        )?;
        Ok(request)
    }

    /// A thread's request.
    pub fn request(&self, thread: &str, id: &str) -> Result<Option<Request>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM requests WHERE thread_id = ?1 AND id = ?2"),
                params![thread, id],
                read_request,
            )
            .optional()?)
    }

    /// A thread's requests still waiting for an answer, oldest first.
    pub fn waiting_requests(&self, thread: &str) -> Result<Vec<Request>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM requests WHERE thread_id = ?1 AND decision IS NULL ORDER BY created_at, id"
        ))?;
        let rows = stmt
            .query_map(params![thread], read_request)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// A thread's permission requests whose call has not been acted on: still waiting, or
    /// decided while no run was there to act (a run killed as it waited). Oldest first.
    pub fn unapplied_requests(&self, thread: &str) -> Result<Vec<Request>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM requests WHERE thread_id = ?1 AND kind = 'permission' AND applied_at IS NULL ORDER BY created_at, id"
        ))?;
        let rows = stmt
            .query_map(params![thread], read_request)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// What the thread's run before `run` ended waiting for and was given since it ended
    /// (an answer, a plan's approval, a permission decided between runs), oldest first.
    pub fn waits_before(&self, thread: &str, run: &str) -> Result<Vec<Request>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM requests WHERE thread_id = ?1 AND decided_at IS NOT NULL \
             AND run_id = (SELECT id FROM runs WHERE thread_id = ?1 AND id != ?2 \
                           ORDER BY started_at DESC LIMIT 1) \
             AND decided_at >= (SELECT ended_at FROM runs WHERE id = requests.run_id) \
             ORDER BY created_at, id"
        ))?;
        let rows = stmt
            .query_map(params![thread, run], read_request)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Records that the run acted on request `id`'s decision (ran the call, or told the
    /// model it was denied).
    pub fn mark_applied(&self, thread: &str, id: &str) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE requests SET applied_at = ?3 WHERE thread_id = ?1 AND id = ?2")?
            .execute(params![thread, id, now_ms()])?;
        Ok(())
    }

    /// Records a request for the user's answer (`Ask`) or approval of a plan (`Plan`) that the
    /// run ended on; `what` is shown as its summary, `arguments` holds the question or plan.
    pub fn open_pause(
        &self,
        thread: &str,
        run: &str,
        kind: RequestKind,
        tool: &str,
        what: &str,
        arguments: Value,
    ) -> Result<Request, StoreError> {
        self.open_request(NewRequest {
            thread_id: thread.to_string(),
            run_id: run.to_string(),
            kind,
            call_id: String::new(),
            tool: tool.to_string(),
            summary: what.to_string(),
            why: String::new(),
            arguments,
            fingerprint: String::new(),
        })
    }

    /// Closes a thread's waiting requests of `kind` with `decision` (an answer that came
    /// another way: the reply that starts the next run, a plan approved through the plans).
    pub fn close_requests(
        &self,
        thread: &str,
        kind: RequestKind,
        decision: Decision,
        reason: Option<&str>,
    ) -> Result<(), StoreError> {
        close_waiting(&self.conn(), thread, kind, decision, reason)?;
        Ok(())
    }

    /// Whether the user allowed calls with `fingerprint` for the whole thread.
    pub fn granted(&self, thread: &str, fingerprint: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn()
            .prepare_cached("SELECT 1 FROM grants WHERE thread_id = ?1 AND fingerprint = ?2")?
            .exists(params![thread, fingerprint])?)
    }

    /// Answers request `id` of `thread`. `allow_for_thread` also grants its fingerprint for
    /// the thread and answers the thread's other waiting requests with it.
    pub fn decide_request(
        &self,
        thread: &str,
        id: &str,
        decision: Decision,
        reason: Option<&str>,
    ) -> Result<Decided, DecideError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(StoreError::from)?;
        let found = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM requests WHERE thread_id = ?1 AND id = ?2"),
                params![thread, id],
                read_request,
            )
            .optional()
            .map_err(StoreError::from)?;
        let Some(mut request) = found else {
            return Err(DecideError::NoRequest {
                thread: thread.to_string(),
                id: id.to_string(),
            });
        };
        if let Some(decided) = request.decision {
            return Err(DecideError::AlreadyDecided {
                id: request.id,
                decision: decided,
            });
        }
        if !request.kind.offered().contains(&decision) {
            let offered: Vec<&str> = request.kind.offered().iter().map(|d| d.as_str()).collect();
            return Err(DecideError::NotOffered {
                id: request.id,
                kind: request.kind,
                offered: offered.join(", "),
            });
        }
        let now = now_ms();
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        let decide = |ids: &[&str]| -> rusqlite::Result<()> {
            let mut stmt = tx.prepare_cached(
                "UPDATE requests SET decision = ?3, reason = ?4, decided_at = ?5
                 WHERE thread_id = ?1 AND id = ?2 AND decision IS NULL",
            )?;
            for id in ids {
                stmt.execute(params![thread, id, decision, reason, now])?;
            }
            Ok(())
        };
        decide(&[&request.id]).map_err(StoreError::from)?;
        let mut also = Vec::new();
        if decision == Decision::AllowForThread {
            tx.execute(
                "INSERT OR IGNORE INTO grants (thread_id, fingerprint, tool, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![thread, request.fingerprint, request.tool, now],
            )
            .map_err(StoreError::from)?;
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM requests
                     WHERE thread_id = ?1 AND fingerprint = ?2 AND decision IS NULL ORDER BY created_at, id"
                ))
                .map_err(StoreError::from)?;
            also = stmt
                .query_map(params![thread, request.fingerprint], read_request)
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(StoreError::from)?;
            drop(stmt);
            let ids: Vec<&str> = also.iter().map(|r| r.id.as_str()).collect();
            decide(&ids).map_err(StoreError::from)?;
        }
        tx.commit().map_err(StoreError::from)?;
        for r in std::iter::once(&mut request).chain(also.iter_mut()) {
            r.decision = Some(decision);
            r.reason = reason.map(str::to_string);
            r.decided_at = Some(now);
        }
        Ok(Decided { request, also })
    }
}

/// Closes a thread's waiting requests of `kind` (the run acted on them at once).
pub(super) fn close_waiting(
    conn: &rusqlite::Connection,
    thread: &str,
    kind: RequestKind,
    decision: Decision,
    reason: Option<&str>,
) -> rusqlite::Result<usize> {
    let now = now_ms();
    conn.prepare_cached(
        "UPDATE requests SET decision = ?3, reason = ?4, decided_at = ?5, applied_at = ?5
         WHERE thread_id = ?1 AND kind = ?2 AND decision IS NULL",
    )?
    .execute(params![thread, kind, decision, reason, now])
}
