//! `GET /metrics` of `cove serve` after a scripted run, read by the real Prometheus parser
//! (PyPI `prometheus-client`): its counters agree with the run's stored events and usage;
//! the latencies are histograms; an open event stream is counted; the token is needed.

use std::collections::BTreeMap;

use cove_harness::prometheus::{parse, value};

use super::serve::Server;
use super::*;

#[tokio::test]
async fn the_servers_metrics_agree_with_what_its_runs_stored() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push(
        Turn::text("Two commands and a picture that is not there.")
            .call("execute_command", json!({"command": "echo one"}))
            .call("execute_command", json!({"command": "echo two"}))
            .call("see_image", json!({"file_path": "missing.png"})),
    );
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "done"})));
    let server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Work a little", "model": cove.model()}))
        .await;
    let mut sse = server.stream(&thread, None).await;
    let events = sse.until("thread_run_end").await;

    // What the run's events say, to compare.
    let mut calls: BTreeMap<(String, &str), f64> = BTreeMap::new();
    for (_, e) in &events {
        let outcome = match e["type"].as_str() {
            Some("tool_completed") => "ok",
            Some("tool_failed") => "failed",
            _ => continue,
        };
        *calls
            .entry((e["tool"].as_str().unwrap().to_string(), outcome))
            .or_default() += 1.0;
    }
    assert_eq!(
        calls.get(&("see_image".into(), "failed")),
        Some(&1.0),
        "{calls:?}"
    );
    assert_eq!(calls.get(&("execute_command".into(), "ok")), Some(&2.0));
    let end = &events.last().unwrap().1;
    let usage = &end["usage"];

    let response = server.raw(reqwest::Method::GET, "/metrics").await;
    if response.status() != 200 {
        panic!("{}: {}", response.status(), response.text().await.unwrap());
    }
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let samples = parse(&response.text().await.unwrap()).unwrap();
    let listed: BTreeMap<(String, String), f64> = samples
        .iter()
        .filter(|s| s.name == "cove_tool_calls_total")
        .map(|s| {
            let label = |k: &str| s.labels[k].as_str().unwrap().to_string();
            ((label("tool"), label("outcome")), s.value)
        })
        .collect();
    let expected: BTreeMap<(String, String), f64> = calls
        .iter()
        .map(|((tool, outcome), n)| ((tool.clone(), outcome.to_string()), *n))
        .collect();
    assert_eq!(listed, expected);
    let model = samples
        .iter()
        .find(|s| s.name == "cove_model_calls_total")
        .expect("model calls");
    let model_name = model.labels["model"].as_str().unwrap().to_string();
    assert_eq!(model.value, usage["calls"].as_f64().unwrap());
    let tokens = |kind: &str| {
        value(
            &samples,
            "cove_tokens_total",
            &[("model", &model_name), ("kind", kind)],
        )
    };
    assert_eq!(tokens("input"), usage["input_tokens"].as_f64());
    assert_eq!(tokens("output"), usage["output_tokens"].as_f64());
    assert_eq!(tokens("cached"), usage["cached_tokens"].as_f64());
    assert_eq!(
        value(&samples, "cove_runs", &[("state", "completed")]),
        Some(1.0)
    );
    let tool_calls: f64 = expected.values().sum();
    let timed: f64 = samples
        .iter()
        .filter(|s| s.name == "cove_tool_call_duration_seconds_count")
        .map(|s| s.value)
        .sum();
    assert_eq!(timed, tool_calls, "each call is timed once");
    assert_eq!(
        value(&samples, "cove_model_answer_duration_seconds_count", &[]),
        usage["calls"].as_f64()
    );
    assert_eq!(
        value(&samples, "cove_event_streams", &[]),
        Some(1.0),
        "the stream still open here"
    );
    drop(sse);

    let anonymous = reqwest::get(server.url("/metrics")).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    server.kill().await;
}
