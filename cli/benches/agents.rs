//! `cargo bench -p cove --bench agents`: three sub-agents side by side against the same
//! three one after another (`max_parallel: 1`). Each sub-agent runs a command that takes a
//! second (its work) and completes; the figure is the parent run's wall time. One real
//! coved is the sandbox; the scripted model answers at once. Printed as JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::sync::Arc;
use std::time::Instant;

use cove_core::agent::{Agent, AgentConfig, RunOutcome, ToolMode};
use cove_core::llm::ChatMessage;
use cove_core::llm::openai::OpenAi;
use cove_core::llm::profile::ModelProfile;
use cove_core::store::{NewThread, Store};
use cove_harness::{DaemonBuilder, DaemonProcess, ScriptedLlm, Turn, workspace_binary};
use serde_json::json;

const AGENTS: usize = 3;
const ROUNDS: usize = 3;

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

/// The model: the parent spawns the sub-agents (`max_parallel` at once) and completes once
/// they have reported; each sub-agent works a second, then completes.
fn script(llm: &ScriptedLlm, max_parallel: usize) {
    for _ in 0..(AGENTS * 2 + 2) {
        llm.push_fn(move |request| {
            let text = request.all_text();
            if text.contains("Your task:\n[[part") {
                if text.contains("exit code 0") {
                    Turn::text("").call("complete", json!({"text": "part done"}))
                } else {
                    Turn::text("").call("execute_command", json!({"command": "sleep 1"}))
                }
            } else if text.contains("Agent 1 (thread") {
                Turn::text("").call("complete", json!({"text": "all done"}))
            } else {
                let agents: Vec<_> = (1..=AGENTS)
                    .map(|n| json!({"task": format!("[[part {n}]] Work a second.")}))
                    .collect();
                Turn::text("").call(
                    "spawn_agents",
                    json!({"agents": agents, "max_parallel": max_parallel}),
                )
            }
        });
    }
}

async fn one_run(daemon: &DaemonProcess, store: &Arc<Store>, max_parallel: usize) -> f64 {
    let llm = ScriptedLlm::start().await.unwrap();
    script(&llm, max_parallel);
    let provider = Arc::new(OpenAi::new(
        reqwest::Client::new(),
        &llm.openai_base_url(),
        Some("k".into()),
        "openai",
    ));
    let agent = Arc::new(Agent::new(
        AgentConfig::new(
            "scripted",
            "openai/scripted",
            ModelProfile::UNKNOWN,
            ToolMode::Native,
        )
        .max_tokens(1000)
        .checkpoints(false),
        provider,
        store.clone(),
        daemon.client.clone(),
    ));
    let thread = store
        .create_thread(NewThread::new(
            "parts",
            "openai/scripted",
            "native",
            "remote",
        ))
        .unwrap();
    let started = Instant::now();
    let run = agent
        .start(&thread, Some(ChatMessage::user("Do the three parts.")))
        .unwrap();
    match run.outcome().await {
        Ok(RunOutcome::Completed { .. }) => {}
        other => panic!("the run ended {other:?}"),
    }
    started.elapsed().as_secs_f64()
}

async fn bench() {
    let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("cove.db")).unwrap());
    let (mut side_by_side, mut in_sequence) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        side_by_side.push(one_run(&daemon, &store, AGENTS).await);
        in_sequence.push(one_run(&daemon, &store, 1).await);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2] * 100.0).round() / 100.0
    };
    let report = json!({
        "agents": AGENTS,
        "work_per_agent_s": 1.0,
        "wall_s": {
            "side_by_side": median(&mut side_by_side),
            "in_sequence": median(&mut in_sequence),
        },
        "rounds": ROUNDS,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
