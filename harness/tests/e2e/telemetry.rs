//! OpenTelemetry traces of runs, received by a local OTLP collector (the official protobuf
//! types): one trace per run, the model calls after the GenAI conventions, each tool call's
//! span with coved's own spans under it (joined through `traceparent`), the command seeing
//! `TRACEPARENT`, waits between runs as spans, over http/protobuf and gRPC; and a collector
//! that is not there changes nothing in the run.

use std::time::Duration;

use cove_harness::closed_port::ClosedPort;
use cove_harness::otlp::{Collector, Span};

use super::serve::Server;
use super::*;

/// The environment that sends a run's spans to `endpoint` quickly.
fn otel_env(endpoint: &str, protocol: &str) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_string()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.to_string()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_string()),
    ]
}

fn named<'a>(spans: &'a [Span], service: &str, name: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.service == service && s.name == name)
        .collect()
}

fn starting<'a>(spans: &'a [Span], service: &str, prefix: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.service == service && s.name.starts_with(prefix))
        .collect()
}

fn one<'a>(spans: &'a [Span], service: &str, name: &str) -> &'a Span {
    let found = named(spans, service, name);
    assert_eq!(found.len(), 1, "one {service} {name:?} span: {spans:#?}");
    found[0]
}

fn parent_of<'a>(spans: &'a [Span], child: &Span) -> &'a Span {
    spans
        .iter()
        .find(|s| s.span_id == child.parent_id)
        .unwrap_or_else(|| panic!("the parent of {:?} was received", child.name))
}

