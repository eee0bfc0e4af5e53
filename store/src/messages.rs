//! A thread's messages: LLM messages (what the model is sent), status messages (the events
//! of its runs) and summaries that stand for a range of LLM messages.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Store, StoreError, now_ms, stored_names};
use cove_protocol::conversation::{ChatMessage, Role};

stored_names! {
    /// What a stored message is.
    pub enum MessageKind {
        User = "user",
        Assistant = "assistant",
        Tool = "tool",
        /// An event of a run.
        Status = "status",
        /// A summary of a range of LLM messages.
        Summary = "summary",
    }
}

impl MessageKind {
    /// Whether messages of this kind are sent to the model.
    pub fn is_llm(self) -> bool {
        matches!(
            self,
            MessageKind::User | MessageKind::Assistant | MessageKind::Tool
        )
    }
}

/// One stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub id: i64,
    pub thread_id: String,
    pub run_id: Option<String>,
    pub kind: MessageKind,
    pub is_llm_message: bool,
    pub content: Value,
    pub created_at: i64,
    /// 0 in the conversation; N when the thread's Nth rewind left it behind.
    #[serde(default)]
    pub branch: i64,
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

/// Stores a message; returns its id. (Cached: a run stores several per iteration.)
fn insert(
    conn: &Connection,
    thread: &str,
    run: Option<&str>,
    kind: MessageKind,
    content: &Value,
) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO messages (thread_id, run_id, kind, is_llm_message, content, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        thread,
        run,
        kind,
        kind.is_llm(),
        content.to_string(),
        now_ms()
    ])?;
    Ok(conn.last_insert_rowid())
}

/// The id of `thread`'s newest message (0 when it has none).
pub(super) fn last_message_id(conn: &Connection, thread: &str) -> Result<i64, StoreError> {
    Ok(conn.query_row(
        "SELECT COALESCE(MAX(id), 0) FROM messages WHERE thread_id = ?1",
        params![thread],
        |r| r.get(0),
    )?)
}

/// Stores an LLM message under its role; returns its id.
pub(super) fn insert_llm(
    conn: &Connection,
    thread: &str,
    run: Option<&str>,
    message: &ChatMessage,
) -> Result<i64, StoreError> {
    let kind = match message.role {
        Role::User => MessageKind::User,
        Role::Assistant => MessageKind::Assistant,
        Role::Tool => MessageKind::Tool,
    };
    let content = serde_json::to_value(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    insert(conn, thread, run, kind, &content)
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

impl Store {
    /// Stores an LLM message; returns its id.
    pub fn append_llm(
        &self,
        thread: &str,
        run: Option<&str>,
        message: &ChatMessage,
    ) -> Result<i64, StoreError> {
        insert_llm(&self.conn(), thread, run, message)
    }

    /// Stores a status message (an event of a run); returns its id.
    pub fn append_status(
        &self,
        thread: &str,
        run: Option<&str>,
        content: &Value,
    ) -> Result<i64, StoreError> {
        insert(&self.conn(), thread, run, MessageKind::Status, content)
    }

    /// The id of `thread`'s newest message (0 when it has none).
    pub fn last_message_id(&self, thread: &str) -> Result<i64, StoreError> {
        last_message_id(&self.conn(), thread)
    }

    /// Every message of a thread, oldest first.
    pub fn messages(&self, thread: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, thread_id, run_id, kind, is_llm_message, content, created_at, branch
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
                    branch: r.get(7)?,
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
             WHERE thread_id = ?1 AND is_llm_message = 1 AND branch = 0 ORDER BY id",
        )?;
        let rows: Vec<(i64, String)> = stmt
            .query_map(params![thread], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        decode_messages(rows)
    }

    /// One stored LLM message of `thread`, if it has that id.
    pub fn llm_message(&self, thread: &str, id: i64) -> Result<Option<ChatMessage>, StoreError> {
        let content: Option<String> = self
            .conn()
            .query_row(
                "SELECT content FROM messages WHERE id = ?1 AND thread_id = ?2 AND is_llm_message = 1 AND branch = 0",
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
             WHERE thread_id = ?1 AND id > ?2 AND kind = ?3 AND branch = 0 ORDER BY id",
        )?;
        let rows: Vec<(i64, String)> = stmt
            .query_map(params![thread, after, MessageKind::User], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<Result<_, _>>()?;
        decode_messages(rows)
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
        insert(&self.conn(), thread, run, MessageKind::Summary, &content)
    }

    /// The newest summary of `thread`.
    pub fn latest_summary(&self, thread: &str) -> Result<Option<Summary>, StoreError> {
        let row: Option<(i64, String)> = self
            .conn()
            .prepare_cached(
                "SELECT id, content FROM messages WHERE thread_id = ?1 AND kind = 'summary'
                 AND branch = 0 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![thread], |r| Ok((r.get(0)?, r.get(1)?)))
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
}
