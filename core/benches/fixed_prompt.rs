//! `cargo bench -p cove-core --bench fixed_prompt`: what every model call pays before the task,
//! printed as JSON. The system prompt and the tools' descriptions are sent with each call,
//! so each token of them is paid for once per iteration (and fills a small window first).
//!
//! - `fixed_tokens`: system prompt plus tool descriptions, counted as `gpt-4o` counts them
//!   (o200k), for native and XML tool calls, with the full tool set and the compact one
//!   (`--tools compact`, chosen by itself for windows of 16,384 tokens or less), without and
//!   with the plan tools (a plan-first run).
//! - `method_tokens`: the system prompt's own text (no tools), full and compact.
//! - `largest_tools`: the ten tools whose native descriptions cost most, in tokens.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use cove_core::agent::ToolMode;
use cove_core::agent::prompt::system_prompt;
use cove_core::context::TokenCounter;
use cove_core::tools::ToolRegistry;
use serde_json::{Value, json};

const WORKSPACE: &str = "/workspace";

fn fixed(counter: &TokenCounter, registry: &ToolRegistry, mode: ToolMode) -> usize {
    let system = counter.text(&system_prompt(registry, mode, WORKSPACE));
    match mode {
        ToolMode::Native => system + counter.tools(&registry.specs()),
        ToolMode::Xml => system,
    }
}

fn main() {
    let counter = TokenCounter::for_model("gpt-4o");
    let sets = [
        ("full", ToolRegistry::standard()),
        ("compact", ToolRegistry::standard().compact(false)),
        ("compact_planning", ToolRegistry::standard().compact(true)),
    ];
    let mut fixed_tokens = serde_json::Map::new();
    for (name, registry) in &sets {
        fixed_tokens.insert(
            (*name).to_string(),
            json!({
                "native": fixed(&counter, registry, ToolMode::Native),
                "xml": fixed(&counter, registry, ToolMode::Xml),
                "tools": registry.specs().len(),
            }),
        );
    }
    let method = |registry: &ToolRegistry| {
        let with_tools = system_prompt(registry, ToolMode::Native, WORKSPACE);
        counter.text(&with_tools)
    };
    let full = ToolRegistry::standard();
    let mut costs: Vec<(String, usize)> = full
        .specs()
        .into_iter()
        .map(|spec| {
            let name = spec.name.clone();
            (name, counter.tools(std::slice::from_ref(&spec)))
        })
        .collect();
    costs.sort_by_key(|c| std::cmp::Reverse(c.1));
    let largest: Vec<Value> = costs
        .iter()
        .take(10)
        .map(|(name, tokens)| json!({"tool": name, "tokens": tokens}))
        .collect();
    let report = json!({
        "counted_as": "gpt-4o (o200k)",
        "fixed_tokens": fixed_tokens,
        "method_tokens": {
            "full": method(&full),
            "compact": method(&ToolRegistry::standard().compact(false)),
        },
        "largest_tools": largest,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
