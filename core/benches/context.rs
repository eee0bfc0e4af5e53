//! `cargo bench -p cove-core --bench context`: context management figures, printed as JSON.
//!
//! - `run`: a 300-iteration scripted run (OpenAI wire, native tools, `gpt-4o` counted with
//!   tiktoken) whose every tool result is a ~20 KB file read, in a 40,000-token window, with
//!   compression on and off: prompt tokens sent per iteration as the scripted provider bills
//!   them, and whether any request exceeded the window.
//! - `fit_ms`: planning and building one call's context over 500 stored messages (250 tool
//!   calls and their 20 KB results), in a 40k and a 128k window (target <= 5 ms).
//! - `count_ms_per_20kb_message`: counting a new message once, when it is stored.
//! - `caching`: the same 300-iteration run over the Anthropic wire (Claude Sonnet 4.5's
//!   prices), in the 40k window and in a 128k one, with compression planned afresh for every
//!   call (as before) and prefix-stable: the share of prompt tokens that repeat the start of
//!   the previous request (what a prompt cache can serve), the tokens the scripted provider's
//!   cache simulation read and wrote, and the run's cost at the published prices with caching
//!   against the same tokens without it; then a tight window (16,000 tokens, ~24 KB results,
//!   prefix-stable) over both wires (Claude Sonnet 4.5, GPT-4o).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::sync::Arc;
use std::time::{Duration, Instant};

use cove_core::agent::{Agent, AgentConfig, RunOutcome, ToolMode};
use cove_core::context::{
    Budget, Calibration, ContextMode, ContextSettings, Entry, TokenCounter, fit,
};
use cove_core::llm::anthropic::Anthropic;
use cove_core::llm::openai::OpenAi;
use cove_core::llm::price::PriceTable;
use cove_core::llm::profile::ModelProfile;
use cove_core::llm::{ChatMessage, ToolCall};
use cove_core::store::{NewThread, Store};
use cove_harness::prompt_cache::repeated_prefix;
use cove_harness::stats::{round, summary};
use cove_harness::{Chunking, DaemonBuilder, ScriptedLlm, Turn, log_text, workspace_binary};
use serde_json::{Value, json};

const ITERATIONS: usize = 300;
const WINDOW: u32 = 40_000;

async fn scripted_run(mode: ContextMode) -> Value {
    let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    std::fs::write(daemon.path("log.txt"), log_text()).unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    llm.set_chunking(Chunking::PerEvent);
    for i in 1..ITERATIONS {
        llm.push(
            Turn::text(format!("Pass {i}.")).call("read_file", json!({"file_path": "log.txt"})),
        );
    }
    llm.push(Turn::text("").call("complete", json!({"text": "done"})));
    let store = Arc::new(Store::in_memory().unwrap());
    let thread = store
        .create_thread(NewThread::new("bench", "gpt-4o", "native", "bench"))
        .unwrap();
    let agent = Arc::new(Agent::new(
        AgentConfig::new(
            "gpt-4o",
            "scripted/gpt-4o",
            ModelProfile {
                context_window: WINDOW,
                max_output: 4_000,
                vision: false,
            },
            ToolMode::Native,
        )
        .max_tokens(4_000)
        .max_iterations(ITERATIONS as u32 + 10)
        .max_auto_continues(3)
        .context(ContextSettings {
            mode,
            ..ContextSettings::default()
        }),
        Arc::new(OpenAi::new(
            reqwest::Client::new(),
            &llm.openai_base_url(),
            Some("k".into()),
            "openai",
        )),
        store,
        daemon.client.clone(),
    ));
    let started = Instant::now();
    let outcome = agent
        .start(&thread, Some(ChatMessage::user("Audit the log.")))
        .unwrap()
        .outcome()
        .await
        .unwrap();
    let wall = started.elapsed();
    assert!(matches!(outcome, RunOutcome::Completed { .. }));
    let requests = llm.received();
    assert_eq!(requests.len(), ITERATIONS);
    let tokens: Vec<f64> = requests.iter().map(|r| r.prompt_tokens() as f64).collect();
    let over = requests
        .iter()
        .filter(|r| r.prompt_tokens() as u64 + r.max_tokens() > u64::from(WINDOW))
        .count();
    json!({
        "context": mode.as_str(),
        "prompt_tokens_per_iteration": summary(tokens.clone()),
        "prompt_tokens_last": tokens.last().copied().unwrap_or(0.0),
        "prompt_tokens_total": tokens.iter().sum::<f64>(),
        "requests_over_window": over,
        "run_s": round(wall.as_secs_f64()),
    })
}

/// Which provider a caching run speaks to, and the model it prices.
#[derive(Clone, Copy)]
enum Wire {
    Anthropic,
    OpenAi,
}

