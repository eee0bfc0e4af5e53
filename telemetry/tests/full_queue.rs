//! A collector that takes the connection and never answers: the first batch waits on it,
//! the queue fills, and every span past its bound is dropped and counted, none waited for.
//! (One test per binary: the exporter is installed for the whole process.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use cove_telemetry::{Settings, TARGET};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_past_the_queues_bound_are_dropped_and_counted() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    // Accepts and holds every connection, reading nothing back.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let settings = Settings::resolve(
        |name| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(endpoint.clone()),
            "OTEL_BSP_MAX_QUEUE_SIZE" => Some("8".into()),
            _ => None,
        },
        None,
    )
    .unwrap();
    let (installed, error) = cove_telemetry::export::install(
        tracing_subscriber::EnvFilter::new("off"),
        settings.as_ref(),
        "full-queue",
    );
    assert!(error.is_none(), "{error:?}");
    assert!(installed.exporting());
    for i in 0..1000 {
        let span = tracing::info_span!(target: TARGET, "work", i);
        assert!(cove_telemetry::traceparent_of(&span).is_some());
        drop(span);
    }
    let counts = cove_telemetry::counts::span_counts();
    assert_eq!(counts.dropped, 992, "all but the queue's 8: {counts:?}");
    assert_eq!(counts.exported, 0);
    installed.shutdown(Duration::from_millis(300));
}
