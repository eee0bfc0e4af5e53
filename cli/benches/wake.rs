//! `cargo bench -p cove --bench wake`: how soon a waiting run wakes, and what a waiting run
//! costs the controller. Printed as JSON.
//!
//! - Wake delay: a run starts a command in the background that writes the time and ends,
//!   watches its exit and waits (`wait_for_events`); the delay is from the time the command
//!   wrote to the moment the run's next model request reaches the scripted model. 30 waits
//!   in one run; target p50 ≤ 50 ms.
//! - Memory: 50 runs in one controller, each waiting on a timer; the controller's RSS while
//!   they all wait, less its RSS before they started, per run.
//!
//! Both use one real coved (the sandbox), started by the bench.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cove_core::agent::{Agent, AgentConfig, RunOutcome, ToolMode};
use cove_core::llm::ChatMessage;
use cove_core::llm::openai::OpenAi;
use cove_core::llm::profile::ModelProfile;
use cove_core::store::{NewThread, Store, ThreadStatus};
use cove_harness::{DaemonBuilder, ScriptedLlm, Turn, procs, workspace_binary};
use serde_json::json;

const WAITS: usize = 30;
const WAITING_RUNS: usize = 50;

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn agent(
    llm: &ScriptedLlm,
    store: &Arc<Store>,
    sandbox: &cove_harness::DaemonProcess,
) -> Arc<Agent> {
    let provider = Arc::new(OpenAi::new(
        reqwest::Client::new(),
        &llm.openai_base_url(),
        Some("k".into()),
        "openai",
    ));
    Arc::new(Agent::new(
        AgentConfig::new(
            "scripted",
            "openai/scripted",
            ModelProfile::UNKNOWN,
            ToolMode::Native,
        )
        .max_tokens(1000)
        .max_iterations(1000)
        .checkpoints(false),
        provider,
        store.clone(),
        sandbox.client.clone(),
    ))
}

async fn bench() {
    let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("cove.db")).unwrap());
    let delays = wake_delays(&daemon, &store).await;
    let per_run = memory_per_waiting_run(&daemon, &store).await;
    let mut sorted = delays.clone();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    let report = json!({
        "wake_delay_ms": {
            "waits": sorted.len(),
            "p50": (pct(0.5) * 10.0).round() / 10.0,
            "p90": (pct(0.9) * 10.0).round() / 10.0,
            "max": (pct(1.0) * 10.0).round() / 10.0,
        },
        "waiting_runs": WAITING_RUNS,
        "controller_kib_per_waiting_run": per_run,
        "target": {"wake_delay_p50_ms": 50},
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}

/// One run that waits `WAITS` times for a command's exit; the delay of each wake.
async fn wake_delays(daemon: &cove_harness::DaemonProcess, store: &Arc<Store>) -> Vec<f64> {
    let llm = ScriptedLlm::start().await.unwrap();
    let woke: Arc<Mutex<Vec<(usize, u128)>>> = Arc::default();
    for i in 0..WAITS {
        let command = format!("(sleep 0.2; date +%s%N > stamp-{i})");
        let start = Turn::text("").call(
            "execute_command",
            json!({"command": command, "session_name": "w", "background": true}),
        );
        if i == 0 {
            llm.push(start);
        } else {
            let woke = woke.clone();
            llm.push_fn(move |_| {
                woke.lock().unwrap().push((i - 1, now_ns()));
                start.clone()
            });
        }
        llm.push(Turn::text("").call(
            "watch",
            json!({"on": "exit", "session_name": "w", "label": format!("command {i}")}),
        ));
        llm.push(Turn::text("").call("wait_for_events", json!({"timeout": 60})));
    }
    {
        let woke = woke.clone();
        llm.push_fn(move |_| {
            woke.lock().unwrap().push((WAITS - 1, now_ns()));
            Turn::text("").call("complete", json!({"text": "done"}))
        });
    }
    let thread = store
        .create_thread(NewThread::new(
            "wake",
            "openai/scripted",
            "native",
            "remote",
        ))
        .unwrap();
    let run = agent(&llm, store, daemon)
        .start(&thread, Some(ChatMessage::user("Wait for each command.")))
        .unwrap();
    match run.outcome().await {
        Ok(RunOutcome::Completed { .. }) => {}
        other => panic!("the waking run ended {other:?}"),
    }
    let woke = woke.lock().unwrap().clone();
    woke.iter()
        .map(|(i, at)| {
            let stamp = std::fs::read_to_string(daemon.path(&format!("stamp-{i}"))).unwrap();
            let event: u128 = stamp.trim().parse().unwrap();
            (*at as f64 - event as f64) / 1e6
        })
        .collect()
}

/// The controller's memory per run waiting on a timer, with `WAITING_RUNS` waiting.
async fn memory_per_waiting_run(daemon: &cove_harness::DaemonProcess, store: &Arc<Store>) -> f64 {
    let llm = ScriptedLlm::start().await.unwrap();
    for _ in 0..WAITING_RUNS {
        llm.push(Turn::text("").call(
            "watch",
            json!({"on": "after", "seconds": 600, "label": "a long pause"}),
        ));
    }
    for _ in 0..WAITING_RUNS {
        llm.push(Turn::text("").call("wait_for_events", json!({"timeout": 600})));
    }
    let me = i32::try_from(std::process::id()).unwrap();
    let agent = agent(&llm, store, daemon);
    // One run first, so what every run shares (the client, the provider) is counted once.
    let mut threads = Vec::new();
    for n in 0..WAITING_RUNS {
        threads.push(
            store
                .create_thread(NewThread::new(
                    &format!("w{n}"),
                    "openai/scripted",
                    "native",
                    "remote",
                ))
                .unwrap(),
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = procs::status_kib(me, "VmRSS").unwrap();
    let mut runs = Vec::new();
    for thread in &threads {
        runs.push(
            agent
                .start(thread, Some(ChatMessage::user("Wait.")))
                .unwrap(),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiting = threads
            .iter()
            .filter(|t| store.thread(&t.id).unwrap().status == ThreadStatus::Waiting)
            .count();
        if waiting == WAITING_RUNS {
            break;
        }
        assert!(Instant::now() < deadline, "only {waiting} runs waiting");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let during = procs::status_kib(me, "VmRSS").unwrap();
    for run in &runs {
        run.stop();
    }
    for run in runs {
        let _ = run.outcome().await;
    }
    ((during.saturating_sub(before)) as f64 / WAITING_RUNS as f64 * 10.0).round() / 10.0
}
