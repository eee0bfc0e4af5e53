//! The queue's bound, counted: a span that would wait past `max_queue_size` is dropped here
//! (and counted) instead of inside the SDK's batch processor, where the count is private;
//! the exporter's results are counted as they come.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

use crate::counts::{DROPPED, EXPORTED, FAILED};

/// Spans handed to the batch processor and not yet exported or failed.
#[derive(Debug, Default)]
pub(super) struct Waiting(AtomicUsize);

impl Waiting {
    /// How many spans wait now.
    pub(super) fn count(&self) -> u64 {
        self.0.load(Ordering::Acquire) as u64
    }
}

/// The batch processor behind a bound of `cap` waiting spans.
#[derive(Debug)]
pub(super) struct Gate<P> {
    pub(super) inner: P,
    pub(super) waiting: Arc<Waiting>,
    pub(super) cap: usize,
}

impl<P: SpanProcessor> SpanProcessor for Gate<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if self.waiting.0.fetch_add(1, Ordering::AcqRel) >= self.cap {
            self.waiting.0.fetch_sub(1, Ordering::AcqRel);
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// An exporter whose batches are counted as exported or failed, and leave the queue.
#[derive(Debug)]
pub(super) struct Counted<E> {
    pub(super) inner: E,
    pub(super) waiting: Arc<Waiting>,
}

/// A batch on its way: failed unless told otherwise, and out of the queue however its
/// export ends (an export the processor gave up on is dropped, not finished).
struct InFlight<'a> {
    waiting: &'a Waiting,
    spans: usize,
    exported: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.waiting.0.fetch_sub(self.spans, Ordering::AcqRel);
        let count = if self.exported { &EXPORTED } else { &FAILED };
        count.fetch_add(self.spans as u64, Ordering::Relaxed);
    }
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let mut flight = InFlight {
            waiting: &self.waiting,
            spans: batch.len(),
            exported: false,
        };
        let result = self.inner.export(batch).await;
        flight.exported = result.is_ok();
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
