//! A collector that is not there: every batch fails fast and is counted as failed; nothing
//! is dropped, nothing waits. (One test per binary: the exporter is installed for the whole
//! process.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use cove_telemetry::{Settings, TARGET};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_for_a_collector_that_is_not_there_are_counted_as_failed() {
    // A port that was bound and let go: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let settings = Settings::resolve(
        |name| (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| endpoint.clone()),
        None,
    )
    .unwrap();
    let (installed, error) = cove_telemetry::export::install(
        tracing_subscriber::EnvFilter::new("off"),
        settings.as_ref(),
        "unreachable",
    );
    assert!(error.is_none(), "{error:?}");
    for i in 0..50 {
        let _span = tracing::info_span!(target: TARGET, "work", i).entered();
    }
    installed.shutdown(Duration::from_secs(5));
    let deadline = Instant::now() + Duration::from_secs(5);
    let counts = loop {
        let counts = cove_telemetry::counts::span_counts();
        if counts.failed == 50 || Instant::now() > deadline {
            break counts;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(counts.failed, 50, "{counts:?}");
    assert_eq!((counts.exported, counts.dropped), (0, 0));
}
