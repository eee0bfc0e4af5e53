//! The providers' prompt caches as their documentation describes them, so the scripted
//! model reports cached tokens the way each provider would.
//!
//! - Anthropic caches the prefix up to each block marked `cache_control` (tools, then
//!   system, then messages, in that order), at most four marks a request, prefixes of 1,024
//!   tokens or more; a mark finds an earlier entry at any block boundary up to 20 blocks
//!   before it. Reads are reported as `cache_read_input_tokens`, the prefix written past the
//!   longest hit up to the last mark as `cache_creation_input_tokens`, the rest as
//!   `input_tokens`.
//! - OpenAI caches every prompt of 1,024 tokens or more on its own; a later prompt that
//!   starts the same way reads the shared start, in steps of 128 tokens, as
//!   `prompt_tokens_details.cached_tokens`.
//!
//! Here a prefix is compared message by message (OpenAI) or block by block (Anthropic),
//! which is what Cove can keep the same; the real caches also match within a message.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::received::{Received, Wire, billed, cached_count};

/// Most `cache_control` marks Anthropic takes in one request.
pub const MAX_BREAKPOINTS: usize = 4;
/// Blocks before a mark where Anthropic still looks for an earlier entry.
const LOOKBACK_BLOCKS: usize = 20;
/// The shortest prefix either provider caches.
const MIN_CACHED: usize = 1_024;
/// OpenAI's cache hits grow in steps of this many tokens.
const OPENAI_STEP: usize = 128;

/// How one request's prompt was billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Billed {
    /// The whole prompt.
    pub prompt: usize,
    /// Read from the cache.
    pub cached: usize,
    /// Written to the cache (Anthropic).
    pub cache_write: usize,
}

/// One unit of a prompt: the hash of the prompt up to and including it, the tokens up to
/// and including it, and whether it carries a cache mark.
#[derive(Debug, Clone, Copy)]
struct Unit {
    prefix: u64,
    tokens: usize,
    marked: bool,
}

/// A part of a prompt without its cache mark, and whether it had one.
fn unmarked(part: &Value) -> (Value, bool) {
    let mut plain = part.clone();
    let marked = plain
        .as_object_mut()
        .and_then(|o| o.remove("cache_control"))
        .is_some();
    (plain, marked)
}

/// Units of the parts (each: what it is, its tokens, whether it is marked), in order.
fn units(parts: Vec<(Value, usize, bool)>) -> Vec<Unit> {
    let mut hasher = DefaultHasher::new();
    let mut tokens = 0;
    parts
        .into_iter()
        .map(|(part, own, marked)| {
            part.to_string().hash(&mut hasher);
            tokens += own;
            Unit {
                prefix: hasher.finish(),
                tokens,
                marked,
            }
        })
        .collect()
}

/// The prompt caches one scripted provider keeps.
#[derive(Debug, Default)]
pub struct PromptCaches {
    anthropic: HashSet<u64>,
    /// Earlier prompts, as the hashes of their prefixes.
    openai: Vec<Vec<u64>>,
}

impl PromptCaches {
    /// Bills an Anthropic request, or says why the API would refuse its cache marks.
    pub fn anthropic(&mut self, request: &Received) -> Result<Billed, String> {
        let units = anthropic_units(request)?;
        let marks: Vec<usize> = (0..units.len()).filter(|&i| units[i].marked).collect();
        if marks.len() > MAX_BREAKPOINTS {
            return Err(format!(
                "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                marks.len()
            ));
        }
        let prompt = request.prompt_tokens();
        let mut read_end: Option<usize> = None;
        for &mark in &marks {
            let hit = (mark.saturating_sub(LOOKBACK_BLOCKS)..=mark)
                .rev()
                .find(|&j| self.anthropic.contains(&units[j].prefix));
            if let Some(j) = hit {
                read_end = Some(read_end.map_or(j, |r| r.max(j)));
            }
        }
        let cached = read_end.map_or(0, |j| units[j].tokens);
        let last = marks.last().copied();
        let cache_write = match last {
            Some(last) if units[last].tokens >= MIN_CACHED && read_end.is_none_or(|r| r < last) => {
                units[last].tokens - cached
            }
            _ => 0,
        };
        for &mark in &marks {
            if units[mark].tokens >= MIN_CACHED {
                self.anthropic.insert(units[mark].prefix);
            }
        }
        let cached = cached.min(prompt);
        Ok(Billed {
            prompt,
            cached,
            cache_write: cache_write.min(prompt - cached),
        })
    }

