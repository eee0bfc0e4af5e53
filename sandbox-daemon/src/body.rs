//! Reading request bodies under a size cap, so an oversized request gets a clean 413.
//!
//! Answering before the body is read makes the server close a connection with unread data,
//! and the client then often sees a reset instead of the answer. So the rest of an oversized
//! body is read and thrown away, up to [`DRAIN_LIMIT`]; beyond that the connection is cut.

use axum::body::BodyDataStream;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

/// Most bytes read and discarded after a body went over its cap.
pub const DRAIN_LIMIT: u64 = 64 * 1024 * 1024;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Send less.
    #[error("the request body is over the {limit}-byte limit")]
    TooLarge { limit: u64 },
    /// The client stopped sending; retry.
    #[error("the request body was cut off: {0}")]
    Interrupted(String),
}

/// Reads the rest of `stream` without keeping it, up to [`DRAIN_LIMIT`] bytes.
pub async fn discard_rest(stream: &mut BodyDataStream) {
    let mut drained: u64 = 0;
    while let Some(Ok(chunk)) = stream.next().await {
        drained += chunk.len() as u64;
        if drained > DRAIN_LIMIT {
            break;
        }
    }
}

/// Reads a whole body of at most `limit` bytes.
pub async fn read_limited(mut stream: BodyDataStream, limit: u64) -> Result<Bytes, BodyError> {
    let mut buf = BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Interrupted(e.to_string()))?;
        if buf.len() as u64 + chunk.len() as u64 > limit {
            discard_rest(&mut stream).await;
            return Err(BodyError::TooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}
