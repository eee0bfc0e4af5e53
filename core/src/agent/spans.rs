//! A run as OpenTelemetry spans: the run (`invoke_agent`), each model call (`chat`, after the
//! GenAI semantic conventions), each tool call (`execute_tool`) and each wait. They are
//! `tracing` spans with [`cove_telemetry::TARGET`]: when no exporter is installed they are
//! disabled where they are made, and recording into them does nothing.

use std::time::{Duration, SystemTime};

use cove_protocol::events::{FinishReason, RunStatus};
use opentelemetry::KeyValue;
use serde_json::{Value, json};
use tracing::Span;
use tracing::field::Empty;

use crate::llm::{ChatMessage, ChatRequest, ContentPart, Role, Usage};
use crate::store::{Request, RunUsage};
use crate::tools::ToolResult;

/// The run's span, under the span current where it starts (a sub-agent's under its
/// parent's), or the root of a new trace.
pub(crate) fn run(thread: &str, run: &str, model: &str, provider: &str) -> Span {
    tracing::info_span!(
        target: cove_telemetry::TARGET,
        "invoke_agent",
        otel.name = "invoke_agent cove",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "cove",
        gen_ai.conversation.id = thread,
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        cove.run.id = run,
        cove.run.status = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        cove.model_calls = Empty,
        cove.cost_usd = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Records how the run ended and what it spent.
pub(crate) fn run_ended(span: &Span, status: RunStatus, spent: &RunUsage, error: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    span.record("cove.run.status", status_name(status));
    span.record("gen_ai.usage.input_tokens", int(spent.tokens.input_tokens));
    span.record(
        "gen_ai.usage.output_tokens",
        int(spent.tokens.output_tokens),
    );
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(spent.tokens.cached_tokens),
    );
    span.record("cove.model_calls", i64::from(spent.tokens.calls));
    if let Some(cost) = spent.cost {
        span.record("cove.cost_usd", cost);
    }
    if let Some(error) = error {
        span.record("otel.status_code", "ERROR");
        span.record("otel.status_description", error);
    }
}

/// Captured content is bounded: a call's span shows its last messages, each attribute at
/// most 64 KiB, so a long run's spans stay small for the queue and the collector.
const CONTENT_MESSAGES: usize = 8;
const CONTENT_BYTES: usize = 64 * 1024;

fn capped(mut text: String) -> String {
    if text.len() > CONTENT_BYTES {
        let mut cut = CONTENT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("…[truncated]");
    }
    text
}

/// A count as OpenTelemetry's integers hold it (the tracing bridge writes `u64` as text).
fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

fn status_name(status: RunStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A model call's span.
pub(crate) fn chat(provider: &str, request: &ChatRequest, iteration: u32) -> Span {
    let span = tracing::info_span!(
        target: cove_telemetry::TARGET,
        "chat",
        otel.name = %format_args!("chat {}", request.model),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = %request.model,
        gen_ai.request.max_tokens = i64::from(request.max_tokens),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        cove.cost_usd = Empty,
        cove.iteration = i64::from(iteration),
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if !span.is_disabled() && cove_telemetry::capture_content() {
        cove_telemetry::set_attribute(
            &span,
            "gen_ai.system_instructions",
            capped(json!([{ "type": "text", "content": request.system }]).to_string()),
        );
        // The newest messages: what this call added is at the end.
        let start = request.messages.len().saturating_sub(CONTENT_MESSAGES);
        let input: Vec<Value> = request.messages[start..].iter().map(message).collect();
        cove_telemetry::set_attribute(
            &span,
            "gen_ai.input.messages",
            capped(Value::from(input).to_string()),
        );
    }
    span
}

/// Records what a model call answered and cost.
pub(crate) fn chat_answered(
    span: &Span,
    usage: &Usage,
    cost: Option<f64>,
    finish: FinishReason,
    output: impl FnOnce() -> Value,
) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(usage.cached_tokens),
    );
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        int(usage.cache_write_tokens),
    );
    if let Some(cost) = cost {
        span.record("cove.cost_usd", cost);
    }
    let reason = finish_name(finish);
    cove_telemetry::set_strings(span, "gen_ai.response.finish_reasons", vec![reason.clone()]);
    if cove_telemetry::capture_content() {
        let mut answer = output();
        if let Some(object) = answer.as_object_mut() {
            object.insert("finish_reason".into(), reason.into());
        }
        cove_telemetry::set_attribute(
            span,
            "gen_ai.output.messages",
            capped(json!([answer]).to_string()),
        );
    }
}

