//! Finding deferred MCP tools by what the model is looking for: each word of the query is
//! looked for in a tool's name, server and description, a name match counting most.

use super::McpTool;

/// Most tools one search loads.
pub const MAX_RESULTS: usize = 20;
/// Tools one search loads unless it asks for another number.
pub const DEFAULT_RESULTS: usize = 8;

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// How well `tool` matches the query's `terms`; 0 is no match.
fn score(tool: &McpTool, terms: &[String]) -> u32 {
    let name = words(&tool.raw);
    let server = words(tool.server.name());
    let description = tool.description.to_lowercase();
    let mut total = 0;
    for term in terms {
        let mut best = 0;
        if name.iter().any(|w| w == term) {
            best = 6;
        } else if name.iter().any(|w| w.starts_with(term.as_str())) {
            best = 4;
        } else if server.iter().any(|w| w == term) {
            best = 3;
        } else if description.contains(term.as_str()) {
            best = 1;
        }
        total += best;
    }
    total
}

/// The tools that best match `query`, best first, at most `limit`.
pub fn find<'a>(tools: &'a [McpTool], query: &str, limit: usize) -> Vec<&'a McpTool> {
    let terms = words(query);
    if terms.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(u32, usize, &McpTool)> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| (score(t, &terms), i, t))
        .filter(|(s, _, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(limit.clamp(1, MAX_RESULTS))
        .map(|(_, _, t)| t)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::mcp::Server;

    fn tool(server: &Arc<Server>, raw: &str, description: &str) -> McpTool {
        McpTool {
            name: format!("{}__{raw}", server.name()),
            raw: raw.into(),
            server: server.clone(),
            description: description.into(),
            schema: serde_json::json!({"type": "object", "properties": {}}),
        }
    }

    #[test]
    fn names_count_most_then_servers_then_descriptions() {
        let github = Server::detached("github");
        let jira = Server::detached("jira");
        let tools = vec![
            tool(&github, "list_issues", "List the issues of a repository"),
            tool(&github, "create_issue", "Open a new issue in a repository"),
            tool(
                &jira,
                "create_ticket",
                "Open a new issue (ticket) in a Jira project",
            ),
            tool(&jira, "search", "Find tickets with JQL"),
        ];
        let found: Vec<&str> = find(&tools, "create issue", 8)
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(
            found,
            // Both words in the name, then one in the name and one in the description, then
            // a word's stem in the name.
            [
                "github__create_issue",
                "jira__create_ticket",
                "github__list_issues"
            ]
        );
        let jira_only: Vec<&str> = find(&tools, "jira", 8)
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(jira_only, ["jira__create_ticket", "jira__search"]);
        assert_eq!(find(&tools, "create", 1).len(), 1);
        assert!(find(&tools, "  ", 8).is_empty());
        assert!(find(&tools, "weather", 8).is_empty());
    }
}
