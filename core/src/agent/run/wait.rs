//! A run waiting for its watches (`wait_for_events`): recorded in the store while it waits,
//! so a controller killed meanwhile takes it up on resume, and ended with what fired as the
//! call's result.

use std::time::Duration;

use tracing::Instrument;

use cove_protocol::events::EventKind;

use super::{Agent, LiveRun, Recorded, tool_message};
use crate::agent::outcome::{RunError, RunOutcome};
use crate::agent::wake;
use crate::context::Entry;
use crate::store::{EventWait, Store, ThreadWatch, now_ms};
use crate::tools::ToolResult;

/// What the watches are, in a few words.
fn summary(pending: &[ThreadWatch], only: &[String]) -> String {
    let titles: Vec<&str> = pending
        .iter()
        .filter(|w| only.is_empty() || only.contains(&w.id))
        .map(ThreadWatch::title)
        .collect();
    if titles.is_empty() {
        "events".to_string()
    } else {
        titles.join(", ")
    }
}

impl Agent {
    /// The wait a `wait_for_events` call asks for, bounded by `--max-wait`.
    pub(super) fn new_event_wait(
        &self,
        live: &LiveRun,
        call_id: String,
        tool: String,
        timeout_secs: u64,
        watches: Vec<String>,
    ) -> Result<EventWait, RunError> {
        let pending = self.store.pending_watches(&live.thread.id)?;
        let wait = Duration::from_secs(timeout_secs).min(self.config.max_wait);
        let now = now_ms();
        Ok(EventWait {
            thread_id: live.thread.id.clone(),
            run_id: live.run_id.clone(),
            call_id,
            tool,
            summary: summary(&pending, &watches),
            watches,
            created_at: now,
            deadline: now + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX / 2),
        })
    }

    /// Waits, recorded, until a watch fires or the wait runs out, then stores what happened
    /// as the call's result; the run goes on.
    pub(super) async fn await_events(
        &self,
        live: &mut LiveRun,
        mut wait: EventWait,
    ) -> Result<Option<RunOutcome>, RunError> {
        wait.run_id.clone_from(&live.run_id);
        self.store.begin_event_wait(&wait)?;
        let mut recorded = Recorded {
            store: &self.store,
            thread: &wait.thread_id,
            forget: Store::end_event_wait,
            armed: true,
        };
        live.emitter.emit(EventKind::WaitingForEvents {
            waits_for: wait.summary.clone(),
            since: wait.created_at,
            until: wait.deadline,
        });
        let woken = wake::wait(&self.sandbox, &self.store, &wait)
            .instrument(crate::agent::spans::wait("events"))
            .await?;
        let result = ToolResult::ok(woken.text.clone());
        let message = tool_message(self.config.mode, &wait.call_id, &wait.tool, &result);
        let id = self.store.deliver_events(
            &wait.thread_id,
            &live.run_id,
            &message,
            &woken.delivered,
            &woken.lost,
        )?;
        recorded.armed = false;
        drop(recorded);
        live.history.push(Entry::new(id, message, &live.counter));
        live.emitter.emit(EventKind::WaitEnded {
            text: woken.text,
            timed_out: woken.timed_out,
        });
        Ok(None)
    }

    /// Takes up the wait a killed run left: it waits on (to its deadline), or, when the run
    /// starts with the user's message, ends at once with whatever fired meanwhile (the
    /// message comes after the call's result).
    pub(super) async fn resume_event_wait(
        &self,
        live: &mut LiveRun,
        with_message: bool,
    ) -> Result<Option<RunOutcome>, RunError> {
        let Some(mut wait) = self.store.event_wait(&live.thread.id)? else {
            return Ok(None);
        };
        if with_message {
            wait.deadline = now_ms();
        }
        self.await_events(live, wait).await
    }
}
