//! `cargo bench -p coved --bench takeover`: the live view's figures over loopback, printed as
//! JSON.
//!
//! - `input_to_next_frame_ms`: a click sent over the takeover socket until the frame showing
//!   its effect arrives, p50 and p99 (target p50 <= 50 ms)
//! - `idle_bytes_per_s`: frame bytes per second while the page is still (target 0)
//! - `scrolling_bytes_per_s` / `scrolling_frames_per_s`: while the wheel scrolls the page
//!   at 30 events a second

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::time::{Duration, Instant};

use cove_harness::live::LiveEvent;
use cove_harness::stats::{round, summary};
use cove_harness::{DaemonBuilder, FixtureSite, LiveClient};
use cove_protocol::browser::{NavigateTo, StateQuery};
use cove_protocol::takeover::StartTakeover;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_coved");
const VW: f64 = 1280.0;
const VH: f64 = 720.0;

/// Reads until nothing arrives for `quiet`.
async fn settle(live: &mut LiveClient, quiet: Duration) {
    while live.next(quiet).await.unwrap().is_some() {}
}

#[tokio::main]
async fn main() {
    let daemon = DaemonBuilder::new(BIN)
        .env("COVED_LOG", "warn")
        .spawn()
        .await
        .unwrap();
    let site = FixtureSite::start().await.unwrap();
    let c = daemon.client.clone();
    c.browser(
        &NavigateTo {
            url: site.url("takeover.html"),
        },
        StateQuery::lean(),
    )
    .await
    .unwrap();
    let grant = c
        .takeover_start(&StartTakeover {
            message: Some("bench".into()),
            ttl_secs: None,
        })
        .await
        .unwrap();
    let mut live = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    live.expect_frame(Duration::from_secs(10)).await.unwrap();
    settle(&mut live, Duration::from_millis(500)).await;

    // A click on Alpha toggles the page's background: one visible change per click.
    let mut latencies = Vec::new();
    let mut frame_sizes = Vec::new();
    for _ in 0..40 {
        settle(&mut live, Duration::from_millis(200)).await;
        let started = Instant::now();
        live.click(200.0, 350.0, VW, VH).await.unwrap();
        let frame = live.expect_frame(Duration::from_secs(5)).await.unwrap();
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        frame_sizes.push(frame.len() as f64);
    }

    settle(&mut live, Duration::from_millis(500)).await;
    let idle_window = Duration::from_secs(5);
    let before = live.frame_bytes;
    let idle_frames = live.frames_during(idle_window).await.unwrap();
    let idle_bytes = live.frame_bytes - before;

    // Scroll down then back up, 30 wheel events a second for 4 s.
    let (bytes_before, frames_before) = (live.frame_bytes, live.frames);
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(33));
    let mut sent = 0;
    while started.elapsed() < Duration::from_secs(4) {
        tokio::select! {
            _ = tick.tick() => {
                let dy = if started.elapsed() < Duration::from_secs(2) { 40.0 } else { -40.0 };
                live.send(json!({"t": "wheel", "x": 640, "y": 400, "w": VW, "h": VH, "dx": 0, "dy": dy}))
                    .await
                    .unwrap();
                sent += 1;
            }
            event = live.next(Duration::from_millis(5)) => {
                if let Some(LiveEvent::Closed) = event.unwrap() {
                    panic!("the socket closed while scrolling");
                }
            }
        }
    }
    let scrolled = started.elapsed().as_secs_f64();
    let scroll_bytes = live.frame_bytes - bytes_before;
    let scroll_frames = live.frames - frames_before;
    live.close().await;
    c.takeover_end().await.unwrap();

    let report = json!({
        "input_to_next_frame_ms": summary(latencies),
        "frame_kib_mean": round(frame_sizes.iter().sum::<f64>() / frame_sizes.len() as f64 / 1024.0),
        "idle_window_s": idle_window.as_secs(),
        "idle_frames": idle_frames,
        "idle_bytes_per_s": round(idle_bytes as f64 / idle_window.as_secs_f64()),
        "scrolling_wheel_events": sent,
        "scrolling_frames_per_s": round(scroll_frames as f64 / scrolled),
        "scrolling_bytes_per_s": round(scroll_bytes as f64 / scrolled),
        "target": {"input_to_next_frame_p50_ms": 50, "idle_bytes_per_s": 0},
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
