//! A watch on a TCP port starting to listen.
//!
//! The kernel tells no one when a socket starts listening, so the socket table is read
//! when it is likely to have changed: whenever a shell session prints (a server says it
//! is up, or is about to be), then again shortly after, backing off while nothing
//! happens, to at most every two seconds.

use std::time::Duration;

use cove_protocol::watches::Happened;
use tokio::sync::watch;

use crate::preview::ports::is_listening;

/// The first look after a session printed.
const SOON: Duration = Duration::from_millis(10);
/// The longest gap between looks while nothing prints.
const LONGEST: Duration = Duration::from_secs(2);

/// Resolves when something listens on `port`.
pub(super) async fn listening(port: u16, mut activity: watch::Receiver<u64>) -> Happened {
    let mut gap = SOON;
    loop {
        // A read of two small /proc files: cheaper than a hop to a blocking thread.
        if is_listening(port) {
            return Happened::Listening { port };
        }
        tokio::select! {
            Ok(()) = activity.changed() => {
                // Let the output that woke us be followed by the bind it announces.
                tokio::time::sleep(SOON).await;
                gap = SOON;
            }
            () = tokio::time::sleep(gap) => gap = (gap * 2).min(LONGEST),
        }
    }
}