    /// Bills an OpenAI request.
    pub fn openai(&mut self, request: &Received) -> Billed {
        let units = openai_units(request);
        let prefixes: Vec<u64> = units.iter().map(|u| u.prefix).collect();
        let shared = self
            .openai
            .iter()
            .filter_map(|earlier| {
                let same = earlier
                    .iter()
                    .zip(&prefixes)
                    .take_while(|(a, b)| a == b)
                    .count();
                same.checked_sub(1).map(|last| units[last].tokens)
            })
            .max()
            .unwrap_or(0);
        self.openai.push(prefixes);
        let prompt = request.prompt_tokens();
        let cached = if shared >= MIN_CACHED {
            shared / OPENAI_STEP * OPENAI_STEP
        } else {
            0
        };
        Billed {
            prompt,
            cached: cached.min(prompt),
            cache_write: 0,
        }
    }
}

/// The units of an Anthropic prompt: each tool, system block and message block.
fn anthropic_units(request: &Received) -> Result<Vec<Unit>, String> {
    let body = &request.body;
    let count = |s: &str| cached_count(s);
    let mut parts: Vec<(Value, usize, bool)> = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        let (plain, marked) = unmarked(tool);
        let own = count(&plain.to_string());
        parts.push((plain, own, marked));
    }
    for block in body["system"].as_array().into_iter().flatten() {
        let (plain, marked) = unmarked(block);
        let own = count(block["text"].as_str().unwrap_or_default()) + 4;
        parts.push((plain, own, marked));
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        for (i, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if block["type"] == "text"
                && block["text"].as_str().is_some_and(str::is_empty)
                && block.get("cache_control").is_some()
            {
                return Err("messages: cache_control cannot be set for empty text blocks".into());
            }
            let (plain, marked) = unmarked(block);
            let own = billed(&Value::Array(vec![plain.clone()]), &count);
            // A block opens a new turn: the role is part of what is cached.
            let part = if i == 0 {
                serde_json::json!({"role": role, "block": plain})
            } else {
                plain
            };
            parts.push((part, own + if i == 0 { 4 } else { 0 }, marked));
        }
    }
    Ok(units(parts))
}

/// The units of an OpenAI prompt: the tools, then each message.
fn openai_units(request: &Received) -> Vec<Unit> {
    let body = &request.body;
    let count = |s: &str| cached_count(s);
    let mut parts: Vec<(Value, usize, bool)> = Vec::new();
    let tools = &body["tools"];
    if tools.as_array().is_some_and(|t| !t.is_empty()) {
        parts.push((tools.clone(), count(&tools.to_string()), false));
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let mut own = 4 + billed(&message["content"], &count);
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            own += count(call["function"]["name"].as_str().unwrap_or_default());
            own += count(call["function"]["arguments"].as_str().unwrap_or_default()) + 8;
        }
        parts.push((message.clone(), own, false));
    }
    units(parts)
}

/// Tokens at the start of `next` that repeat the start of `previous` (block by block for
/// Anthropic, message by message for OpenAI, cache marks aside): what a prompt cache could
/// serve of `next` after `previous`.
pub fn repeated_prefix(previous: &Received, next: &Received) -> usize {
    let (a, b) = match next.wire {
        Wire::Anthropic => (
            anthropic_units(previous).unwrap_or_default(),
            anthropic_units(next).unwrap_or_default(),
        ),
        Wire::OpenAi => (openai_units(previous), openai_units(next)),
    };
    let same = a
        .iter()
        .zip(&b)
        .take_while(|(x, y)| x.prefix == y.prefix)
        .count();
    same.checked_sub(1).map_or(0, |last| b[last].tokens)
}