#[tokio::test]
async fn a_run_is_one_trace_with_coveds_spans_under_its_tool_spans() {
    let collector = Collector::http().await.unwrap();
    let site = FixtureSite::start().await.unwrap();
    let cove = Cove::new(Wire::OpenAi).await;
    cove.share_port(site.port());
    cove.llm.push(Turn::text("Looking at the trace.").call(
        "execute_command",
        json!({"command": "echo \"tp=$TRACEPARENT\""}),
    ));
    cove.llm.push(Turn::text("").call(
        "browser_navigate_to",
        json!({"url": site.url("counter.html")}),
    ));
    // Time for coved's batch to leave before the sandbox is stopped with the run.
    cove.llm
        .push(Turn::text("").call("execute_command", json!({"command": "sleep 1"})));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "traced"})));
    let env = otel_env(collector.endpoint(), "http/protobuf");
    let out = cove
        .start_task_with("Trace a command and a page", "native", &[], &env)
        .await;
    assert!(out.status.success(), "{}", explain(&out));
    let stored = events(&out);
    let output = stored
        .iter()
        .find(|e| e["type"] == "tool_completed" && e["tool"] == "execute_command")
        .map(|e| e.to_string())
        .expect("the command's result");

    let spans = collector
        .wait_for(Duration::from_secs(20), |spans| {
            // The requests end after the spans under them, so those came first. Not the last
            // command's: coved may be stopped with the run before its batch leaves.
            let traced_command = named(spans, "coved", "shell command")
                .into_iter()
                .find(|c| {
                    c.attr("process.command_line")
                        .is_some_and(|l| l.contains("TRACEPARENT"))
                });
            named(spans, "cove", "invoke_agent cove").len() == 1
                && traced_command.is_some_and(|c| spans.iter().any(|s| s.span_id == c.parent_id))
                && named(spans, "coved", "POST /v1/browser/navigate_to").len() == 1
        })
        .await
        .unwrap();

    let run = one(&spans, "cove", "invoke_agent cove");
    assert!(run.parent_id.is_empty(), "the run is the trace's root");
    assert_eq!(
        run.attr("gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(run.attr("cove.run.status").as_deref(), Some("completed"));
    assert_eq!(
        run.attr("gen_ai.conversation.id"),
        Some(thread_of(&stored)),
        "the run's span names its thread"
    );
    for span in &spans {
        assert_eq!(span.trace_id, run.trace_id, "one trace: {span:?}");
    }

    let chats = starting(&spans, "cove", "chat ");
    assert_eq!(chats.len(), 4, "a span per model call");
    let mut input = 0;
    for chat in &chats {
        assert_eq!(chat.parent_id, run.span_id);
        assert_eq!(chat.kind, 3, "a client span");
        assert_eq!(chat.attr("gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(chat.attr("gen_ai.provider.name").as_deref(), Some("openai"));
        assert_eq!(
            chat.attr("gen_ai.request.model").as_deref(),
            Some("scripted")
        );
        assert!(
            chat.attributes
                .contains_key("gen_ai.response.finish_reasons")
        );
        assert!(
            chat.attributes
                .contains_key("gen_ai.usage.cache_read.input_tokens")
        );
        assert!(
            !chat.attributes.contains_key("gen_ai.input.messages"),
            "no content unless asked"
        );
        input += chat.int("gen_ai.usage.input_tokens").expect("input tokens");
    }
    assert_eq!(run.int("gen_ai.usage.input_tokens"), Some(input));

    let tools = starting(&spans, "cove", "execute_tool ");
    assert_eq!(tools.len(), 4);
    for tool in &tools {
        assert_eq!(tool.parent_id, run.span_id, "tools sit under the run");
        assert_eq!(tool.attr("cove.tool.outcome").as_deref(), Some("ok"));
    }
    // A model call's span ends with the call, not with the tools it started.
    let sleep = tools
        .iter()
        .find(|t| {
            t.attr("cove.tool.summary")
                .is_some_and(|s| s.contains("sleep 1"))
        })
        .expect("the sleep's span");
    let asked = chats
        .iter()
        .filter(|c| c.start_ns <= sleep.start_ns)
        .max_by_key(|c| c.start_ns)
        .unwrap();
    assert!(
        asked.end_ns + 500_000_000 < sleep.end_ns,
        "the call that asked for `sleep 1` ended before the sleep did"
    );
    let first_command = tools
        .iter()
        .find(|t| {
            t.attr("cove.tool.summary")
                .is_some_and(|s| s.contains("TRACEPARENT"))
        })
        .expect("the command's span says what it ran");

    // coved's spans: the request under the tool's span, the command under the request.
    let commands = named(&spans, "coved", "shell command");
    let command = commands
        .iter()
        .find(|c| {
            c.attr("process.command_line")
                .is_some_and(|l| l.contains("TRACEPARENT"))
        })
        .unwrap();
    let request = parent_of(&spans, command);
    assert_eq!(request.service, "coved");
    assert_eq!(request.name, "POST /v1/shell/exec");
    assert_eq!(request.kind, 2, "a server span");
    assert_eq!(request.int("http.response.status_code"), Some(200));
    assert_eq!(request.parent_id, first_command.span_id);
    assert_eq!(command.int("process.exit.code"), Some(0));
    let traceparent = format!("tp=00-{}-{}-01", run.trace_id, command.span_id);
    assert!(
        output.contains(&traceparent),
        "the command saw its span as TRACEPARENT ({traceparent}): {output}"
    );

    // The browser's phases under its request, under the navigation's tool span.
    let navigate = tools
        .iter()
        .find(|t| t.attr("gen_ai.tool.name").as_deref() == Some("browser_navigate_to"))
        .unwrap();
    let browser_request = named(&spans, "coved", "POST /v1/browser/navigate_to");
    assert_eq!(browser_request.len(), 1);
    assert_eq!(browser_request[0].parent_id, navigate.span_id);
    for phase in ["browser action", "browser state"] {
        let span = one(&spans, "coved", phase);
        assert_eq!(span.parent_id, browser_request[0].span_id, "{phase}");
    }
    let state = one(&spans, "coved", "browser state");
    for phase in ["browser settle", "browser screenshot"] {
        assert!(
            named(&spans, "coved", phase)
                .iter()
                .any(|s| s.parent_id == state.span_id),
            "{phase} under the state"
        );
    }
}

#[tokio::test]
async fn over_grpc_each_run_is_its_own_trace_and_the_wait_between_them_is_a_span() {
    let collector = Collector::grpc().await.unwrap();
    let cove = Cove::new(Wire::Anthropic).await;
    cove.llm
        .push(Turn::text("").call("ask", json!({"text": "Which colour?"})));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "blue it is"})));
    let mut env = otel_env(collector.endpoint(), "grpc");
    env.push((
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        "true".to_string(),
    ));
    env.push(("OTEL_SERVICE_NAME", "cove-under-test".to_string()));
    let out = cove
        .start_task_with("Paint the shed", "native", &["--sandbox", "host"], &env)
        .await;
    let paused = events(&out);
    assert_eq!(
        paused.last().map(|e| e["status"].clone()),
        Some(json!("paused")),
        "{}",
        explain(&out)
    );
    let thread = thread_of(&paused);
    let mut reply = cove.command(&["--json", "reply", &thread, "Blue, please"]);
    for (key, value) in &env {
        reply.env(key, value);
    }
    let out = reply.output().await.unwrap();
    assert!(out.status.success(), "{}", explain(&out));

    let spans = collector
        .wait_for(Duration::from_secs(20), |spans| {
            named(spans, "cove-under-test", "invoke_agent cove").len() == 2
                && !named(spans, "cove-under-test", "wait ask").is_empty()
        })
        .await
        .unwrap();
    let runs = named(&spans, "cove-under-test", "invoke_agent cove");
    assert_ne!(runs[0].trace_id, runs[1].trace_id, "a trace per run");
    let paused = runs
        .iter()
        .find(|r| r.attr("cove.run.status").as_deref() == Some("paused"))
        .expect("the first run paused");
    let second = runs.iter().find(|r| r.span_id != paused.span_id).unwrap();
    assert_eq!(second.attr("cove.run.status").as_deref(), Some("completed"));

    let wait = one(&spans, "cove-under-test", "wait ask");
    assert_eq!(wait.parent_id, second.span_id, "told in the run it ended");
    assert_eq!(wait.attr("cove.wait.kind").as_deref(), Some("ask"));
    assert!(wait.start_ns < second.start_ns && wait.end_ns >= wait.start_ns);

    let chat = starting(&spans, "cove-under-test", "chat ")
        .into_iter()
        .find(|c| c.trace_id == paused.trace_id)
        .unwrap();
    assert_eq!(
        chat.attr("gen_ai.provider.name").as_deref(),
        Some("anthropic")
    );
    let input = chat
        .attr("gen_ai.input.messages")
        .expect("content asked for");
    assert!(input.contains("Paint the shed"), "{input}");
    let output = chat.attr("gen_ai.output.messages").unwrap();
    assert!(output.contains("Which colour?"), "{output}");
}

