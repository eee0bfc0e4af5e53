//! `mcp_search_tools`: when the MCP servers' tools would take too much of the window they
//! are not listed; the model finds the ones it needs by what they do, and they are offered
//! from its next call on.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolDef, ToolEnv, ToolResult, tool};
use crate::mcp::search;

/// The name of the search tool.
pub const SEARCH_TOOLS: &str = "mcp_search_tools";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchTools {
    /// What the tool should do, in a few words (`create github issue`, `weather forecast`).
    query: String,
    /// How many tools to load (default 8, at most 20).
    limit: Option<usize>,
}

async fn search_tools(env: &ToolEnv, a: SearchTools) -> ToolResult {
    let Some(hub) = &env.mcp else {
        return ToolResult::error("no MCP servers are configured");
    };
    if a.query.trim().is_empty() {
        return ToolResult::error("say in a few words what the tool should do");
    }
    let tools = hub.tools().await;
    let found = search::find(&tools, &a.query, a.limit.unwrap_or(search::DEFAULT_RESULTS));
    if found.is_empty() {
        let servers: Vec<String> = hub
            .summary()
            .iter()
            .map(|(name, count)| format!("{name} ({count} tools)"))
            .collect();
        return ToolResult::error(format!(
            "no MCP tool matches {:?}; try other words. The servers: {}",
            a.query,
            servers.join(", ")
        ));
    }
    let names: Vec<String> = found.iter().map(|t| t.name.clone()).collect();
    hub.load(&names);
    let mut out = format!(
        "Loaded {} tool(s); they are in your tool list from now on:\n",
        found.len()
    );
    for tool in found {
        let params: Vec<&str> = tool
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let description: String = tool.description.chars().take(300).collect();
        out.push_str(&format!(
            "- {}({}): {description}\n",
            tool.name,
            params.join(", ")
        ));
    }
    ToolResult::ok(out)
}

/// The MCP tools Cove itself offers.
pub fn tools() -> Vec<ToolDef> {
    vec![tool! {
        name: "mcp_search_tools",
        args: SearchTools,
        summary: Some("query"),
        raw: &[],
        description: "Find tools of the user's MCP servers (their tools are not all listed, to save room) by what they do, and load the best matches so you can call them. Search whenever a task might be served by an external service or integration.",
        example: json!({"query": "create github issue"}),
        run: search_tools,
    }]
}
