//! A scripted answer as each provider streams it: OpenAI's and Anthropic's Server-Sent
//! Events cut at awkward places, XML tool calls in the text, and the faults a real
//! server shows.

use super::*;

/// A call id no other call of this process has, as real providers give them (their ids
/// are unique; a run's record relies on it).
fn call_id(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}_{n}")
}

pub(super) async fn fail(fault: Fault, partial: String) -> Response {
    match fault {
        Fault::RateLimited { retry_after_secs } => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, retry_after_secs.to_string())],
            r#"{"error":{"message":"rate limited","type":"rate_limit_error"}}"#,
        )
            .into_response(),
        Fault::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"error":{"message":"internal error","type":"api_error"}}"#,
        )
            .into_response(),
        Fault::PromptTooLong => (
            StatusCode::BAD_REQUEST,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 205668 tokens > 200000 maximum"}}"#,
        )
            .into_response(),
        Fault::WindowExceeded(window) => (
            StatusCode::BAD_REQUEST,
            json!({"error": {"message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {} tokens. Please reduce the length of the messages.", window + 1_204),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
            .to_string(),
        )
            .into_response(),
        Fault::CutAfter(bytes) => sse(partial, Some(bytes), Chunking::Awkward),
        Fault::Hang => {
            std::future::pending::<()>().await;
            StatusCode::OK.into_response()
        }
    }
}

/// Chunk sizes that put boundaries inside `data:`, inside JSON strings and inside UTF-8.
pub(super) const CHUNKS: [usize; 9] = [1, 7, 3, 17, 2, 29, 5, 64, 11];

pub(super) fn chunking(shared: &Shared) -> Chunking {
    shared.chunking.lock().map(|c| *c).unwrap_or_default()
}

pub(super) fn sse(text: String, cut_after: Option<usize>, chunking: Chunking) -> Response {
    let bytes = text.into_bytes();
    let end = cut_after.map_or(bytes.len(), |n| n.min(bytes.len()));
    let mut pieces = Vec::new();
    let (mut at, mut i) = (0, 0);
    while at < end {
        let n = match chunking {
            Chunking::Awkward => CHUNKS[i % CHUNKS.len()],
            Chunking::PerEvent | Chunking::Paced(_) => bytes[at..end]
                .windows(2)
                .position(|w| w == b"\n\n")
                .map_or(end - at, |p| p + 2),
        }
        .min(end - at);
        pieces.push(Bytes::copy_from_slice(&bytes[at..at + n]));
        at += n;
        i += 1;
    }
    let cut = cut_after.is_some();
    let pause = match chunking {
        Chunking::Paced(pause) => Some(pause),
        Chunking::Awkward | Chunking::PerEvent => None,
    };
    let stream =
        futures_util::stream::unfold((pieces.into_iter(), cut), move |(mut it, cut)| async move {
            match it.next() {
                Some(piece) => {
                    match pause {
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => tokio::task::yield_now().await,
                    }
                    Some((Ok::<Bytes, std::io::Error>(piece), (it, cut)))
                }
                // A cut stream ends in an error, which drops the connection mid-body.
                None if cut => Some((
                    Err(std::io::Error::other("cut")),
                    (Vec::new().into_iter(), false),
                )),
                None => None,
            }
        });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Splits `s` into pieces of `n` characters (never inside a character).
pub(super) fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// The text a turn shows the model in XML tool mode.
pub fn xml_text(turn: &Turn) -> String {
    let mut text = turn.text.clone();
    if !turn.calls.is_empty() {
        text.push_str("\n<function_calls>\n");
        for call in &turn.calls {
            text.push_str(&format!("<invoke name=\"{}\">\n", call.name));
            if let Some(args) = call.arguments.as_object() {
                for (key, value) in args {
                    let raw = match value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    text.push_str(&format!("<parameter name=\"{key}\">{raw}</parameter>\n"));
                }
            }
            text.push_str("</invoke>\n");
        }
        text.push_str("</function_calls>");
    }
    if let Some(raw) = &turn.raw_xml {
        text.push_str(raw);
    }
    text
}

/// Output tokens every scripted answer reports.
pub const OUTPUT_TOKENS: u64 = 5;

pub(super) fn finish_of(turn: &Turn, native: bool) -> &'static str {
    turn.finish.unwrap_or(if native && !turn.calls.is_empty() {
        "tool_calls"
    } else {
        "stop"
    })
}

pub(super) fn openai_events(turn: &Turn, native: bool, billed: Billed) -> String {
    let mut out = String::new();
    let mut chunk = |delta: Value, finish: Option<&str>| {
        let body = json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        out.push_str(&format!("data: {body}\n\n"));
    };
    chunk(json!({"role": "assistant", "content": ""}), None);
    let text = if native {
        turn.text.clone()
    } else {
        xml_text(turn)
    };
    for piece in pieces(&text, 9) {
        chunk(json!({"content": piece}), None);
    }
    if native {
        for (i, call) in turn.calls.iter().enumerate() {
            chunk(
                json!({"tool_calls": [{"index": i, "id": call_id("call"), "type": "function",
                    "function": {"name": call.name, "arguments": ""}}]}),
                None,
            );
            for piece in pieces(&call.arguments.to_string(), 7) {
                chunk(
                    json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                    None,
                );
            }
        }
    }
    chunk(json!({}), Some(finish_of(turn, native)));
    out.push_str(&format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-scripted", "choices": [], "usage": {"prompt_tokens": billed.prompt,
            "completion_tokens": OUTPUT_TOKENS, "prompt_tokens_details": {"cached_tokens": billed.cached}}})
    ));
    out.push_str("data: [DONE]\n\n");
    out
}

pub(super) fn anthropic_events(turn: &Turn, native: bool, billed: Billed) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant",
            "content": [], "usage": {"input_tokens": billed.prompt - billed.cached - billed.cache_write,
                "cache_read_input_tokens": billed.cached, "cache_creation_input_tokens": billed.cache_write,
                "output_tokens": 1}}}),
    );
    let text = if native {
        turn.text.clone()
    } else {
        xml_text(turn)
    };
    let mut block = 0;
    if !text.is_empty() {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": block, "content_block": {"type": "text", "text": ""}}),
        );
        event("ping", json!({"type": "ping"}));
        for piece in pieces(&text, 9) {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": block, "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": block}),
        );
        block += 1;
    }
    if native {
        for call in &turn.calls {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": block, "content_block":
                    {"type": "tool_use", "id": call_id("toolu"), "name": call.name, "input": {}}}),
            );
            for piece in pieces(&call.arguments.to_string(), 7) {
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": block,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}),
                );
            }
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": block}),
            );
            block += 1;
        }
    }
    let stop = match finish_of(turn, native) {
        "length" => "max_tokens",
        "tool_calls" => "tool_use",
        _ => "end_turn",
    };
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": OUTPUT_TOKENS}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}
