//! `GET /metrics` against the real binary, read by the real Prometheus parser: requests by
//! route and status with their latency, sessions and running commands, memory; behind the
//! token, and asking is not use (an idle sandbox scraped stays idle).

use std::time::Duration;

use cove_harness::DaemonBuilder;
use cove_harness::prometheus::{parse, value};
use cove_protocol::shell::ExecRequest;

#[tokio::test]
async fn metrics_count_what_the_daemon_did_for_a_real_prometheus_parser() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts");
    let c = &d.client;
    c.exec(&ExecRequest::new("sleep 0.2; echo one"))
        .await
        .unwrap();
    c.exec(&ExecRequest::new("echo two").in_session("other"))
        .await
        .unwrap();
    let mut long = ExecRequest::new("sleep 30").in_session("long");
    long.blocking = false;
    c.exec(&long).await.unwrap();
    // A refused request is counted with its status.
    let refused = c.output("nope", 0).await;
    assert!(refused.is_err());

    let samples = parse(&c.metrics().await.unwrap()).unwrap();
    let exec = [("method", "POST"), ("route", "/v1/shell/exec")];
    assert_eq!(
        value(
            &samples,
            "coved_requests_total",
            &[exec[0], exec[1], ("status", "200")]
        ),
        Some(3.0)
    );
    assert_eq!(
        value(
            &samples,
            "coved_requests_total",
            &[
                ("route", "/v1/shell/sessions/{name}/output"),
                ("status", "404")
            ]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(&samples, "coved_request_duration_seconds_count", &exec),
        Some(3.0)
    );
    let sum = value(&samples, "coved_request_duration_seconds_sum", &exec).unwrap();
    assert!(sum >= 0.2, "the sleep is in the latency: {sum}");
    assert_eq!(
        value(
            &samples,
            "coved_request_duration_seconds_bucket",
            &[exec[0], exec[1], ("le", "+Inf")]
        ),
        Some(3.0)
    );
    assert_eq!(value(&samples, "coved_shell_sessions", &[]), Some(3.0));
    assert_eq!(
        value(&samples, "coved_shell_commands_running", &[]),
        Some(1.0)
    );
    assert_eq!(value(&samples, "coved_takeover_active", &[]), Some(0.0));
    let memory = value(&samples, "coved_resident_memory_bytes", &[]).unwrap();
    assert!(memory > 1e6 && memory < 1e9, "{memory}");
    let kinds: Vec<(&str, &str)> = samples
        .iter()
        .map(|s| (s.family.as_str(), s.kind.as_str()))
        .collect();
    assert!(kinds.contains(&("coved_requests", "counter")), "{kinds:?}");
    assert!(kinds.contains(&("coved_request_duration_seconds", "histogram")));

    // Scraping is not use.
    c.delete_session("long").await.unwrap();
    let before = c.idle().await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    c.metrics().await.unwrap();
    let after = c.idle().await.unwrap();
    assert!(
        after.idle_secs >= before.idle_secs + 0.3,
        "{before:?} {after:?}"
    );

    // Behind the token.
    let anonymous = reqwest::get(format!("{}/metrics", d.url)).await.unwrap();
    assert_eq!(anonymous.status(), 401);
}
