//! What became of the spans this process ended: exported, refused by the collector (or not
//! reached), or dropped because the queue was full. Kept in statics so `/metrics` can show
//! them without being handed the exporter.

use std::sync::atomic::{AtomicU64, Ordering};

/// Spans the exporter sent and the collector took.
pub(crate) static EXPORTED: AtomicU64 = AtomicU64::new(0);
/// Spans whose export failed: the collector refused them, could not be reached, or did not
/// answer in time.
pub(crate) static FAILED: AtomicU64 = AtomicU64::new(0);
/// Spans dropped before export because the queue was full.
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);

/// A look at the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpanCounts {
    pub exported: u64,
    pub failed: u64,
    pub dropped: u64,
}

/// The counts since the process started.
pub fn span_counts() -> SpanCounts {
    SpanCounts {
        exported: EXPORTED.load(Ordering::Relaxed),
        failed: FAILED.load(Ordering::Relaxed),
        dropped: DROPPED.load(Ordering::Relaxed),
    }
}

/// The counts as `/metrics` samples, labelled by `outcome`: exported, failed, dropped.
pub fn samples() -> Vec<(Vec<String>, f64)> {
    let counts = span_counts();
    vec![
        (vec!["exported".into()], counts.exported as f64),
        (vec!["failed".into()], counts.failed as f64),
        (vec!["dropped".into()], counts.dropped as f64),
    ]
}
