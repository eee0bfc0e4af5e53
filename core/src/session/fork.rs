//! A thread branched from a point of another: its conversation the other's up to that
//! point, its workspace a copy of that checkpoint (streamed from one sandbox into another of
//! any provider). The two go on independently.

use cove_protocol::checkpoints::{
    CheckpointCreated, CreateCheckpoint, ImportQuery, RestoreRequest,
};
use cove_protocol::client::CovedClient;

use super::{Engine, SessionError};
use crate::store::{NewThread, Thread, ThreadCheckpoint, ThreadStatus};

/// Where a fork starts: a thread and one of its checkpoints.
#[derive(Debug, Clone)]
pub struct ForkSource {
    pub thread: Thread,
    pub checkpoint: ThreadCheckpoint,
}

/// A fork made.
#[derive(Debug, Clone)]
pub struct Fork {
    pub thread: Thread,
    /// The checkpoint as the new sandbox took it in.
    pub imported: CheckpointCreated,
    /// Messages of the conversation copied.
    pub messages: i64,
}

impl Engine<'_> {
    /// Refuses a fork that would work in `thread`'s own sandbox (`label`): it needs one of its
    /// own to go on apart.
    pub fn check_fork_target(self, thread: &Thread, label: &str) -> Result<(), SessionError> {
        if label == thread.sandbox {
            return Err(SessionError::Invalid(format!(
                "the fork would work in thread {}'s own sandbox ({label}); it needs one of its own",
                thread.id
            )));
        }
        Ok(())
    }

    /// The point a fork of `thread` starts from: its checkpoint `id`, or, with none, the
    /// thread as it is now (a checkpoint taken now over its sandbox's `client`).
    pub async fn fork_source(
        self,
        thread: &str,
        id: Option<&str>,
        client: &CovedClient,
    ) -> Result<ForkSource, SessionError> {
        let thread = self.store.thread(thread)?;
        let checkpoint = match id {
            Some(id) => self.checkpoint(&thread.id, id)?,
            None => {
                if thread.status == ThreadStatus::Running {
                    return Err(SessionError::Invalid(format!(
                        "thread {} is running: fork it from one of its checkpoints (`cove checkpoints {}`), or once its run has ended",
                        thread.id, thread.id
                    )));
                }
                let request = CreateCheckpoint {
                    label: Some(format!("{}: fork", thread.id)),
                    keep: false,
                };
                let made = client.create_checkpoint(&request).await?;
                let now = ThreadCheckpoint {
                    checkpoint: made.checkpoint.id,
                    sandbox: thread.sandbox.clone(),
                    run_id: String::new(),
                    after_message: self.store.last_message_id(&thread.id)?,
                    reason: "fork".into(),
                    files: made.checkpoint.files,
                    changed: made.changed,
                    created_at: 0,
                };
                self.store.add_checkpoint(&thread.id, &now)?;
                now
            }
        };
        Ok(ForkSource { thread, checkpoint })
    }

    /// Makes the fork: the checkpoint streamed from `source` into `target` and restored
    /// there, then thread `id` (in the sandbox `label` names) with the conversation up to the
    /// checkpoint. Nothing is stored when the workspace could not be copied.
    pub async fn fork(
        self,
        from: &ForkSource,
        source: &CovedClient,
        target: &CovedClient,
        id: String,
        label: String,
    ) -> Result<Fork, SessionError> {
        let query = ImportQuery {
            label: Some(format!(
                "fork of {} at {}",
                from.thread.id, from.checkpoint.checkpoint
            )),
        };
        let imported = source
            .copy_checkpoint(&from.checkpoint.checkpoint, target, &query)
            .await?;
        target
            .restore_checkpoint(&imported.checkpoint.id, &RestoreRequest::default())
            .await?;
        let thread = self.store.create_thread(NewThread {
            id,
            title: format!("{} (fork)", from.thread.title)
                .chars()
                .take(200)
                .collect(),
            model: from.thread.model.clone(),
            tool_mode: from.thread.tool_mode.clone(),
            sandbox: label,
            parent: None,
            fork: None,
        })?;
        let last = self.store.copy_conversation(
            &from.thread.id,
            &thread.id,
            from.checkpoint.after_message,
        )?;
        let messages = self
            .store
            .messages(&thread.id)?
            .iter()
            .filter(|m| m.is_llm_message)
            .count() as i64;
        self.store.add_checkpoint(
            &thread.id,
            &ThreadCheckpoint {
                checkpoint: imported.checkpoint.id.clone(),
                sandbox: thread.sandbox.clone(),
                run_id: String::new(),
                after_message: last,
                reason: format!(
                    "forked from {} at {}",
                    from.thread.id, from.checkpoint.checkpoint
                ),
                files: imported.checkpoint.files,
                changed: 0,
                created_at: 0,
            },
        )?;
        self.store
            .set_thread_status(&thread.id, ThreadStatus::Stopped)?;
        let thread = self.store.thread(&thread.id)?;
        Ok(Fork {
            thread,
            imported,
            messages,
        })
    }
}
