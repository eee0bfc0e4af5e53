//! `cargo bench -p cove-core --bench controller`: the controller's figures, printed as JSON.
//!
//! - `iteration`: one agent iteration against a zero-latency scripted model on loopback (request
//!   built and sent, streamed answer parsed, one trivial tool run on a real coved, messages
//!   stored in a WAL SQLite file, events emitted), per wire format and tool mode, over a
//!   100-iteration run. `overhead_ms` is the iteration minus the tool's own round trip
//!   (target <= 5 ms).
//!   The runs pass a permission policy of 50 rules (as `cove` runs always have a policy).
//! - `permission_check_us`: one call checked against that policy: a long shell command
//!   (the rules' globs, then `auto`'s reading of the command's words).
//! - `tracing`: the OpenAI native iteration again, three runs with no subscriber (`off`),
//!   then three with the OTLP exporter installed and sending every span to a local
//!   collector (`on`): `overhead_ms_p50` is the median p50 on minus off (target <= 0.3 ms).
//! - `xml_parser_mb_per_s`: the incremental XML tool-call parser fed a long answer in small
//!   streaming deltas and in 4 KiB pieces (target >= 100 MB/s).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::sync::Arc;
use std::time::{Duration, Instant};

use cove_core::agent::xml::{XmlEvent, XmlParser};
use cove_core::agent::{Agent, AgentConfig, RunOutcome, ToolMode};
use cove_core::llm::anthropic::Anthropic;
use cove_core::llm::openai::OpenAi;
use cove_core::llm::profile::ModelProfile;
use cove_core::llm::retry::RetryPolicy;
use cove_core::llm::{ChatMessage, ChatProvider};
use cove_core::permissions::{PermissionsConfig, Policy, RuleConfig};
use cove_core::store::{NewThread, Store};
use cove_harness::llm::Wire;
use cove_harness::otlp::Collector;
use cove_harness::stats::{ms, percentile, round, summary};
use cove_harness::{Chunking, DaemonBuilder, ScriptedLlm, Turn, workspace_binary};
use cove_protocol::client::CovedClient;
use cove_protocol::events::EventKind;
use cove_telemetry::Settings;
use serde_json::{Value, json};

const ITERATIONS: u32 = 100;

/// A policy of 50 rules, none of which matches the bench's tool: each is tried.
fn fifty_rules() -> Policy {
    let rules = |n: usize, tool: &str| -> Vec<RuleConfig> {
        (0..n)
            .map(|i| RuleConfig {
                tool: tool.to_string(),
                pattern: Some(format!("*never-{i}-*")),
            })
            .collect()
    };
    let config = PermissionsConfig {
        mode: None,
        deny: rules(10, "*"),
        ask: rules(20, "*"),
        allow: rules(20, "execute_*"),
    };
    Policy::new(&config, None)
        .unwrap()
        .with_workspace("/workspace")
}

