//! What every request must hold, checked by the scripted server: each tool call answered
//! once, in order, and tool definitions a real provider accepts.

use super::*;

/// Where the tool calls and their results of a request do not pair up, as the providers
/// require: in native mode each call's result comes right after the answer that made it
/// (OpenAI: `tool` messages; Anthropic: `tool_result` blocks in the next user message), and
/// no result stands without its call; in XML mode an answer with `<function_calls>` is
/// followed by results, and results follow an answer with calls.
pub fn pairing_problems(request: &Received) -> Vec<String> {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut problems = Vec::new();
    if !request.native_tools() {
        let text = |m: &Value| {
            let mut out = String::new();
            collect_text(&m["content"], &mut out);
            out
        };
        for (i, m) in messages.iter().enumerate() {
            let role = m["role"].as_str().unwrap_or_default();
            let is_result = role == "user" && text(m).starts_with("<function_results>");
            if role == "assistant" && text(m).contains("<function_calls>") {
                let answered = messages
                    .get(i + 1)
                    .is_some_and(|next| text(next).starts_with("<function_results>"));
                if !answered {
                    let next: String = messages
                        .get(i + 1)
                        .map(|n| text(n).chars().take(120).collect())
                        .unwrap_or_default();
                    problems.push(format!(
                        "message {i}: XML tool calls without results (next: {next:?})"
                    ));
                }
            }
            if is_result {
                let after_calls =
                    i.checked_sub(1)
                        .and_then(|p| messages.get(p))
                        .is_some_and(|prev| {
                            text(prev).contains("<function_calls>")
                                || text(prev).starts_with("<function_results>")
                        });
                if !after_calls {
                    problems.push(format!("message {i}: XML results after no tool calls"));
                }
            }
        }
        return problems;
    }
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let mut results: Vec<String> = Vec::new();
        match request.wire {
            Wire::OpenAi => {
                if role == "tool" {
                    results.push(m["tool_call_id"].as_str().unwrap_or_default().to_string());
                }
            }
            Wire::Anthropic => {
                for block in m["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        results.push(
                            block["tool_use_id"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                        );
                    }
                }
            }
        }
        for id in &results {
            match open.iter().position(|o| o == id) {
                Some(at) => {
                    open.remove(at);
                }
                None => problems.push(format!(
                    "message {i}: a result for {id:?}, which no open call has"
                )),
            }
        }
        let is_results_only = match request.wire {
            Wire::OpenAi => role == "tool",
            Wire::Anthropic => role == "user" && !results.is_empty(),
        };
        if !is_results_only && !open.is_empty() {
            problems.push(format!(
                "message {i}: calls {open:?} have no result before it"
            ));
            open.clear();
        }
        if role == "assistant" {
            match request.wire {
                Wire::OpenAi => {
                    for call in m["tool_calls"].as_array().into_iter().flatten() {
                        open.push(call["id"].as_str().unwrap_or_default().to_string());
                    }
                }
                Wire::Anthropic => {
                    for block in m["content"].as_array().into_iter().flatten() {
                        if block["type"] == "tool_use" {
                            open.push(block["id"].as_str().unwrap_or_default().to_string());
                        }
                    }
                }
            }
        }
    }
    if !open.is_empty() {
        problems.push(format!("the last answer's calls {open:?} have no result"));
    }
    problems
}

/// Where the request's tool definitions break rules both providers enforce: names of 1-64
/// characters of `[A-Za-z0-9_-]`, unique; an input schema of type object without `anyOf`,
/// `oneOf`, `allOf`, `not` or `enum` at its top (Anthropic refuses those); every array
/// schema with `items` (OpenAI refuses arrays without).
pub fn tool_definition_problems(request: &Received) -> Vec<String> {
    let mut problems = Vec::new();
    let mut names = std::collections::HashSet::new();
    for tool in request.body["tools"].as_array().into_iter().flatten() {
        let (name, schema) = match request.wire {
            Wire::OpenAi => (&tool["function"]["name"], &tool["function"]["parameters"]),
            Wire::Anthropic => (&tool["name"], &tool["input_schema"]),
        };
        let name = name.as_str().unwrap_or_default();
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            problems.push(format!("tool name {name:?} is not 1-64 of [A-Za-z0-9_-]"));
        }
        if !names.insert(name.to_string()) {
            problems.push(format!("tool {name:?} is defined twice"));
        }
        if schema["type"] != "object" {
            problems.push(format!(
                "tool {name:?}: the input schema is not of type object"
            ));
        }
        for key in ["anyOf", "oneOf", "allOf", "not", "enum"] {
            if schema.get(key).is_some() {
                problems.push(format!(
                    "tool {name:?}: {key} at the top of the input schema"
                ));
            }
        }
        arrays_without_items(name, schema, &mut problems);
    }
    problems
}

pub(super) fn arrays_without_items(tool: &str, schema: &Value, problems: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            let is_array = match map.get("type") {
                Some(Value::String(t)) => t == "array",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
                _ => false,
            };
            if is_array && !map.contains_key("items") {
                problems.push(format!("tool {tool:?}: an array schema without items"));
            }
            for (key, value) in map {
                // Enum and default values are data, not schemas.
                if key != "enum" && key != "default" && key != "const" && key != "examples" {
                    arrays_without_items(tool, value, problems);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                arrays_without_items(tool, item, problems);
            }
        }
        _ => {}
    }
}
