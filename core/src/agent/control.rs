//! What a live run hears from its caller: stop, and the bells rung when a reply or a
//! permission decision was stored for it.

use tokio::sync::futures::Notified;
use tokio::sync::{Notify, watch};

/// What a live run hears from its caller.
#[derive(Debug)]
pub(crate) struct RunControl {
    stop: watch::Sender<bool>,
    /// Rung when a reply was stored for the run's wait, so it need not poll for it.
    replied: Notify,
    /// Rung when a permission request of the run was answered through the handle.
    decided: Notify,
}

impl Default for RunControl {
    fn default() -> Self {
        RunControl {
            stop: watch::Sender::new(false),
            replied: Notify::new(),
            decided: Notify::new(),
        }
    }
}

impl RunControl {
    /// Resolves once the caller has asked the run to stop.
    pub(crate) async fn stopped(&self) {
        let mut stop = self.stop.subscribe();
        // An error means the sender is gone, which cannot happen while `self` lives.
        let _ = stop.wait_for(|stop| *stop).await;
    }

    /// Resolves when a reply may have arrived (or at once if one arrived since the last call).
    pub(crate) async fn replied(&self) {
        self.replied.notified().await;
    }

    /// Resolves when a permission request may have been answered after this call (the
    /// future listens from its creation, before it is first polled).
    pub(crate) fn decided(&self) -> Notified<'_> {
        self.decided.notified()
    }

    /// Asks the run to stop.
    pub(crate) fn stop(&self) {
        self.stop.send_replace(true);
    }

    /// Tells the run a reply was stored for its wait.
    pub(crate) fn reply_stored(&self) {
        self.replied.notify_one();
    }

    /// Tells the run a permission request of its was answered.
    pub(crate) fn decision_stored(&self) {
        self.decided.notify_waiters();
    }
}
