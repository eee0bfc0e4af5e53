//! A `spawn_agents` call under way: its sub-agents' threads, recorded while they work, so
//! a controller killed meanwhile takes them up on resume. The call's result is stored in the
//! same transaction that forgets the record.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, now_ms};
use cove_protocol::conversation::ChatMessage;

/// One sub-agent a call started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnedChild {
    /// Its number in the call (from 1).
    pub n: u32,
    pub thread: String,
    /// The tools it was given, when the call named them.
    pub tools: Option<Vec<String>>,
}

/// A `spawn_agents` call whose sub-agents are working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawn {
    pub thread_id: String,
    pub run_id: String,
    pub call_id: String,
    pub tool: String,
    pub children: Vec<SpawnedChild>,
    /// At most this many work at once.
    pub max_parallel: usize,
    /// Why those that could not start did not, for the call's result.
    pub failed: Vec<String>,
}

fn to_json(value: &impl Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn from_json<T: serde::de::DeserializeOwned>(json: &str, thread: &str) -> Result<T, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("spawn of {thread}: {e}")))
}

impl Store {
    /// Records that the thread's run waits for these sub-agents.
    pub fn begin_spawn(&self, spawn: &Spawn) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT OR REPLACE INTO spawns
                 (thread_id, run_id, call_id, tool, children, max_parallel, created_at, failed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                spawn.thread_id,
                spawn.run_id,
                spawn.call_id,
                spawn.tool,
                to_json(&spawn.children)?,
                i64::try_from(spawn.max_parallel).unwrap_or(i64::MAX),
                now_ms(),
                to_json(&spawn.failed)?,
            ],
        )?;
        Ok(())
    }

    /// The `spawn_agents` call under way on a thread, if any (its process may have died).
    pub fn spawn_of(&self, thread: &str) -> Result<Option<Spawn>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT thread_id, run_id, call_id, tool, children, max_parallel, failed
                 FROM spawns WHERE thread_id = ?1",
                params![thread],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, i64>(5)?,
                        r.get::<_, String>(6)?,
                    ))
                },
            )
            .optional()?;
        row.map(
            |(thread_id, run_id, call_id, tool, children, max_parallel, failed)| {
                Ok(Spawn {
                    thread_id,
                    run_id,
                    call_id,
                    tool,
                    children: from_json(&children, thread)?,
                    max_parallel: usize::try_from(max_parallel).unwrap_or(1),
                    failed: from_json(&failed, thread)?,
                })
            },
        )
        .transpose()
    }

    /// Forgets the thread's call without a result (the run was stopped).
    pub fn end_spawn(&self, thread: &str) -> Result<(), StoreError> {
        self.conn()
            .execute("DELETE FROM spawns WHERE thread_id = ?1", params![thread])?;
        Ok(())
    }

    /// Stores the call's result and forgets the record, at once; returns the result's id.
    pub fn deliver_spawn(
        &self,
        thread: &str,
        run: &str,
        result: &ChatMessage,
    ) -> Result<i64, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let id = super::messages::insert_llm(&tx, thread, Some(run), result)?;
        tx.execute("DELETE FROM spawns WHERE thread_id = ?1", params![thread])?;
        tx.commit()?;
        Ok(id)
    }

    /// Gives sub-agent thread `child` the person's answer to the question it asked through
    /// `parent`, and closes the parent's question, at once: the answer is the sub-agent's
    /// next message, whichever run takes it up.
    pub fn answer_sub_agent(
        &self,
        parent: &str,
        child: &str,
        answer: &ChatMessage,
    ) -> Result<i64, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let id = super::messages::insert_llm(&tx, child, None, answer)?;
        super::requests::close_waiting(
            &tx,
            parent,
            super::RequestKind::Ask,
            super::Decision::Answered,
            None,
        )?;
        tx.commit()?;
        Ok(id)
    }
}