#[tokio::test]
async fn a_collector_that_is_not_there_changes_nothing_in_the_run() {
    let closed = ClosedPort::new().unwrap();
    let cove = Cove::new(Wire::OpenAi).await;
    for _ in 0..2 {
        cove.llm.push(Turn::text("").call(
            "execute_command",
            json!({"command": "echo \"tp=$TRACEPARENT\""}),
        ));
        cove.llm
            .push(Turn::text("").call("complete", json!({"text": "done"})));
    }
    let plain = cove.start_task_with("Work", "native", &[], &[]).await;
    let env = otel_env(
        &format!("http://127.0.0.1:{}", closed.port()),
        "http/protobuf",
    );
    let traced = cove.start_task_with("Work", "native", &[], &env).await;
    assert!(plain.status.success(), "{}", explain(&plain));
    assert!(traced.status.success(), "{}", explain(&traced));
    let shape = |out: &Output| -> Vec<String> {
        events(out)
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        shape(&plain),
        shape(&traced),
        "the same run, event for event"
    );
    let said = String::from_utf8_lossy(&traced.stderr);
    assert!(
        said.contains("spans did not reach the OTLP collector (")
            && said.contains("refused or unreachable"),
        "the person is told, once, at the end: {said}"
    );
    let traced_output = String::from_utf8_lossy(&traced.stdout);
    assert!(
        traced_output.contains("tp=00-"),
        "the command still sees the trace"
    );
}

#[tokio::test]
async fn a_served_run_is_traced_as_cove_toml_says_with_what_it_cost() {
    let collector = Collector::http().await.unwrap();
    let cove = Cove::new(Wire::OpenAi).await;
    // No OTEL_* variable: cove.toml alone turns tracing on, and prices the model.
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        format!(
            "[prices.scripted]\ninput = 100.0\noutput = 100.0\n\n[telemetry]\nendpoint = \"{}\"\nservice_name = \"cove-served\"\n",
            collector.endpoint()
        ),
    )
    .unwrap();
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "done"})));
    let server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Say done", "model": cove.model()}))
        .await;
    let mut sse = server.stream(&thread, None).await;
    let events = sse.until("thread_run_end").await;
    let cost = events.last().unwrap().1["cost"].as_f64().expect("a cost");
    // A server's spans leave with the batch (every 5 s by default), not at an exit.
    let spans = collector
        .wait_for(Duration::from_secs(20), |spans| {
            named(spans, "cove-served", "invoke_agent cove").len() == 1
        })
        .await
        .unwrap();
    let run = one(&spans, "cove-served", "invoke_agent cove");
    assert_eq!(
        run.attr("gen_ai.conversation.id").as_deref(),
        Some(thread.as_str())
    );
    let traced = run.attributes["cove.cost_usd"]
        .as_f64()
        .expect("the run's cost");
    assert!((traced - cost).abs() < 1e-9, "{traced} vs {cost}");
    let chat = starting(&spans, "cove-served", "chat ");
    assert_eq!(chat.len(), 1);
    assert!(chat[0].attributes["cove.cost_usd"].as_f64().unwrap() > 0.0);
    server.kill().await;
}
