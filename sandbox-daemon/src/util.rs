//! Small helpers shared by the endpoint families.

use std::time::{Duration, SystemTime};

/// Longest a task on the blocking pool (file I/O, reading `/proc`, decoding an image) may
/// keep its caller waiting; past it the caller gets an answer, whatever the task is doing.
pub const BLOCKING_DEADLINE: Duration = Duration::from_secs(60);

/// Why a blocking task gave no result.
#[derive(Debug, thiserror::Error)]
pub enum BlockingError {
    /// Retry later, or with less work.
    #[error("the operation did not finish within {} s", BLOCKING_DEADLINE.as_secs())]
    TimedOut,
    /// A bug: the task panicked or was cancelled.
    #[error("the operation's task failed: {0}")]
    Failed(String),
}

/// Runs `op` on the blocking pool, giving up waiting after [`BLOCKING_DEADLINE`].
pub async fn blocking<T: Send + 'static>(
    op: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BlockingError> {
    match tokio::time::timeout(BLOCKING_DEADLINE, tokio::task::spawn_blocking(op)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(BlockingError::Failed(e.to_string())),
        Err(_) => Err(BlockingError::TimedOut),
    }
}

/// `bytes` random bytes from the OS, as lowercase hex. Tokens are made of these, so without
/// a source of randomness (no `getrandom(2)`, no `/dev/urandom`) the daemon stops rather than
/// hand out guessable ones.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if let Err(e) = getrandom::fill(&mut buf) {
        tracing::error!(error = %e, "the system has no source of randomness; stopping");
        std::process::abort();
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 3339 UTC timestamp with second precision.
pub fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

/// Quotes `s` for a POSIX shell as a single word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_hex_has_the_asked_length_and_varies() {
        let a = random_hex(16);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, random_hex(16));
    }

    #[test]
    fn shell_quote_survives_quotes() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
        assert_eq!(shell_quote("plain"), "'plain'");
    }
}
