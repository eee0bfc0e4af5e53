//! Going back: a thread's workspace and conversation to one of its checkpoints together
//! (or either alone), the later messages kept aside, never deleted.

use cove_protocol::ErrorCode;
use cove_protocol::checkpoints::{RestoreRequest, RestoreResponse};
use cove_protocol::client::{ClientError, CovedClient};

use super::{Engine, SessionError};
use crate::store::{Rewound, ThreadCheckpoint, ThreadStatus};

/// What a rewind brings back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindScope {
    /// The workspace and the conversation.
    Both,
    /// The workspace only; the conversation goes on from where it is.
    FilesOnly,
    /// The conversation only; the files stay as they are.
    ConversationOnly,
}

/// What a rewind did.
#[derive(Debug, Clone)]
pub struct Rewind {
    pub checkpoint: ThreadCheckpoint,
    /// coved's answer when the files were restored.
    pub files: Option<RestoreResponse>,
    /// The conversation's rewind, when it was taken back.
    pub conversation: Option<Rewound>,
}

impl Engine<'_> {
    /// Checkpoint `id` of thread `thread`, as its runs recorded it.
    pub fn checkpoint(self, thread: &str, id: &str) -> Result<ThreadCheckpoint, SessionError> {
        let thread = self.store.thread(thread)?;
        self.store
            .checkpoints(&thread.id)?
            .into_iter()
            .rev()
            .find(|c| c.checkpoint == id && c.sandbox == thread.sandbox)
            .ok_or_else(|| {
                SessionError::NotFound(format!(
                    "thread {} has no checkpoint {id} in its sandbox; `cove checkpoints {}` lists them",
                    thread.id, thread.id
                ))
            })
    }

    /// Takes thread `thread` back to its checkpoint `id`, over its sandbox's `client`.
    /// Refused while the thread runs; the files first, so a refusal there (a command still
    /// running) leaves the conversation as it was too.
    pub async fn rewind(
        self,
        thread: &str,
        id: &str,
        scope: RewindScope,
        stop_commands: bool,
        client: &CovedClient,
    ) -> Result<Rewind, SessionError> {
        let found = self.store.thread(thread)?;
        if found.status == ThreadStatus::Running {
            return Err(SessionError::Invalid(format!(
                "thread {} is running; rewind it once its run has ended (or been stopped)",
                found.id
            )));
        }
        let checkpoint = self.checkpoint(&found.id, id)?;
        let files = if scope == RewindScope::ConversationOnly {
            None
        } else {
            let request = RestoreRequest { stop_commands };
            Some(
                client
                    .restore_checkpoint(&checkpoint.checkpoint, &request)
                    .await
                    .map_err(restore_error)?,
            )
        };
        let conversation = if scope == RewindScope::FilesOnly {
            None
        } else {
            Some(self.store.rewind_conversation(&found.id, &checkpoint)?)
        };
        Ok(Rewind {
            checkpoint,
            files,
            conversation,
        })
    }
}

fn restore_error(e: ClientError) -> SessionError {
    match e.code() {
        Some(ErrorCode::Busy) => SessionError::Busy(format!(
            "{e}; nothing was rewound (--stop-commands kills those sessions first)"
        )),
        Some(ErrorCode::NotFound) => SessionError::NotFound(format!(
            "{e}; the sandbox no longer has that checkpoint (its store was dropped, or the sandbox is another one)"
        )),
        _ => e.into(),
    }
}