/// The 300-iteration run over `wire` with compression planned afresh or kept prefix-stable,
/// in `window`, reading a file of `file` bytes each time: how much of each prompt a cache
/// could serve, and the cost.
async fn caching_run(prefix_stable: bool, window: u32, wire: Wire, file: usize) -> Value {
    let model = match wire {
        Wire::Anthropic => "claude-sonnet-4-5",
        Wire::OpenAi => "gpt-4o",
    };
    let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let mut text = log_text();
    while text.len() < file {
        text.push_str(&log_text());
    }
    text.truncate(file);
    std::fs::write(daemon.path("log.txt"), text).unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    llm.set_chunking(Chunking::PerEvent);
    for i in 1..ITERATIONS {
        llm.push(
            Turn::text(format!("Pass {i}.")).call("read_file", json!({"file_path": "log.txt"})),
        );
    }
    llm.push(Turn::text("").call("complete", json!({"text": "done"})));
    let store = Arc::new(Store::in_memory().unwrap());
    let thread = store
        .create_thread(NewThread::new("bench", model, "native", "bench"))
        .unwrap();
    let provider: Arc<dyn cove_core::llm::ChatProvider> = match wire {
        Wire::Anthropic => Arc::new(Anthropic::new(
            reqwest::Client::new(),
            &llm.anthropic_base_url(),
            "k".into(),
        )),
        Wire::OpenAi => Arc::new(OpenAi::new(
            reqwest::Client::new(),
            &llm.openai_base_url(),
            Some("k".into()),
            "openai",
        )),
    };
    let agent = Arc::new(Agent::new(
        AgentConfig::new(
            model,
            format!("scripted/{model}"),
            ModelProfile {
                context_window: window,
                max_output: 4_000,
                vision: false,
            },
            ToolMode::Native,
        )
        .max_tokens(4_000)
        .max_iterations(ITERATIONS as u32 + 10)
        .context(ContextSettings {
            prefix_stable,
            ..ContextSettings::default()
        }),
        provider,
        store.clone(),
        daemon.client.clone(),
    ));
    let outcome = agent
        .start(&thread, Some(ChatMessage::user("Audit the log.")))
        .unwrap()
        .outcome()
        .await
        .unwrap();
    assert!(matches!(outcome, RunOutcome::Completed { .. }));
    let requests = llm.received();
    let (mut repeated, mut sent) = (0, 0);
    for pair in requests.windows(2) {
        let prompt = pair[1].prompt_tokens();
        repeated += repeated_prefix(&pair[0], &pair[1]).min(prompt);
        sent += prompt;
    }
    let run = store.last_run(&thread.id).unwrap().unwrap();
    let usage = store.run_usage(&run.id).unwrap();
    let price = PriceTable::default().price(model).unwrap();
    let t = usage.tokens;
    let uncached =
        (t.input_tokens as f64 * price.input + t.output_tokens as f64 * price.output) / 1e6;
    let cached = usage.cost.unwrap();
    json!({
        "compression": if prefix_stable { "prefix-stable" } else { "afresh" },
        "wire": match wire { Wire::Anthropic => "anthropic", Wire::OpenAi => "openai" },
        "window": window,
        "result_bytes": file,
        "repeated_prefix_share": round(repeated as f64 / sent as f64),
        "prompt_tokens": t.input_tokens,
        "cache_read_tokens": t.cached_tokens,
        "cache_write_tokens": t.cache_write_tokens,
        "cost_usd_with_caching": round(cached),
        "cost_usd_without_caching": round(uncached),
        "saved": round(1.0 - cached / uncached),
    })
}

/// 500 stored messages: the task, then 250 calls with long arguments and their results.
fn history(counter: &TokenCounter) -> (Vec<Entry>, Vec<f64>) {
    let log = log_text();
    let mut count_ms = Vec::new();
    let mut entries = vec![Entry::new(1, ChatMessage::user("Audit the log."), counter)];
    for t in 0..250 {
        let id = 2 + 2 * t as i64;
        let mut a = ChatMessage::assistant(format!("Pass {t}."));
        a.tool_calls.push(ToolCall {
            id: format!("c{t}"),
            name: "create_file".into(),
            arguments: json!({"file_path": format!("out{t}.txt"), "file_contents": &log[..2_000]}),
        });
        entries.push(Entry::new(id, a, counter));
        let result = ChatMessage::tool_result(&format!("c{t}"), "read_file", log.clone(), false);
        let started = Instant::now();
        let entry = Entry::new(id + 1, result, counter);
        count_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        entries.push(entry);
    }
    entries.truncate(500);
    (entries, count_ms)
}

fn fit_ms(entries: &[Entry], window: usize) -> Value {
    let budget = Budget {
        window,
        max_tokens: 4_000,
        fixed: 8_000,
    };
    let calibration = Calibration::default();
    for _ in 0..5 {
        fit(entries, budget, &calibration).unwrap();
    }
    let mut samples = Vec::new();
    let mut stats = None;
    for _ in 0..100 {
        let started = Instant::now();
        let fitted = fit(entries, budget, &calibration).unwrap();
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        stats = Some(fitted.stats);
    }
    let stats = stats.unwrap();
    json!({
        "window": window,
        "messages": entries.len(),
        "ms": summary(samples),
        "tokens_before": stats.tokens_before,
        "tokens_after": stats.tokens_after,
        "truncated": stats.truncated,
        "omitted": stats.omitted,
    })
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let counter = TokenCounter::for_model("gpt-4o");
    let (entries, count_ms) = history(&counter);
    let fits = vec![fit_ms(&entries, 40_000), fit_ms(&entries, 128_000)];
    let runs = runtime.block_on(async {
        let on = scripted_run(ContextMode::Truncate).await;
        let off = scripted_run(ContextMode::Off).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        vec![on, off]
    });
    let caching = runtime.block_on(async {
        let mut out = Vec::new();
        for window in [WINDOW, 128_000] {
            for stable in [false, true] {
                out.push(caching_run(stable, window, Wire::Anthropic, 20_000).await);
            }
        }
        // A tight window: 16k tokens, results of about 24 KB, on both wires.
        for wire in [Wire::Anthropic, Wire::OpenAi] {
            out.push(caching_run(true, 16_000, wire, 24_000).await);
        }
        out
    });
    let report = json!({
        "bench": "cove-context",
        "run": runs,
        "fit_ms": fits,
        "count_ms_per_20kb_message": summary(count_ms),
        "caching": caching,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
