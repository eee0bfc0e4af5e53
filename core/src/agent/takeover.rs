//! Waiting for a person to hand the browser back after `web_browser_takeover`.
//!
//! The run stays alive and polls the sandbox (a long poll of a second) for the takeover to
//! end; between polls it looks in the store for a reply, delivered by `cove reply` from
//! another terminal or through the run's handle (which also wakes it), and a reply ends the
//! takeover too.

use std::time::{Duration, Instant};

use cove_protocol::client::CovedClient;
use cove_protocol::takeover::{TakeoverEnd, TakeoverGrant};

use super::control::RunControl;
use crate::llm::ChatMessage;
use crate::store::{Store, StoreError};

/// How long each status call waits for the takeover to end.
const POLL_SECS: u64 = 1;
/// How long the sandbox may stay unreachable before the run gives up waiting.
const UNREACHABLE_LIMIT: Duration = Duration::from_secs(120);

/// How the takeover ended.
#[derive(Debug, Clone, PartialEq)]
pub enum HandBack {
    /// The person pressed "Done" on the page.
    HandedBack { note: Option<String> },
    /// Someone ended it through the API.
    Released,
    /// Its time ran out.
    Expired,
    /// `cove reply` answered; the replies are stored already.
    Replied(Vec<(i64, ChatMessage)>),
    /// The sandbox stopped answering; the run pauses.
    Lost(String),
}

impl HandBack {
    /// The reason as the `takeover_ended` event names it.
    pub fn reason(&self) -> &'static str {
        match self {
            HandBack::HandedBack { .. } => "handed_back",
            HandBack::Released => "released",
            HandBack::Expired => "expired",
            HandBack::Replied(_) => "replied",
            HandBack::Lost(_) => "lost",
        }
    }

    /// What the model is told, unless the person's own reply says it.
    pub fn message(&self) -> Option<String> {
        match self {
            HandBack::HandedBack { note: Some(note) } => Some(format!(
                "The person has handed the browser back. Their note: {note}"
            )),
            HandBack::HandedBack { note: None } => {
                Some("The person has handed the browser back.".into())
            }
            HandBack::Released => Some(
                "The browser takeover was ended from outside before the person handed it back; check the page before relying on what they did."
                    .into(),
            ),
            HandBack::Expired => Some(
                "The browser takeover expired before the person handed the browser back; they may not have finished."
                    .into(),
            ),
            HandBack::Replied(_) | HandBack::Lost(_) => None,
        }
    }
}

/// Waits until the takeover `grant` ends, or a reply arrives for the thread; `announce`
/// tells the person once the wait is recorded.
pub(crate) async fn wait_for_hand_back(
    sandbox: &CovedClient,
    store: &Store,
    thread: &str,
    run: &str,
    grant: &TakeoverGrant,
    control: &RunControl,
    announce: impl FnOnce(),
) -> Result<HandBack, StoreError> {
    let after = store.begin_wait(thread, run)?;
    // Ends the wait however this future ends, a stopped run included.
    let _wait = WaitRecord { store, thread };
    announce();
    wait(sandbox, store, thread, after, grant, control).await
}

/// The wait recorded in the store, removed when dropped.
struct WaitRecord<'a> {
    store: &'a Store,
    thread: &'a str,
}

impl Drop for WaitRecord<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.store.end_wait(self.thread) {
            tracing::warn!(error = %e, "cannot clear the takeover wait");
        }
    }
}

async fn wait(
    sandbox: &CovedClient,
    store: &Store,
    thread: &str,
    after: i64,
    grant: &TakeoverGrant,
    control: &RunControl,
) -> Result<HandBack, StoreError> {
    let mut unreachable_since: Option<Instant> = None;
    loop {
        let replies = store.user_messages_after(thread, after)?;
        if !replies.is_empty() {
            // The person answered in the terminal: they are done with the browser.
            if let Err(e) = sandbox.takeover_end().await {
                tracing::warn!(error = %e, "cannot end the takeover after a reply");
            }
            return Ok(HandBack::Replied(replies));
        }
        let status = tokio::select! {
            status = sandbox.takeover_status(POLL_SECS) => status,
            // A reply through the run's handle is looked for at once.
            () = control.replied() => continue,
        };
        match status {
            Ok(status) => {
                unreachable_since = None;
                if status.active.as_ref().is_some_and(|a| a.id == grant.id) {
                    continue;
                }
                return Ok(match status.last_ended.filter(|e| e.id == grant.id) {
                    Some(ended) => match ended.reason {
                        TakeoverEnd::HandedBack => HandBack::HandedBack { note: ended.note },
                        TakeoverEnd::Released => HandBack::Released,
                        TakeoverEnd::Expired => HandBack::Expired,
                    },
                    // The daemon restarted, or another takeover replaced this one.
                    None => HandBack::Released,
                });
            }
            Err(e) => {
                let since = *unreachable_since.get_or_insert_with(Instant::now);
                if since.elapsed() > UNREACHABLE_LIMIT {
                    return Ok(HandBack::Lost(format!(
                        "the sandbox stopped answering while a person had the browser: {e}"
                    )));
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
