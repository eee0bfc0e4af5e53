//! Work on the blocking pool (file I/O, reading `/proc`, decoding an image) with a deadline
//! on how long its caller waits.

use std::time::Duration;

/// Longest a task on the blocking pool may keep its caller waiting; past it the caller gets
/// an answer, whatever the task is doing.
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
