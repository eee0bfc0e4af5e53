//! Anthropic Messages, streamed.

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::{
    ChatMessage, ChatProvider, ChatRequest, ContentPart, EventStream, LlmError, Role, StopReason,
    StreamEvent, Usage, error_message, parse_retry_after,
};

const NAME: &str = "anthropic";
/// The API version this code speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The Messages API.
#[derive(Debug, Clone)]
pub struct Anthropic {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
}

impl Anthropic {
    /// A provider for `base_url` (e.g. `https://api.anthropic.com`).
    pub fn new(http: reqwest::Client, base_url: &str, api_key: String) -> Self {
        Anthropic {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
        }
    }

    /// The JSON body for `request`, with prompt-cache breakpoints: on the last tool and on
    /// the system prompt (the prefix every call of a run shares), and on the last block of
    /// the newest stable message and of the same role's turn before it (where the previous
    /// call's rolling breakpoint stood, so its cache entry is found however many blocks the
    /// newest answer added). Four at most, as the API allows; what is for this call only
    /// (the browser state, images, the plan) comes after the last of them.
    pub fn body(request: &ChatRequest) -> Value {
        let stable = request.stable_messages.min(request.messages.len());
        let (mut turns, ends) = messages(&request.messages);
        for (turn, block) in rolling_breakpoints(&ends[..stable]) {
            if let Some(block) = turns
                .get_mut(turn)
                .and_then(|t| t["content"].get_mut(block))
            {
                block["cache_control"] = ephemeral();
            }
        }
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": turns,
            "stream": true,
        });
        if !request.system.is_empty() {
            body["system"] =
                json!([{"type": "text", "text": request.system, "cache_control": ephemeral()}]);
        }
        if !request.tools.is_empty() {
            let mut tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = ephemeral();
            }
            body["tools"] = Value::Array(tools);
        }
        body
    }
}

/// Most `cache_control` breakpoints one request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Where the rolling breakpoints go, as (turn, block): the last block of the newest stable
/// message, and the last block of the turn two before it (the same role's previous turn).
fn rolling_breakpoints(ends: &[Option<(usize, usize)>]) -> Vec<(usize, usize)> {
    let Some((tail_turn, tail_block)) = ends.iter().rev().find_map(|e| *e) else {
        return Vec::new();
    };
    let mut marks = vec![(tail_turn, tail_block)];
    if let Some(before) = tail_turn.checked_sub(2)
        && let Some(last) = ends
            .iter()
            .rev()
            .filter_map(|e| *e)
            .find(|(turn, _)| *turn == before)
    {
        marks.push(last);
    }
    marks
}

fn blocks(parts: &[ContentPart]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } if text.is_empty() => None,
            ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentPart::Image { mime, data } => Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": mime, "data": data},
            })),
        })
        .collect()
}

/// Messages as the API wants them: tool results as `tool_result` blocks of a user turn, and
/// consecutive turns of one role merged. Also, for each message of `history`, where its
/// last block landed (turn, block), if it has any.
fn messages(history: &[ChatMessage]) -> (Vec<Value>, Vec<Option<(usize, usize)>>) {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut ends = Vec::with_capacity(history.len());
    for m in history {
        let (role, content) = match m.role {
            Role::User => ("user", blocks(&m.content)),
            Role::Assistant => {
                let mut content = blocks(&m.content);
                content.extend(m.tool_calls.iter().map(|c| {
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
                }));
                ("assistant", content)
            }
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id,
                    "content": m.text(),
                    "is_error": m.is_error,
                })],
            ),
        };
        if content.is_empty() {
            ends.push(None);
            continue;
        }
        match out.last_mut() {
            Some((last, blocks)) if *last == role => blocks.extend(content),
            _ => out.push((role, content)),
        }
        let turn = out.len() - 1;
        ends.push(Some((turn, out[turn].1.len() - 1)));
    }
    let turns = out
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    (turns, ends)
}

/// Turns Messages stream events into [`StreamEvent`]s.
#[derive(Debug, Default)]
struct Decoder {
    /// Content-block index to tool-call index, for tool_use blocks.
    tool_blocks: Vec<(u64, usize)>,
    next_tool: usize,
    /// The prompt's usage, from `message_start`.
    prompt: Usage,
    finish: Option<StopReason>,
    stopped: bool,
}

