//! `cargo bench -p cove-serve --bench serve`: figures of `cove serve`, printed as JSON.
//!
//! - `streaming_*`: 10 threads run at once (each 5 answers of 1,800 characters, streamed by the
//!   scripted model one SSE event per 9 characters, with a `list_files` call between them,
//!   then `complete`: about 1,050 events a run), watched by 100 SSE clients (10 a thread)
//!   and one client that connects and never reads. `behind_ms` is, for each event a client
//!   got, its arrival minus the moment the engine emitted it (the event's `timestamp_ms`),
//!   over all deliveries and as the worst of each client; target: no client more than
//!   100 ms behind. `events_per_s` is what the server delivered to its clients in all.
//!   `paced_5ms`: the model sends a chunk every 5 ms per run (faster than hosted models
//!   stream); `burst`: as fast as this machine makes them.
//! - `memory`: the server's resident memory (VmRSS) when it has just started, and with 50
//!   threads that ran and stay open in 50 idle event streams (measured first, on the fresh
//!   server; after the first of them too, as the first run loads what all runs share).
//!
//! Everything runs on this machine at once: the server, its local sandboxes, the scripted
//! model and the clients share its cores.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cove_harness::stats::{round, summary};
use cove_harness::{Chunking, ScriptedLlm, Turn, workspace_binary};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const RUNS: usize = 10;
const CLIENTS_PER_RUN: usize = 10;
const ANSWERS: usize = 5;
const IDLE_THREADS: usize = 50;

struct Server {
    child: tokio::process::Child,
    base: String,
    token: String,
    http: reqwest::Client,
    _home: tempfile::TempDir,
}

impl Server {
    async fn start(llm: &ScriptedLlm) -> Server {
        // The server starts a coved beside it for each run.
        workspace_binary("coved").unwrap();
        let home = tempfile::tempdir().unwrap();
        let workspace = home.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let mut child = tokio::process::Command::new(workspace_binary("cove").unwrap())
            .args([
                "--json",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--workspace",
                workspace.to_str().unwrap(),
                "--permissions",
                "yolo",
            ])
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("COVE_DB", home.path().join("cove.db"))
            .env("OPENAI_BASE_URL", llm.openai_base_url())
            .env("OPENAI_API_KEY", "bench")
            .env("COVE_MODEL", "openai/scripted")
            .env("COVE_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let hello: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        Server {
            child,
            base: hello["listening"].as_str().unwrap().to_string(),
            token: hello["token"].as_str().unwrap().to_string(),
            http: reqwest::Client::new(),
            _home: home,
        }
    }

