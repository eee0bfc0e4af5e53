//! `GET /v1/idle` against the real binary: the time since the last request, which asking
//! does not reset; busy while a command runs in a session and while a request is in
//! flight (a long poll), idle again once they end.

use std::time::Duration;

use cove_harness::DaemonBuilder;
use cove_protocol::shell::ExecRequest;

#[tokio::test]
async fn idle_is_the_time_since_the_last_use_and_a_running_command_keeps_it_busy() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts");
    let c = &d.client;
    c.info().await.unwrap();
    let first = c.idle().await.unwrap();
    assert!(first.busy.is_empty(), "{first:?}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Asking is not use: the idle time grows between two questions.
    let second = c.idle().await.unwrap();
    assert!(
        second.idle_secs >= first.idle_secs + 0.5,
        "{first:?} then {second:?}"
    );

    // A command still running after its call answered keeps the sandbox busy.
    let mut start = ExecRequest::new("sleep 2; echo done").in_session("build");
    start.blocking = false;
    c.exec(&start).await.unwrap();
    let busy = c.idle().await.unwrap();
    assert_eq!(busy.idle_secs, 0.0, "{busy:?}");
    assert!(
        busy.busy
            .iter()
            .any(|b| b.contains("session build runs `sleep 2; echo done`")),
        "{busy:?}"
    );
    // So does a request in flight: a long poll for events.
    let poll = {
        let c = c.clone();
        tokio::spawn(async move { c.events(0, 2).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let polling = c.idle().await.unwrap();
    assert!(
        polling.busy.iter().any(|b| b.contains("in flight")),
        "{polling:?}"
    );
    let _ = poll.await;
    // Both over, it is idle again, from the end of the last request.
    let mut waited = 0;
    let idle = loop {
        let now = c.idle().await.unwrap();
        if now.busy.is_empty() || waited > 50 {
            break now;
        }
        waited += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(idle.busy.is_empty(), "{idle:?}");
    assert!(idle.idle_secs < 2.0, "{idle:?}");
}
