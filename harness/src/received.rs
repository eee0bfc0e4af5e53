//! What the scripted model server received: a request in either wire format, read the way
//! tests ask about it, and billed the way the scripted provider bills it.

use std::sync::Mutex;

use axum::http::HeaderMap;
use serde_json::Value;

/// Which wire format a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub wire: Wire,
    pub body: Value,
    pub headers: HeaderMap,
}

impl Received {
    /// Whether the request offered native tools.
    pub fn native_tools(&self) -> bool {
        self.body["tools"].as_array().is_some_and(|t| !t.is_empty())
    }

    /// Every text of the request (system prompt and messages) joined, for searching.
    pub fn all_text(&self) -> String {
        let mut out = String::new();
        collect_text(&self.body["system"], &mut out);
        collect_text(&self.body["messages"], &mut out);
        out
    }

    /// The system prompt: a string (OpenAI, or Anthropic plainly) or text blocks (Anthropic
    /// with cache breakpoints).
    pub fn system_text(&self) -> String {
        match &self.body["system"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        }
    }

    /// The text of the last message.
    pub fn last_message_text(&self) -> String {
        let mut out = String::new();
        if let Some(last) = self.body["messages"].as_array().and_then(|m| m.last()) {
            collect_text(last, &mut out);
        }
        out
    }

    /// The output cap the request asked for.
    pub fn max_tokens(&self) -> u64 {
        self.body["max_tokens"]
            .as_u64()
            .or_else(|| self.body["max_completion_tokens"].as_u64())
            .unwrap_or(0)
    }

    /// The prompt's tokens as this scripted provider bills them: o200k over every text
    /// (system, messages, tool calls and results, tool descriptions), 4 per message, 1,600
    /// per image. It is what the server reports as usage, and what tests hold windows to.
    pub fn prompt_tokens(&self) -> usize {
        let count = |s: &str| cached_count(s);
        let mut tokens = 0;
        let system = self.system_text();
        if !system.is_empty() {
            tokens += count(&system) + 4;
        }
        for message in self.body["messages"].as_array().into_iter().flatten() {
            tokens += 4;
            tokens += billed(&message["content"], &count);
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                tokens += count(call["function"]["name"].as_str().unwrap_or_default());
                tokens += count(call["function"]["arguments"].as_str().unwrap_or_default()) + 8;
            }
        }
        if let Some(tools) = self.body["tools"].as_array().filter(|t| !t.is_empty()) {
            tokens += count(&Value::Array(tools.clone()).to_string());
        }
        tokens
    }

    /// How many images the request carries.
    pub fn image_count(&self) -> usize {
        let text = self.body.to_string();
        text.matches("\"type\":\"image_url\"").count() + text.matches("\"type\":\"image\"").count()
    }
}

/// o200k tokens of `text`, remembered: requests repeat the system prompt, the tool
/// descriptions and the history, and the scripted model must answer at once.
pub(crate) fn cached_count(text: &str) -> usize {
    use std::collections::HashMap;
    use std::hash::{DefaultHasher, Hash, Hasher};
    static CACHE: Mutex<Option<HashMap<(u64, usize), usize>>> = Mutex::new(None);
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    let key = (hasher.finish(), text.len());
    if let Ok(cache) = CACHE.lock()
        && let Some(n) = cache.as_ref().and_then(|c| c.get(&key))
    {
        return *n;
    }
    let n = tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len();
    if let Ok(mut cache) = CACHE.lock() {
        cache.get_or_insert_with(HashMap::new).insert(key, n);
    }
    n
}

/// Tokens of one message's content, in either wire format.
pub(crate) fn billed(content: &Value, count: &impl Fn(&str) -> usize) -> usize {
    match content {
        Value::String(s) => count(s),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str().unwrap_or_default() {
                "text" => count(b["text"].as_str().unwrap_or_default()),
                "image" | "image_url" => 1_600,
                "tool_use" => {
                    count(b["name"].as_str().unwrap_or_default())
                        + count(&b["input"].to_string())
                        + 8
                }
                "tool_result" => billed(&b["content"], count),
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// The texts under `value` a search of the request reads, each on a line of its own.
pub(crate) fn collect_text(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_text(v, out)),
        Value::Object(map) => {
            for (key, v) in map {
                if matches!(
                    key.as_str(),
                    "content" | "text" | "arguments" | "input" | "function" | "tool_calls"
                ) {
                    collect_text(v, out);
                }
            }
        }
        _ => {}
    }
}