impl Decoder {
    fn event(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        let value: Value = if data.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(data).map_err(|e| LlmError::Malformed {
                provider: NAME,
                message: format!("{e}: {data}"),
            })?
        };
        // The event name travels both as the SSE event field and inside the data.
        let kind = if kind.is_empty() || kind == "message" {
            value["type"].as_str().unwrap_or_default()
        } else {
            kind
        };
        match kind {
            "message_start" => {
                // Cached prompt parts are reported apart; together they are the prompt.
                let usage = &value["message"]["usage"];
                let count = |key: &str| usage[key].as_u64().unwrap_or(0);
                self.prompt = Usage {
                    cached_tokens: count("cache_read_input_tokens"),
                    cache_write_tokens: count("cache_creation_input_tokens"),
                    input_tokens: count("input_tokens")
                        + count("cache_read_input_tokens")
                        + count("cache_creation_input_tokens"),
                    output_tokens: 0,
                };
            }
            "content_block_start" => {
                let block = &value["content_block"];
                if block["type"] == "tool_use" {
                    let index = self.next_tool;
                    self.next_tool += 1;
                    self.tool_blocks
                        .push((value["index"].as_u64().unwrap_or(0), index));
                    out.push(StreamEvent::ToolCallStart {
                        index,
                        id: block["id"].as_str().unwrap_or_default().to_string(),
                        name: block["name"].as_str().unwrap_or_default().to_string(),
                    });
                } else if let Some(text) = block["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::TextDelta(text.to_string()));
                }
            }
            "content_block_delta" => {
                let delta = &value["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        if let Some(text) = delta["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(StreamEvent::TextDelta(text.to_string()));
                        }
                    }
                    Some("input_json_delta") => {
                        let block = value["index"].as_u64().unwrap_or(0);
                        if let Some(index) = self.tool_index(block)
                            && let Some(json) =
                                delta["partial_json"].as_str().filter(|j| !j.is_empty())
                        {
                            out.push(StreamEvent::ToolCallDelta {
                                index,
                                arguments: json.to_string(),
                            });
                        }
                    }
                    // Thinking and signature deltas carry nothing for the user.
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(index) = self.tool_index(value["index"].as_u64().unwrap_or(0)) {
                    out.push(StreamEvent::ToolCallEnd { index });
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"]["stop_reason"].as_str() {
                    self.finish = Some(match reason {
                        "end_turn" | "stop_sequence" => StopReason::Stop,
                        "max_tokens" => StopReason::Length,
                        "tool_use" => StopReason::ToolCalls,
                        other => StopReason::Other(other.to_string()),
                    });
                }
                if let Some(output) = value["usage"]["output_tokens"].as_u64() {
                    out.push(StreamEvent::Usage(Usage {
                        output_tokens: output,
                        ..self.prompt
                    }));
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let kind = value["error"]["type"].as_str().unwrap_or_default();
                return Err(LlmError::Provider {
                    provider: NAME,
                    message: value["error"]["message"]
                        .as_str()
                        .unwrap_or(kind)
                        .to_string(),
                    retryable: matches!(
                        kind,
                        "overloaded_error" | "api_error" | "rate_limit_error"
                    ),
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn tool_index(&self, block: u64) -> Option<usize> {
        self.tool_blocks
            .iter()
            .find(|(b, _)| *b == block)
            .map(|(_, i)| *i)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        match (self.stopped, self.finish.take()) {
            (true, Some(reason)) => {
                out.push(StreamEvent::Finish(reason));
                Ok(())
            }
            _ => Err(LlmError::StreamCut { provider: NAME }),
        }
    }
}

impl super::sse::Decoder for Decoder {
    fn event(
        &mut self,
        name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        Decoder::event(self, name, data, out)
    }

    fn finished(&self) -> bool {
        self.stopped
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        Decoder::end(self, out)
    }
}

impl ChatProvider for Anthropic {
    fn name(&self) -> &'static str {
        NAME
    }

    fn stream<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<EventStream, LlmError>> {
        Box::pin(async move {
            let response = self
                .http
                .post(format!("{}/v1/messages", self.base_url))
                .header("x-api-key", &self.api_key)
                .header("anthropic-version", API_VERSION)
                .json(&Self::body(request))
                .send()
                .await
                .map_err(|e| super::transport_error(NAME, &e))?;
            let status = response.status();
            if !status.is_success() {
                let retry_after = parse_retry_after(response.headers());
                let body = response.text().await.unwrap_or_default();
                let message = error_message(&body);
                return Err(super::http_error(
                    NAME,
                    status.as_u16(),
                    &request.model,
                    message,
                    retry_after,
                ));
            }
            Ok(super::sse::pump(NAME, response, Decoder::default()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolSpec};

    fn decode(events: &[(&str, &str)]) -> Result<Vec<StreamEvent>, LlmError> {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for (kind, data) in events {
            d.event(kind, data, &mut out)?;
        }
        d.end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn a_full_stream_with_text_and_a_tool_call_is_decoded() {
        let events = decode(&[
            ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":30,"cache_read_input_tokens":2000,"cache_creation_input_tokens":500}}}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
            ("ping", r#"{"type":"ping"}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look."}}"#),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\".\"}"}}"#),
            ("content_block_stop", r#"{"type":"content_block_stop","index":1}"#),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":17}}"#),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ])
        .unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Let me look.".into()),
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_1".into(),
                    name: "ls".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{\"path\":".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "\".\"}".into()
                },
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::Usage(Usage {
                    input_tokens: 30 + 2_000 + 500,
                    cached_tokens: 2_000,
                    cache_write_tokens: 500,
                    output_tokens: 17
                }),
                StreamEvent::Finish(StopReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn cut_streams_and_overloads_are_retryable_errors() {
        let cut = decode(&[("message_start", r#"{"message":{"usage":{}}}"#)]).unwrap_err();
        assert!(matches!(cut, LlmError::StreamCut { .. }));
        let overloaded = decode(&[(
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )])
        .unwrap_err();
        assert!(overloaded.is_retryable());
    }

    #[test]
    fn requests_follow_the_wire_format() {
        let mut assistant = ChatMessage::assistant("checking");
        assistant.tool_calls.push(ToolCall {
            id: "t1".into(),
            name: "ls".into(),
            arguments: json!({}),
        });
        let request = ChatRequest {
            model: "claude-sonnet-4-5".into(),
            system: "sys".into(),
            messages: vec![
                ChatMessage::user("hi"),
                assistant,
                ChatMessage::tool_result("t1", "ls", "a.txt", false),
                ChatMessage {
                    content: vec![ContentPart::Image {
                        mime: "image/jpeg".into(),
                        data: "BBBB".into(),
                    }],
                    ..ChatMessage::user("")
                },
            ],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            stable_messages: usize::MAX,
            cache_key: None,
            max_tokens: 64,
        };
        let body = Anthropic::body(&request);
        assert_eq!(body["system"][0]["text"], "sys");
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(
            msgs.len(),
            3,
            "the tool result and the image share one user turn"
        );
        assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
        assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
        assert_eq!(msgs[2]["content"][0]["tool_use_id"], "t1");
        assert_eq!(msgs[2]["content"][1]["source"]["media_type"], "image/jpeg");
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    }

    /// Where the `cache_control` marks of a body are: "tools", "system", or (turn, block).
    fn marks(body: &Value) -> Vec<String> {
        let mut out = Vec::new();
        for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
            if t.get("cache_control").is_some() {
                out.push(format!("tool {i}"));
            }
        }
        for b in body["system"].as_array().into_iter().flatten() {
            if b.get("cache_control").is_some() {
                out.push("system".into());
            }
        }
        for (t, turn) in body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (b, block) in turn["content"].as_array().into_iter().flatten().enumerate() {
                if block.get("cache_control").is_some() {
                    out.push(format!("{t}.{b}"));
                }
            }
        }
        out
    }

    #[test]
    fn breakpoints_mark_the_stable_prefix_and_leave_the_temporary_message_after_them() {
        let call = |id: &str| {
            let mut a = ChatMessage::assistant("");
            a.tool_calls.push(ToolCall {
                id: id.into(),
                name: "ls".into(),
                arguments: json!({}),
            });
            a
        };
        let mut messages = vec![
            ChatMessage::user("task"),
            call("t1"),
            ChatMessage::tool_result("t1", "ls", "a", false),
            call("t2"),
            ChatMessage::tool_result("t2", "ls", "b", false),
        ];
        let stable = messages.len();
        // The browser's picture, for this call only: it joins the results' user turn.
        messages.push(ChatMessage {
            content: vec![ContentPart::Image {
                mime: "image/png".into(),
                data: "AAAA".into(),
            }],
            ..ChatMessage::user("")
        });
        let tool = ToolSpec {
            name: "ls".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        };
        let mut request = ChatRequest {
            stable_messages: stable,
            ..ChatRequest::new(
                "claude-sonnet-4-5",
                "sys",
                messages,
                vec![tool.clone(), tool],
                64,
            )
        };
        request.tools[1].name = "cat".into();
        let body = Anthropic::body(&request);
        // Turns: 0 user task, 1 call, 2 result, 3 call, 4 result + picture.
        assert_eq!(marks(&body), ["tool 1", "system", "2.0", "4.0"], "{body:#}");
        assert_eq!(body["messages"][4]["content"][1]["type"], "image");
        assert!(marks(&body).len() <= MAX_BREAKPOINTS);
        // The next call's body repeats this one up to the rolling breakpoint.
        let next = Anthropic::body(&ChatRequest {
            stable_messages: stable,
            ..ChatRequest::new(
                "claude-sonnet-4-5",
                "sys",
                request.messages[..stable].to_vec(),
                request.tools.clone(),
                64,
            )
        });
        let strip = |mut v: Value| {
            for turn in v["messages"].as_array_mut().into_iter().flatten() {
                for b in turn["content"].as_array_mut().into_iter().flatten() {
                    b.as_object_mut().map(|o| o.remove("cache_control"));
                }
            }
            v
        };
        assert_eq!(
            strip(next)["messages"][4]["content"][0],
            strip(body.clone())["messages"][4]["content"][0]
        );
        // XML mode: no tools; a history of one message: two marks.
        let xml = Anthropic::body(&ChatRequest {
            stable_messages: 1,
            ..ChatRequest::new("m", "sys", vec![ChatMessage::user("task")], Vec::new(), 64)
        });
        assert_eq!(marks(&xml), ["system", "0.0"]);
        // A one-off call (a summary) marks only the system prompt.
        let one_off = Anthropic::body(&ChatRequest::new(
            "m",
            "sys",
            vec![ChatMessage::user("summarize this")],
            Vec::new(),
            64,
        ));
        assert_eq!(marks(&one_off), ["system"]);
    }
}
