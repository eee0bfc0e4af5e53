//! `cargo bench -p coved --bench daemon`: coved's figures over loopback, printed as JSON.
//!
//! - `startup_to_health_ms`: process spawn to the first 200 from `/health` (target <= 50 ms)
//! - `idle_rss_kib`: resident memory of a fresh daemon after a few requests (target <= 15 MiB)
//! - `exec_true_ms`: round trip of `exec true` in a warm session, p50 and p99 (target p50 <= 5 ms)
//! - `exec_traced_ms`: the same round trip of a request carrying a `traceparent`, to a coved
//!   that exports no spans (`off`) and to one that exports each request's and command's span
//!   to a local OTLP collector (`on`)
//! - `first_exec_ms`: round trip of the first `exec` of a new session (starts a shell)
//! - `parallel_sleeps_ms`: `sleep 1` in two sessions at once (about 1000, not 2000)
//! - `output_mib_per_s`: PTY output throughput of 200 MB through a session
//! - `browser_*`: the first browser call (Chromium launch included), navigation, state reads
//!   with and without a screenshot, a click with and without a screenshot (target <= 150 ms
//!   with), and the state of a 10,000-element page

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::process::Stdio;
use std::time::{Duration, Instant};

use cove_harness::otlp::Collector;
use cove_harness::stats::{ms, round, summary};
use cove_harness::{DaemonBuilder, FixtureSite, procs};
use cove_protocol::browser::{ClickElement, NavigateTo, StateQuery};
use cove_protocol::client::CovedClient;
use cove_protocol::shell::ExecRequest;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const BIN: &str = env!("CARGO_BIN_EXE_coved");