/// Microseconds to check one long command against [`fifty_rules`].
fn permission_check() -> Value {
    let policy = fifty_rules();
    let command = json!({
        "command": "cd app && FOO=1 npm ci && npm run build -- --prod | tee build.log && rm -rf dist/tmp && git status && echo done ".repeat(4)
    });
    let mut samples = Vec::new();
    for _ in 0..2_000 {
        let started = Instant::now();
        std::hint::black_box(policy.check("execute_command", std::hint::black_box(&command)));
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    summary(samples)
}

/// The trivial tool's own round trip, called directly: what an iteration spends outside the
/// controller.
async fn tool_round_trip(client: &CovedClient) -> Vec<f64> {
    for _ in 0..20 {
        client.sessions().await.unwrap();
    }
    let mut samples = Vec::new();
    for _ in 0..300 {
        let started = Instant::now();
        client.sessions().await.unwrap();
        samples.push(ms(started.elapsed()));
    }
    samples
}

async fn iteration(client: &CovedClient, wire: Wire, mode: ToolMode, tool_p50: f64) -> Value {
    let llm = ScriptedLlm::start().await.unwrap();
    llm.set_chunking(Chunking::PerEvent);
    for i in 1..ITERATIONS {
        llm.push(
            Turn::text(format!("Step {i}: listing the running commands."))
                .call("list_commands", json!({})),
        );
    }
    llm.push(Turn::text("All done."));

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("cove.db")).unwrap());
    let thread = store
        .create_thread(NewThread::new(
            "bench",
            "scripted/model",
            mode.as_str(),
            "bench",
        ))
        .unwrap();
    let http = reqwest::Client::new();
    let provider: Arc<dyn ChatProvider> = match wire {
        Wire::OpenAi => Arc::new(OpenAi::new(
            http,
            &llm.openai_base_url(),
            Some("k".into()),
            "openai",
        )),
        Wire::Anthropic => Arc::new(Anthropic::new(http, &llm.anthropic_base_url(), "k".into())),
    };
    let agent = Arc::new(Agent::new(
        AgentConfig::new(
            "scripted",
            "scripted/model",
            ModelProfile {
                vision: true,
                ..ModelProfile::UNKNOWN
            },
            mode,
        )
        .max_tokens(1000)
        .max_iterations(ITERATIONS + 5)
        .max_auto_continues(3)
        .retry(RetryPolicy {
            max_attempts: 2,
            base: Duration::from_millis(10),
            cap: Duration::from_secs(1),
        })
        .permissions(fifty_rules()),
        provider,
        store.clone(),
        client.clone(),
    ));

    // Iterations are timed between consecutive response starts, as the events arrive.
    let started = Instant::now();
    let mut run = agent
        .start(&thread, Some(ChatMessage::user("Benchmark task")))
        .unwrap();
    let (mut starts, mut tools) = (Vec::new(), 0);
    while let Some(event) = run.next_event().await {
        match event.kind {
            EventKind::AssistantResponseStart { .. } => starts.push(Instant::now()),
            EventKind::ToolCompleted { .. } => tools += 1,
            _ => {}
        }
    }
    let outcome = run.outcome().await.unwrap();
    let total = started.elapsed();
    assert!(
        matches!(outcome, RunOutcome::Completed { .. }),
        "the run ended as {outcome:?}"
    );
    assert_eq!(starts.len(), ITERATIONS as usize, "every scripted turn ran");
    assert_eq!(tools, ITERATIONS - 1, "every tool call succeeded");

    let per_iteration: Vec<f64> = starts.windows(2).map(|w| ms(w[1] - w[0])).collect();
    let first: Vec<f64> = per_iteration[..10].to_vec();
    let last: Vec<f64> = per_iteration[per_iteration.len() - 10..].to_vec();
    let mut sorted = per_iteration.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let p50 = percentile(&sorted, 0.5);
    let request_bytes: Vec<usize> = llm
        .received()
        .iter()
        .map(|r| r.body.to_string().len())
        .collect();
    json!({
        "wire": match wire { Wire::OpenAi => "openai", Wire::Anthropic => "anthropic" },
        "mode": mode.as_str(),
        "iterations": ITERATIONS,
        "run_ms": round(ms(total)),
        "iteration_ms": summary(per_iteration),
        "first_10_mean_ms": round(first.iter().sum::<f64>() / 10.0),
        "last_10_mean_ms": round(last.iter().sum::<f64>() / 10.0),
        "overhead_ms_p50": round((p50 - tool_p50).max(0.0)),
        "last_request_kib": round(*request_bytes.last().unwrap_or(&0) as f64 / 1024.0),
    })
}

/// A long answer of prose and file-writing calls whose values hold markup.
fn long_answer(calls: usize) -> String {
    let page: String = (0..60)
        .map(|i| format!("<div class=\"row\" data-i=\"{i}\">a < b && c > d <b>bold</b></div>\n"))
        .collect();
    let mut out = String::new();
    for i in 0..calls {
        out.push_str(&format!(
            "I will now write page {i} of the site, then check it in the browser.\n\n\
             <function_calls>\n<invoke name=\"create_file\">\n\
             <parameter name=\"file_path\">site/page{i}.html</parameter>\n\
             <parameter name=\"file_contents\"><!doctype html>\n<html><body>\n{page}</body></html>\n</parameter>\n\
             </invoke>\n</function_calls>\n"
        ));
    }
    out
}

