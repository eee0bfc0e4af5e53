//! `cargo bench -p cove --bench mcp`: MCP figures, printed as JSON.
//!
//! - `first_call_ms`: from starting `cove run` (a local sandbox) to the scripted model's first
//!   request, with no MCP server and with three stdio servers configured (the reference
//!   `server-everything` on Node, `mcp-server-time` and a server on the Python SDK, each of
//!   which needs 0.7-1 s to start here), p50 and max of several runs; `added_ms` is the
//!   difference of the p50s (target <= 300 ms). The first call waits for servers at most
//!   `mcp_first_call_wait` (0.2 s by default); slower ones join from a later call.
//! - `tool_tokens`: o200k tokens of the first request's tool definitions with a server of 300
//!   tools, listed (a window large enough that they are not deferred) and deferred behind
//!   `mcp_search_tools`, and with no server at all.
//!
//! Needs what `harness/install-test-deps.sh` installs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cove_harness::llm::Received;
use cove_harness::mcp_servers;
use cove_harness::stats::{percentile, round};
use cove_harness::{ScriptedLlm, Turn, workspace_binary};
use serde_json::{Value, json};

const RUNS: usize = 7;

struct Setup {
    home: tempfile::TempDir,
    llm: ScriptedLlm,
}

impl Setup {
    async fn new(servers: Option<Value>, wait_for_all: bool) -> Setup {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("config/cove");
        std::fs::create_dir_all(&dir).unwrap();
        if wait_for_all {
            // For the token figures the first call must see every tool.
            std::fs::write(dir.join("cove.toml"), "mcp_first_call_wait = 60\n").unwrap();
        }
        if let Some(servers) = servers {
            std::fs::write(
                dir.join("mcp.json"),
                json!({ "mcpServers": servers }).to_string(),
            )
            .unwrap();
        }
        Setup {
            home,
            llm: ScriptedLlm::start().await.unwrap(),
        }
    }

    fn command(&self, extra: &[&str]) -> tokio::process::Command {
        let home = self.home.path();
        let workspace = home.join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let mut cmd = tokio::process::Command::new(workspace_binary("cove").unwrap());
        cmd.args([
            "--json",
            "run",
            "go",
            "--model",
            "openai/scripted",
            "--workspace",
            workspace.to_str().unwrap(),
            "--no-prompt",
            "--permissions",
            "yolo",
        ])
        .args(extra)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("COVE_DB", home.join("cove.db"))
        .env("OPENAI_BASE_URL", self.llm.openai_base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("COVE_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .current_dir(home)
        .kill_on_drop(true);
        cmd
    }
}

/// Milliseconds from starting `cove run` to the model's first request.
async fn first_call_ms(setup: &Setup) -> f64 {
    let seen: Arc<Mutex<Option<Instant>>> = Arc::default();
    let mark = seen.clone();
    setup.llm.push_fn(move |_: &Received| {
        mark.lock().unwrap().get_or_insert_with(Instant::now);
        Turn::text("").call("complete", json!({"text": "done"}))
    });
    let started = Instant::now();
    let status = tokio::time::timeout(Duration::from_secs(120), setup.command(&[]).status())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let at = seen.lock().unwrap().expect("the model was called");
    at.duration_since(started).as_secs_f64() * 1000.0
}

fn tool_tokens(request: &Received) -> usize {
    let tools = request.body["tools"].clone();
    let text = if tools.is_null() {
        String::new()
    } else {
        tools.to_string()
    };
    tiktoken_count(&text)
}

fn tiktoken_count(text: &str) -> usize {
    cove_core::context::TokenCounter::for_model("gpt-4o").text(text)
}

async fn first_request(servers: Option<Value>, extra: &[&str]) -> Received {
    let setup = Setup::new(servers, true).await;
    setup
        .llm
        .push(Turn::text("").call("complete", json!({"text": "done"})));
    let status = setup.command(extra).status().await.unwrap();
    assert!(status.success());
    setup.llm.received().into_iter().next().unwrap()
}

fn figures(samples: &mut [f64]) -> Value {
    samples.sort_by(f64::total_cmp);
    json!({"p50": round(percentile(samples, 0.5)), "max": round(samples[samples.len() - 1])})
}

#[tokio::main]
async fn main() {
    let none = Setup::new(None, false).await;
    let three = Setup::new(
        Some(json!({
        "everything": mcp_servers::everything_stdio().unwrap(),
        "time": mcp_servers::time_stdio().unwrap(),
        "catalog": mcp_servers::catalog(3).unwrap(),
        })),
        false,
    )
    .await;
    // One run each first, so page caches are warm for both.
    first_call_ms(&none).await;
    first_call_ms(&three).await;
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        without.push(first_call_ms(&none).await);
        with.push(first_call_ms(&three).await);
    }
    let without = figures(&mut without);
    let with = figures(&mut with);
    let added = with["p50"].as_f64().unwrap() - without["p50"].as_f64().unwrap();

    let catalog = || Some(json!({ "catalog": mcp_servers::catalog(300).unwrap() }));
    let plain = first_request(None, &[]).await;
    let deferred = first_request(catalog(), &[]).await;
    let listed = first_request(catalog(), &["--context-window", "2000000"]).await;
    let report = json!({
        "first_call_ms": {
            "no_servers": without,
            "three_stdio_servers": with,
            "added_ms": round(added),
        },
        "tool_tokens": {
            "no_servers": tool_tokens(&plain),
            "300_tools_listed": tool_tokens(&listed),
            "300_tools_deferred": tool_tokens(&deferred),
        },
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
