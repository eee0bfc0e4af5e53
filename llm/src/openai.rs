//! OpenAI-compatible Chat Completions, streamed: OpenAI itself, OpenRouter, vLLM, Ollama,
//! llama.cpp, LiteLLM, DeepSeek and anything else speaking the same wire format.

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::{
    ChatMessage, ChatProvider, ChatRequest, ContentPart, EventStream, LlmError, Role, StopReason,
    StreamEvent, Usage, error_message, parse_retry_after,
};

/// The provider name for OpenAI itself.
pub const NAME: &str = "openai";

/// A Chat Completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAi {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    name: &'static str,
    /// Whether the server takes `prompt_cache_key` (OpenAI's own API does; compatible
    /// servers may refuse a field they do not know).
    prompt_cache_key: bool,
}

impl OpenAi {
    /// A provider for `base_url` (e.g. `https://api.openai.com/v1`); `name` labels messages.
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        api_key: Option<String>,
        name: &'static str,
    ) -> Self {
        let base_url = base_url.trim_end_matches('/').to_string();
        OpenAi {
            prompt_cache_key: is_official(&base_url),
            http,
            base_url,
            api_key,
            name,
        }
    }

    /// The same provider, sending (or not) each request's cache key as `prompt_cache_key`.
    pub fn with_prompt_cache_key(mut self, send: bool) -> Self {
        self.prompt_cache_key = send;
        self
    }

    fn is_official(&self) -> bool {
        is_official(&self.base_url)
    }

    /// The JSON body for `request`.
    pub fn body(&self, request: &ChatRequest) -> Value {
        let mut messages = vec![json!({"role": "system", "content": request.system})];
        messages.extend(request.messages.iter().map(message));
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        // OpenAI's own API wants the newer name (its reasoning models refuse the old one);
        // compatible servers know `max_tokens`.
        let cap = if self.is_official() {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[cap] = json!(request.max_tokens);
        if self.prompt_cache_key
            && let Some(key) = &request.cache_key
        {
            body["prompt_cache_key"] = json!(key);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                    })
                })
                .collect();
        }
        body
    }
}

/// Whether `base_url` is OpenAI's own API.
fn is_official(base_url: &str) -> bool {
    base_url.contains("api.openai.com")
}

fn content(parts: &[ContentPart]) -> Value {
    let has_image = parts.iter().any(|p| matches!(p, ContentPart::Image { .. }));
    if !has_image {
        let text: String = parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                ContentPart::Image { .. } => None,
            })
            .collect();
        return Value::String(text);
    }
    parts
        .iter()
        .map(|p| match p {
            ContentPart::Text { text } => json!({"type": "text", "text": text}),
            ContentPart::Image { mime, data } => json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{mime};base64,{data}")},
            }),
        })
        .collect()
}

fn message(m: &ChatMessage) -> Value {
    match m.role {
        Role::User => json!({"role": "user", "content": content(&m.content)}),
        Role::Assistant => {
            let text = m.text();
            let mut out = json!({
                "role": "assistant",
                "content": if text.is_empty() && !m.tool_calls.is_empty() { Value::Null } else { Value::String(text) },
            });
            if !m.tool_calls.is_empty() {
                out["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments.to_string()},
                        })
                    })
                    .collect();
            }
            out
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id,
            "content": m.text(),
        }),
    }
}

/// Turns Chat Completions chunks into [`StreamEvent`]s.
#[derive(Debug)]
struct Decoder {
    provider: &'static str,
    /// Open native tool calls by their index in the answer.
    open_calls: BTreeMap<usize, bool>,
    finish: Option<StopReason>,
    done: bool,
}

impl Decoder {
    fn new(provider: &'static str) -> Decoder {
        Decoder {
            provider,
            open_calls: BTreeMap::new(),
            finish: None,
            done: false,
        }
    }

    fn chunk(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let provider = self.provider;
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| LlmError::Malformed {
            provider,
            message: format!("{e}: {data}"),
        })?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_string();
            return Err(LlmError::Provider {
                provider,
                retryable: message.contains("overloaded") || message.contains("rate"),
                message,
            });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                cache_write_tokens: 0,
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
            }));
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        let delta = &choice["delta"];
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            out.push(StreamEvent::TextDelta(text.to_string()));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                let index = call["index"].as_u64().unwrap_or(0) as usize;
                if let std::collections::btree_map::Entry::Vacant(slot) =
                    self.open_calls.entry(index)
                {
                    slot.insert(true);
                    out.push(StreamEvent::ToolCallStart {
                        index,
                        id: call["id"].as_str().unwrap_or_default().to_string(),
                        name: call["function"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    });
                }
                if let Some(args) = call["function"]["arguments"].as_str()
                    && !args.is_empty()
                {
                    out.push(StreamEvent::ToolCallDelta {
                        index,
                        arguments: args.to_string(),
                    });
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(match reason {
                "stop" => StopReason::Stop,
                "length" => StopReason::Length,
                "tool_calls" | "function_call" => StopReason::ToolCalls,
                other => StopReason::Other(other.to_string()),
            });
        }
        Ok(())
    }

    /// Closes open calls and reports the finish, once the stream is over.
    fn close(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        // Some servers omit [DONE]; a finish reason is just as final.
        let Some(reason) = self.finish.take() else {
            return Err(LlmError::StreamCut {
                provider: self.provider,
            });
        };
        for (index, _) in std::mem::take(&mut self.open_calls) {
            out.push(StreamEvent::ToolCallEnd { index });
        }
        out.push(StreamEvent::Finish(reason));
        Ok(())
    }
}