fn parse_in_pieces(answer: &str, piece: usize) -> usize {
    let mut parser = XmlParser::new();
    let mut events = Vec::new();
    let mut invokes = 0;
    let bytes = answer.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // The answer is ASCII, so any byte offset is a character boundary.
        let end = (at + piece).min(bytes.len());
        parser.push(&answer[at..end], &mut events);
        invokes += events
            .drain(..)
            .filter(|e| matches!(e, XmlEvent::Invoke(_)))
            .count();
        at = end;
    }
    parser.finish(&mut events);
    invokes
        + events
            .iter()
            .filter(|e| matches!(e, XmlEvent::Invoke(_)))
            .count()
}

fn xml_throughput() -> Value {
    let calls = 2000;
    let answer = long_answer(calls);
    let mb = answer.len() as f64 / 1_000_000.0;
    let mut figures = serde_json::Map::new();
    // 16 bytes is about what one streamed delta holds; 4 KiB is a whole network read.
    for piece in [16, 4096] {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            let invokes = parse_in_pieces(&answer, piece);
            best = best.min(started.elapsed().as_secs_f64());
            assert_eq!(invokes, calls, "every call was parsed");
        }
        figures.insert(format!("pieces_of_{piece}_bytes"), json!(round(mb / best)));
    }
    figures.insert("answer_mb".into(), json!(round(mb)));
    Value::Object(figures)
}

/// One iteration's p50 without spans, then with every span exported to a local collector,
/// three runs each (the median of their p50s). Last in the bench: the exporter, once
/// installed, stays for the process.
async fn tracing_on_and_off(client: &CovedClient, tool_p50: f64) -> Value {
    const RUNS: usize = 3;
    let p50s = async |n: usize| {
        let mut p50s = Vec::new();
        for _ in 0..n {
            let run = iteration(client, Wire::OpenAi, ToolMode::Native, tool_p50).await;
            p50s.push(run["iteration_ms"]["p50"].as_f64().unwrap());
        }
        p50s.sort_by(|a, b| a.total_cmp(b));
        p50s
    };
    let off = p50s(RUNS).await;
    let collector = Collector::http().await.unwrap();
    let endpoint = collector.endpoint().to_string();
    let settings = Settings::resolve(
        |name| (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| endpoint.clone()),
        None,
    )
    .unwrap();
    let (installed, error) = cove_telemetry::export::install(
        tracing_subscriber::EnvFilter::new("off"),
        settings.as_ref(),
        "cove-bench",
    );
    assert!(error.is_none() && installed.exporting(), "{error:?}");
    let on = p50s(RUNS).await;
    installed.shutdown(Duration::from_secs(5));
    let spans = collector.spans();
    let tools = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .count();
    assert_eq!(
        tools,
        RUNS * (ITERATIONS as usize - 1),
        "every tool call's span reached the collector: {:?}",
        cove_telemetry::counts::span_counts()
    );
    let (off_median, on_median) = (off[RUNS / 2], on[RUNS / 2]);
    json!({
        "iteration_off_ms_p50s": off,
        "iteration_on_ms_p50s": on,
        "overhead_ms_p50": round(on_median - off_median),
        "spans_exported": spans.len(),
        "spans_dropped": cove_telemetry::counts::span_counts().dropped,
    })
}

#[tokio::main]
async fn main() {
    let xml = xml_throughput();
    let permission = permission_check();

    let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let tool = tool_round_trip(&daemon.client).await;
    let mut sorted = tool.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let tool_p50 = percentile(&sorted, 0.5);

    let mut runs = Vec::new();
    for (wire, mode) in [
        (Wire::OpenAi, ToolMode::Native),
        (Wire::OpenAi, ToolMode::Xml),
        (Wire::Anthropic, ToolMode::Native),
        (Wire::Anthropic, ToolMode::Xml),
    ] {
        runs.push(iteration(&daemon.client, wire, mode, tool_p50).await);
    }

    let tracing = tracing_on_and_off(&daemon.client, tool_p50).await;

    let figures = json!({
        "tracing": tracing,
        "tool_round_trip_ms": summary(tool),
        "iteration": runs,
        "xml_parser_mb_per_s": xml,
        "permission_check_us": permission,
    });
    println!("{}", serde_json::to_string_pretty(&figures).unwrap());
}
