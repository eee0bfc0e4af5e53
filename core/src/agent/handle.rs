//! The caller's side of a run: its events as they happen, the inputs it accepts while it
//! is live, and how it ended. The CLI, the tests and a server all drive runs through it.

use std::sync::Arc;

use cove_protocol::events::RunEvent;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use super::control::RunControl;
use super::outcome::{RunError, RunOutcome};
use crate::llm::ChatMessage;
use crate::store::{DecideError, Decided, Decision, Store, StoreError};

/// The inputs a live run takes (a reply, a permission decision, stop), apart from its
/// events: a server keeps one while a task reads the events.
#[derive(Debug, Clone)]
pub struct RunController {
    thread_id: String,
    store: Arc<Store>,
    control: Arc<RunControl>,
}

impl RunController {
    /// Hands the user's reply to the run if it is waiting on a person (a takeover); it
    /// ends the wait and goes on. False when the run is not waiting: a run paused on `ask`
    /// has ended, and the reply starts the thread's next run instead.
    pub fn reply(&self, message: &ChatMessage) -> Result<bool, StoreError> {
        let delivered = self.store.deliver_reply(&self.thread_id, message)?;
        if delivered {
            self.control.reply_stored();
        }
        Ok(delivered)
    }

    /// Answers permission request `request_id` of the thread (the decisions of its
    /// `permission_request` event); the waiting call runs, or gets the denial and `reason`.
    pub fn permit(
        &self,
        request_id: &str,
        decision: Decision,
        reason: Option<&str>,
    ) -> Result<Decided, DecideError> {
        let decided = self
            .store
            .decide_request(&self.thread_id, request_id, decision, reason)?;
        self.control.decision_stored();
        Ok(decided)
    }

    /// Stops the run: what it was doing is abandoned (tools in flight are aborted, their
    /// calls get an "interrupted" result on the next run), it is recorded as stopped, and
    /// its last events still arrive. `cove resume` continues the thread.
    pub fn stop(&self) {
        self.control.stop();
    }
}

/// A run under way. Dropping the handle stops the run, as [`RunHandle::stop`] does.
#[derive(Debug)]
pub struct RunHandle {
    run_id: String,
    controller: RunController,
    events: UnboundedReceiver<RunEvent>,
    task: Option<JoinHandle<Result<RunOutcome, RunError>>>,
}

impl RunHandle {
    pub(crate) fn new(
        thread_id: String,
        run_id: String,
        store: Arc<Store>,
        control: Arc<RunControl>,
        events: UnboundedReceiver<RunEvent>,
        task: JoinHandle<Result<RunOutcome, RunError>>,
    ) -> Self {
        RunHandle {
            run_id,
            controller: RunController {
                thread_id,
                store,
                control,
            },
            events,
            task: Some(task),
        }
    }

    /// The thread it runs.
    pub fn thread_id(&self) -> &str {
        &self.controller.thread_id
    }

    /// The run's id in the store.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The next event, in order; none once the run has ended and every event was read.
    pub async fn next_event(&mut self) -> Option<RunEvent> {
        self.events.recv().await
    }

    /// The next event if one is ready now (none also once the run has ended).
    pub fn try_next_event(&mut self) -> Option<RunEvent> {
        self.events.try_recv().ok()
    }

    /// What answers the run while another task reads its events.
    pub fn controller(&self) -> RunController {
        self.controller.clone()
    }

    /// See [`RunController::reply`].
    pub fn reply(&self, message: &ChatMessage) -> Result<bool, StoreError> {
        self.controller.reply(message)
    }

    /// See [`RunController::permit`].
    pub fn permit(
        &self,
        request_id: &str,
        decision: Decision,
        reason: Option<&str>,
    ) -> Result<Decided, DecideError> {
        self.controller.permit(request_id, decision, reason)
    }

    /// See [`RunController::stop`].
    pub fn stop(&self) {
        self.controller.stop();
    }

    /// Reads every event to the end of the run, then returns them with how it ended.
    pub async fn finish(mut self) -> (Vec<RunEvent>, Result<RunOutcome, RunError>) {
        let mut events = Vec::new();
        while let Some(event) = self.next_event().await {
            events.push(event);
        }
        (events, self.outcome().await)
    }

    /// Waits for the run to end; events not read yet are dropped.
    pub async fn outcome(mut self) -> Result<RunOutcome, RunError> {
        self.events.close();
        let Some(task) = self.task.take() else {
            return Err(RunError::Crashed("the run's outcome was taken".into()));
        };
        match task.await {
            Ok(outcome) => outcome,
            Err(e) => Err(RunError::Crashed(e.to_string())),
        }
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        if self.task.is_some() {
            self.stop();
        }
    }
}