impl super::sse::Decoder for Decoder {
    fn event(
        &mut self,
        _name: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        self.chunk(data, out)
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        self.close(out)
    }
}

impl ChatProvider for OpenAi {
    fn name(&self) -> &'static str {
        self.name
    }

    fn stream<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<EventStream, LlmError>> {
        Box::pin(async move {
            let provider = self.name;
            let mut builder = self
                .http
                .post(format!("{}/chat/completions", self.base_url))
                .json(&self.body(request));
            if let Some(key) = &self.api_key {
                builder = builder.bearer_auth(key);
            }
            let response = builder
                .send()
                .await
                .map_err(|e| super::transport_error(provider, &e))?;
            let status = response.status();
            if !status.is_success() {
                let retry_after = parse_retry_after(response.headers());
                let body = response.text().await.unwrap_or_default();
                let message = error_message(&body);
                let code = status.as_u16();
                // Compatible servers often answer an unknown model with 400 or 500.
                if code != 404
                    && (message.contains("model_not_found") || message.contains("does not exist"))
                {
                    return Err(LlmError::ModelNotFound {
                        provider,
                        model: request.model.clone(),
                        message: format!("HTTP {code}: {message}"),
                    });
                }
                // A 404 for the whole path is an address without the /v1 it needs more
                // often than a missing model.
                let message = if code == 404 {
                    format!("{message}{}", super::served::try_v1(&self.base_url))
                } else {
                    message
                };
                return Err(super::http_error(
                    provider,
                    code,
                    &request.model,
                    message,
                    retry_after,
                ));
            }
            Ok(super::sse::pump(provider, response, Decoder::new(provider)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolSpec};

    fn decode(chunks: &[&str], with_done: bool) -> Result<Vec<StreamEvent>, LlmError> {
        let mut d = Decoder::new(NAME);
        let mut out = Vec::new();
        for c in chunks {
            d.chunk(c, &mut out)?;
        }
        if with_done {
            d.chunk("[DONE]", &mut out)?;
        }
        d.close(&mut out)?;
        Ok(out)
    }

    #[test]
    fn text_tool_calls_usage_and_finish_are_decoded() {
        let events = decode(
            &[
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":""}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\".\"}"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":1300,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":1152}}}"#,
            ],
            true,
        )
        .unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Hel".into()),
                StreamEvent::TextDelta("lo".into()),
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "call_1".into(),
                    name: "ls".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{\"pa".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "th\":\".\"}".into()
                },
                StreamEvent::Usage(Usage {
                    input_tokens: 1300,
                    cached_tokens: 1152,
                    cache_write_tokens: 0,
                    output_tokens: 5
                }),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::Finish(StopReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn a_stream_without_a_finish_is_cut() {
        let cut = decode(
            &[r#"{"choices":[{"index":0,"delta":{"content":"par"}}]}"#],
            false,
        );
        assert!(matches!(cut, Err(LlmError::StreamCut { .. })));
        let no_done = decode(
            &[r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"length"}]}"#],
            false,
        )
        .unwrap();
        assert_eq!(
            no_done.last(),
            Some(&StreamEvent::Finish(StopReason::Length))
        );
    }

    #[test]
    fn errors_inside_the_stream_surface() {
        let err = decode(&[r#"{"error":{"message":"server overloaded"}}"#], true).unwrap_err();
        assert!(err.is_retryable(), "{err}");
    }

    #[test]
    fn requests_follow_the_wire_format() {
        let p = OpenAi::new(
            reqwest::Client::new(),
            "https://api.openai.com/v1/",
            None,
            NAME,
        );
        let mut assistant = ChatMessage::assistant("");
        assistant.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "ls".into(),
            arguments: json!({"path": "."}),
        });
        let request = ChatRequest {
            model: "gpt-4o".into(),
            system: "be good".into(),
            messages: vec![
                ChatMessage {
                    content: vec![
                        ContentPart::Text {
                            text: "look".into(),
                        },
                        ContentPart::Image {
                            mime: "image/png".into(),
                            data: "AAAA".into(),
                        },
                    ],
                    ..ChatMessage::user("")
                },
                assistant,
                ChatMessage::tool_result("c1", "ls", "a.txt", false),
            ],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "list".into(),
                parameters: json!({"type": "object"}),
            }],
            stable_messages: usize::MAX,
            cache_key: Some("thread-1".into()),
            max_tokens: 100,
        };
        let body = p.body(&request);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "be good"})
        );
        assert_eq!(
            body["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AAAA"
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"path":"."}"#
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], "ls");
        assert_eq!(body["max_completion_tokens"], 100);
        assert_eq!(body["stream"], true);
        assert_eq!(body["prompt_cache_key"], "thread-1");
        let local = OpenAi::new(
            reqwest::Client::new(),
            "http://localhost:11434/v1",
            None,
            NAME,
        );
        assert_eq!(local.body(&request)["max_tokens"], 100);
        assert!(
            local.body(&request).get("prompt_cache_key").is_none(),
            "a compatible server may not know the field"
        );
    }
}