/// Spawn to first 200 from /health, measured around a bare process (no harness overhead).
async fn startup_once(http: &reqwest::Client) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut child = tokio::process::Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--workspace"])
        .arg(dir.path().join("ws"))
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .env("COVE_TOKEN", "bench-token-0123456789abcdef0123456789")
        .env("COVED_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = BufReader::new(stdout)
        .lines()
        .next_line()
        .await
        .unwrap()
        .unwrap();
    let url = line
        .strip_prefix("coved listening on ")
        .unwrap()
        .to_string();
    loop {
        if let Ok(r) = http.get(format!("{url}/health")).send().await
            && r.status().is_success()
        {
            break;
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let elapsed = ms(started.elapsed());
    child.kill().await.unwrap();
    elapsed
}

async fn exec_ms(client: &CovedClient, req: &ExecRequest) -> f64 {
    let t = Instant::now();
    let out = client.exec(req).await.unwrap();
    assert!(out.completed, "{out:?}");
    ms(t.elapsed())
}

/// An `exec` sent as cove sends it under a tool's span: with a `traceparent`.
async fn traced_exec_ms(client: &CovedClient, req: &ExecRequest) -> f64 {
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let url = client.url(&["v1", "shell", "exec"]).unwrap();
    let t = Instant::now();
    let out: serde_json::Value = client
        .request(reqwest::Method::POST, url)
        .header("traceparent", PARENT)
        .json(req)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(out["completed"], true, "{out}");
    ms(t.elapsed())
}

/// `exec true` with a trace context, to a coved without an exporter and to one with.
async fn exec_traced() -> serde_json::Value {
    let collector = Collector::http().await.unwrap();
    let mut figures = serde_json::Map::new();
    for (name, endpoint) in [("off", None), ("on", Some(collector.endpoint()))] {
        let mut builder = DaemonBuilder::new(BIN).env("COVED_LOG", "warn");
        if let Some(endpoint) = endpoint {
            builder = builder
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
                .env("OTEL_BSP_SCHEDULE_DELAY", "100");
        }
        let d = builder.spawn().await.unwrap();
        let warm = ExecRequest::new("true").in_session("traced");
        for _ in 0..50 {
            traced_exec_ms(&d.client, &warm).await;
        }
        let mut samples = Vec::with_capacity(500);
        for _ in 0..500 {
            samples.push(traced_exec_ms(&d.client, &warm).await);
        }
        figures.insert(name.into(), summary(samples));
    }
    let spans = collector
        .wait_for(Duration::from_secs(10), |spans| {
            spans.iter().filter(|s| s.name == "shell command").count() >= 550
        })
        .await
        .unwrap();
    figures.insert("spans_exported".into(), json!(spans.len()));
    serde_json::Value::Object(figures)
}

#[tokio::main]
async fn main() {
    let http = reqwest::Client::new();

    let mut startup = Vec::new();
    for _ in 0..20 {
        startup.push(startup_once(&http).await);
    }

    let d = DaemonBuilder::new(BIN)
        .env("COVED_LOG", "warn")
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    for _ in 0..5 {
        c.health().await.unwrap();
        c.info().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle_rss = procs::status_kib(d.pid(), "VmRSS").unwrap();

    let mut first_exec = Vec::new();
    for i in 0..10 {
        first_exec
            .push(exec_ms(c, &ExecRequest::new("true").in_session(format!("fresh{i}"))).await);
    }
    let warm = ExecRequest::new("true").in_session("warm");
    for _ in 0..50 {
        exec_ms(c, &warm).await;
    }
    let mut exec_true = Vec::with_capacity(1000);
    for _ in 0..1000 {
        exec_true.push(exec_ms(c, &warm).await);
    }
    let rss_after_sessions = procs::status_kib(d.pid(), "VmRSS").unwrap();

    let a = ExecRequest::new("sleep 1").in_session("par-a");
    let b = ExecRequest::new("sleep 1").in_session("par-b");
    exec_ms(c, &ExecRequest::new("true").in_session("par-a")).await;
    exec_ms(c, &ExecRequest::new("true").in_session("par-b")).await;
    let t = Instant::now();
    let (ra, rb) = tokio::join!(c.exec(&a), c.exec(&b));
    ra.unwrap();
    rb.unwrap();
    let parallel = ms(t.elapsed());

    let bytes: u64 = 200_000_000;
    let t = Instant::now();
    let out = c
        .exec(
            &ExecRequest::new(format!("yes | head -c {bytes}"))
                .in_session("flood")
                .with_timeout(600),
        )
        .await
        .unwrap();
    assert!(
        out.completed && out.output_offset >= bytes,
        "{}",
        out.output_offset
    );
    let throughput = bytes as f64 / (1024.0 * 1024.0) / t.elapsed().as_secs_f64();
    let peak_rss = procs::status_kib(d.pid(), "VmHWM").unwrap();

    let site = FixtureSite::start().await.unwrap();
    let lean = StateQuery::lean();
    let counter = NavigateTo {
        url: site.url("counter.html"),
    };
    let t = Instant::now();
    c.browser(&counter, lean).await.unwrap();
    let browser_first = ms(t.elapsed());
    let mut navigate = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        c.browser(&counter, lean).await.unwrap();
        navigate.push(ms(t.elapsed()));
    }
    let mut state = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        c.browser_state(lean).await.unwrap();
        state.push(ms(t.elapsed()));
    }
    let mut state_shot = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        c.browser_state(StateQuery::default()).await.unwrap();
        state_shot.push(ms(t.elapsed()));
    }
    let mut clicks = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        c.browser(
            &ClickElement {
                index: 1,
                snapshot_id: None,
            },
            lean,
        )
        .await
        .unwrap();
        clicks.push(ms(t.elapsed()));
    }
    let mut clicks_shot = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        c.browser(
            &ClickElement {
                index: 1,
                snapshot_id: None,
            },
            StateQuery::default(),
        )
        .await
        .unwrap();
        clicks_shot.push(ms(t.elapsed()));
    }
    c.browser(
        &NavigateTo {
            url: site.url("huge.html"),
        },
        lean,
    )
    .await
    .unwrap();
    // The viewport's part (the default), and the whole page (`full`, up to the cap).
    let mut huge = Vec::new();
    let mut huge_full = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let s = c.browser_state(lean).await.unwrap();
        assert!(s.elements.contains("[below: "));
        huge.push(ms(t.elapsed()));
        let t = Instant::now();
        let s = c
            .browser_state(StateQuery { full: true, ..lean })
            .await
            .unwrap();
        assert!(s.element_count >= 10_000);
        huge_full.push(ms(t.elapsed()));
    }
    let rss_after_browser = procs::status_kib(d.pid(), "VmRSS").unwrap();
    let traced = exec_traced().await;

    let report = json!({
        "bench": "coved",
        "version": env!("CARGO_PKG_VERSION"),
        "startup_to_health_ms": summary(startup),
        "idle_rss_kib": idle_rss,
        "rss_after_12_sessions_kib": rss_after_sessions,
        "exec_true_ms": summary(exec_true),
        "exec_traced_ms": traced,
        "first_exec_ms": summary(first_exec),
        "parallel_sleeps_ms": round(parallel),
        "output_mib_per_s": round(throughput),
        "peak_rss_kib": peak_rss,
        "browser_first_call_ms": round(browser_first),
        "browser_navigate_ms": summary(navigate),
        "browser_state_ms": summary(state),
        "browser_state_with_screenshot_ms": summary(state_shot),
        "browser_click_ms": summary(clicks),
        "browser_click_with_screenshot_ms": summary(clicks_shot),
        "browser_state_10k_elements_ms": summary(huge),
        "browser_state_10k_elements_full_ms": summary(huge_full),
        "daemon_rss_after_browser_kib": rss_after_browser,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