    async fn create(&self, task: &str) -> String {
        let response = self
            .http
            .post(format!("{}/v1/threads", self.base))
            .bearer_auth(&self.token)
            .json(&json!({ "task": task }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let thread: Value = response.json().await.unwrap();
        thread["id"].as_str().unwrap().to_string()
    }

    async fn events(&self, thread: &str) -> reqwest::Response {
        let response = self
            .http
            .get(format!("{}/v1/threads/{thread}/events", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response
    }

    /// Resident memory in KB.
    fn rss_kb(&self) -> u64 {
        let pid = self.child.id().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// Reads one thread's stream to the end of its run: how far behind each event arrived.
async fn watch(response: reqwest::Response, until_runs_end: usize) -> Vec<f64> {
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut behind = Vec::new();
    let mut ends = 0;
    while let Some(chunk) = body.next().await {
        let arrived = now_ms();
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data:")) else {
                continue;
            };
            let event: Value = serde_json::from_str(data.trim_start()).unwrap();
            behind.push(arrived - event["timestamp_ms"].as_f64().unwrap());
            if event["type"] == "error" && event["fatal"] == true && event["run_id"] == "" {
                panic!("a run could not start: {event}");
            }
            if event["type"] == "thread_run_end" {
                ends += 1;
                if ends == until_runs_end {
                    return behind;
                }
            }
        }
    }
    behind
}

/// Answers of about 1,800 characters with a cheap tool call between, then `complete`.
fn script(llm: &ScriptedLlm, runs: usize, answers: usize) {
    let text = "The quick brown fox jumps over the lazy dog while the agent reports. ".repeat(26);
    for _ in 0..runs * (answers + 1) {
        let text = text.clone();
        llm.push_fn(move |request| {
            let done = request.body["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
            if done < answers {
                Turn::text(text.clone()).call("list_files", json!({"path": "."}))
            } else {
                Turn::text("").call("complete", json!({"text": "done"}))
            }
        });
    }
}

/// 10 runs at once, 10 clients each and one that never reads: how far behind they were.
async fn streaming(llm: &ScriptedLlm, server: &Server, chunking: Chunking) -> Value {
    llm.set_chunking(chunking);
    script(llm, RUNS, ANSWERS);
    let started = Instant::now();
    let mut threads = Vec::new();
    for i in 0..RUNS {
        threads.push(server.create(&format!("stream {i}")).await);
    }
    let mut clients = Vec::new();
    for thread in &threads {
        for _ in 0..CLIENTS_PER_RUN {
            let response = server.events(thread).await;
            clients.push(tokio::spawn(watch(response, 1)));
        }
    }
    // A client that never reads: the runs must not wait for it.
    let stalled = server.events(&threads[0]).await;
    let mut all = Vec::new();
    let mut worst = Vec::new();
    for client in clients {
        let behind = client.await.unwrap();
        worst.push(behind.iter().copied().fold(0.0, f64::max));
        all.extend(behind);
    }
    let elapsed = started.elapsed().as_secs_f64();
    drop(stalled);
    let deliveries = all.len();
    let over = worst.iter().filter(|w| **w > 100.0).count();
    json!({
        "runs": RUNS,
        "clients": RUNS * CLIENTS_PER_RUN,
        "stalled_clients": 1,
        "events_per_run": deliveries / (RUNS * CLIENTS_PER_RUN),
        "deliveries": deliveries,
        "seconds": round(elapsed),
        "events_per_s": round(deliveries as f64 / elapsed),
        "behind_ms": summary(all),
        "worst_client_behind_ms": summary(worst),
        "clients_over_100_ms": over,
    })
}

/// `count` threads that ran, each watched by an idle stream: the server's memory then.
async fn idle_threads(
    llm: &ScriptedLlm,
    server: &Server,
    count: usize,
    idle: &mut Vec<tokio::task::JoinHandle<()>>,
) -> f64 {
    script(llm, count, 0);
    for i in 0..count {
        let thread = server.create(&format!("idle {i}")).await;
        let response = server.events(&thread).await;
        idle.push(tokio::spawn(async move {
            // Read to the run's end, then hold the stream open.
            let mut body = response.bytes_stream();
            let mut seen = String::new();
            while !seen.contains("thread_run_end") {
                match body.next().await {
                    Some(Ok(chunk)) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                    _ => break,
                }
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(body);
        }));
    }
    // Until every run has ended and its sandbox closed.
    for _ in 0..600 {
        let response = server
            .http
            .get(format!("{}/v1/threads", server.base))
            .bearer_auth(&server.token)
            .send()
            .await
            .unwrap();
        let list: Value = response.json().await.unwrap();
        let running = list["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["running"] == true)
            .count();
        if running == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    round(server.rss_kb() as f64 / 1024.0)
}

#[tokio::main]
async fn main() {
    let llm = ScriptedLlm::start().await.unwrap();
    llm.set_chunking(Chunking::PerEvent);
    let server = Server::start(&llm).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_start = round(server.rss_kb() as f64 / 1024.0);
    let mut idle = Vec::new();
    // The first run loads what every run shares (the tokenizer's tables among them).
    let rss_one = idle_threads(&llm, &server, 1, &mut idle).await;
    let rss_idle = idle_threads(&llm, &server, IDLE_THREADS - 1, &mut idle).await;
    for task in idle {
        task.abort();
    }
    // A model about as fast as the fastest hosted ones (a chunk every 5 ms per run), then
    // one that streams as fast as the machine allows.
    let paced = streaming(&llm, &server, Chunking::Paced(Duration::from_millis(5))).await;
    let burst = streaming(&llm, &server, Chunking::PerEvent).await;
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "streaming_paced_5ms": paced,
            "streaming_burst": burst,
            "memory": {
                "rss_start_mb": rss_start,
                "rss_1_idle_thread_mb": rss_one,
                "rss_50_idle_threads_mb": rss_idle,
                "idle_streams": IDLE_THREADS,
            },
        }))
        .unwrap()
    );
}