/// Records a model call that failed.
pub(crate) fn chat_failed(span: &Span, kind: &str, error: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", error);
}

fn finish_name(finish: FinishReason) -> String {
    match finish {
        FinishReason::Stop | FinishReason::AgentTerminated => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls | FinishReason::XmlToolLimitReached => "tool_call",
    }
    .to_string()
}

/// A message as the GenAI conventions write one (`role` and `parts`); images are named, not
/// copied.
fn message(m: &ChatMessage) -> Value {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut parts: Vec<Value> = Vec::new();
    if let Some(id) = &m.tool_call_id {
        parts.push(json!({ "type": "tool_call_response", "id": id, "response": m.text() }));
    } else {
        for part in &m.content {
            parts.push(match part {
                ContentPart::Text { text } => json!({ "type": "text", "content": text }),
                ContentPart::Image { mime, .. } => json!({ "type": "blob", "mime_type": mime }),
            });
        }
    }
    for call in &m.tool_calls {
        parts.push(json!({
            "type": "tool_call",
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }));
    }
    json!({ "role": role, "parts": parts })
}

/// An answer as the GenAI conventions write an output message.
pub(crate) fn answer_message(text: &str, calls: &[(String, String, Value)]) -> Value {
    let mut parts: Vec<Value> = Vec::new();
    if !text.is_empty() {
        parts.push(json!({ "type": "text", "content": text }));
    }
    for (id, name, arguments) in calls {
        parts.push(json!({ "type": "tool_call", "id": id, "name": name, "arguments": arguments }));
    }
    json!({ "role": "assistant", "parts": parts })
}

/// A tool call's span, under the run's.
pub(crate) fn tool(parent: &Span, call_id: &str, tool: &str) -> Span {
    tracing::info_span!(
        target: cove_telemetry::TARGET,
        parent: parent,
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        cove.tool.summary = Empty,
        cove.tool.outcome = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records, on the current tool span, what the call was about.
pub(crate) fn tool_summary(summary: Option<&str>) {
    if let Some(summary) = summary {
        Span::current().record("cove.tool.summary", summary);
    }
}

/// Records, on the current tool span, how the call came out: `ok`, `error`, or (for a call
/// that did not run) `refused` or `held` for permission.
pub(crate) fn tool_outcome(outcome: &str, result: Option<&ToolResult>) {
    let span = Span::current();
    span.record("cove.tool.outcome", outcome);
    if outcome == "error" || outcome == "refused" || result.is_some_and(|r| !r.ok) {
        span.record("error.type", "tool_error");
        span.record("otel.status_code", "ERROR");
    }
}

/// A wait of `kind` (`ask`, `permission`, `plan`, `takeover`, `events`) inside the run.
pub(crate) fn wait(kind: &'static str) -> Span {
    tracing::info_span!(
        target: cove_telemetry::TARGET,
        "wait",
        otel.name = %format_args!("wait {kind}"),
        cove.wait.kind = kind,
    )
}

/// Records, under the run's span, the waits between the previous run and this one (what
/// the previous run ended on, until it was given), with their real start and end.
pub(crate) fn waits_between(span: &Span, requests: &[Request]) {
    if span.is_disabled() {
        return;
    }
    let at =
        |ms: i64| SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    for request in requests {
        let Some(decided) = request.decided_at else {
            continue;
        };
        let kind = request.kind.as_str();
        let mut attributes = vec![
            KeyValue::new("cove.wait.kind", kind),
            KeyValue::new("cove.wait.summary", request.summary.clone()),
        ];
        if let Some(decision) = request.decision {
            attributes.push(KeyValue::new("cove.wait.decision", decision.as_str()));
        }
        cove_telemetry::record_past_span(
            span,
            format!("wait {kind}"),
            at(request.created_at),
            at(decided),
            attributes,
        );
    }
}
