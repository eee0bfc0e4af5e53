//! `cargo bench -p cove --bench parallel`: one controller process driving many runs at
//! once, each on its own local sandbox (a real coved started by the controller), against one
//! scripted model. Printed as JSON: wall time, errors (target 0), runs whose files landed in
//! another run's workspace (target 0), and the controller's peak RSS.
//!
//! `COVE_PARALLEL_RUNS` sets the number of runs (default 50).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::sync::Arc;
use std::time::{Duration, Instant};

use cove_core::agent::{Agent, AgentConfig, RunOutcome, ToolMode};
use cove_core::llm::ChatMessage;
use cove_core::llm::openai::OpenAi;
use cove_core::llm::profile::ModelProfile;
use cove_core::llm::retry::RetryPolicy;
use cove_core::store::{NewThread, Store};
use cove_harness::{ScriptedLlm, Turn, procs, workspace_binary};
use cove_sandbox::{Sandbox, SandboxSpec};
use serde_json::json;

/// The run number a request belongs to, from the marker in its task (`[[run 17]]`).
fn run_number(text: &str) -> u32 {
    text.split("[[run ")
        .nth(1)
        .and_then(|rest| rest.split("]]").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    // The controller finds coved through the environment; set it before any thread starts.
    let coved = workspace_binary("coved").unwrap();
    set_coved(&coved);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

async fn bench() {
    let runs: u32 = std::env::var("COVE_PARALLEL_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let llm = ScriptedLlm::start().await.unwrap();
    // Each run: write its own file, run a command, then complete; answers are chosen by
    // what each request holds, so the order the runs arrive in does not matter.
    for _ in 0..runs * 3 {
        llm.push_fn(|request| {
            let text = request.all_text();
            let n = run_number(&text);
            if !text.contains("file_contents") {
                Turn::text("").call(
                    "create_file",
                    json!({"file_path": "mine.txt", "file_contents": format!("run {n}")}),
                )
            } else if !text.contains("CHECK-42") {
                Turn::text("").call(
                    "execute_command",
                    json!({"command": "cat mine.txt && echo CHECK-$((40 + 2))"}),
                )
            } else {
                Turn::text("").call("complete", json!({"text": format!("run {n} done")}))
            }
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("cove.db")).unwrap());
    let http = reqwest::Client::new();
    let provider = Arc::new(OpenAi::new(
        http,
        &llm.openai_base_url(),
        Some("k".into()),
        "openai",
    ));
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            let me = i32::try_from(std::process::id()).unwrap();
            loop {
                if let Some(rss) = procs::status_kib(me, "VmRSS") {
                    peak.fetch_max(rss, std::sync::atomic::Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    let started = Instant::now();
    let mut tasks = Vec::new();
    for n in 1..=runs {
        let store = store.clone();
        let provider = provider.clone();
        let workspace = dir.path().join(format!("ws-{n}"));
        tasks.push(tokio::spawn(async move {
            let sandbox = Sandbox::open(
                SandboxSpec::Local {
                    workspace: workspace.clone(),
                },
                None,
                None,
                &cove_sandbox::LocalSettings::default(),
            )
            .await
            .map_err(|e| format!("run {n}: sandbox: {e}"))?;
            let thread = store
                .create_thread(NewThread::new(
                    &format!("run {n}"),
                    "openai/scripted",
                    "native",
                    "local",
                ))
                .map_err(|e| e.to_string())?;
            let agent = Arc::new(Agent::new(
                AgentConfig::new(
                    "scripted",
                    "openai/scripted",
                    ModelProfile::UNKNOWN,
                    ToolMode::Native,
                )
                .max_tokens(1000)
                .max_iterations(10)
                .max_auto_continues(1)
                .retry(RetryPolicy {
                    max_attempts: 3,
                    base: Duration::from_millis(50),
                    cap: Duration::from_secs(2),
                }),
                provider,
                store.clone(),
                sandbox.client.clone(),
            ));
            let task = ChatMessage::user(format!("[[run {n}]] Write your file and check it."));
            let outcome = match agent.start(&thread, Some(task)) {
                Ok(run) => run.outcome().await,
                Err(e) => Err(e),
            };
            sandbox.close().await;
            match outcome {
                Ok(RunOutcome::Completed { text, .. }) => {
                    let mine = std::fs::read_to_string(workspace.join("mine.txt"))
                        .map_err(|e| format!("run {n}: {e}"))?;
                    let clean = mine == format!("run {n}") && text == Some(format!("run {n} done"));
                    Ok::<bool, String>(clean)
                }
                other => Err(format!("run {n}: {other:?}")),
            }
        }));
    }
    let mut errors = Vec::new();
    let mut crossed = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(true) => {}
            Ok(false) => crossed += 1,
            Err(e) => errors.push(e),
        }
    }
    let wall = started.elapsed();
    sampler.abort();
    let report = json!({
        "runs": runs,
        "wall_s": (wall.as_secs_f64() * 1000.0).round() / 1000.0,
        "errors": errors.len(),
        "error_samples": errors.iter().take(3).collect::<Vec<_>>(),
        "runs_with_another_runs_result": crossed,
        "model_requests": llm.request_count(),
        "peak_controller_rss_mib": (peak.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1024.0 * 10.0).round() / 10.0,
        "target": {"errors": 0, "runs_with_another_runs_result": 0},
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}

/// Points the controller at the freshly built coved.
#[allow(unsafe_code)]
fn set_coved(coved: &std::path::Path) {
    // SAFETY: called at the top of main, before the runtime or any other thread exists.
    unsafe { std::env::set_var("COVE_COVED_BIN", coved) };
}
