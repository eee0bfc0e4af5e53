//! `spawn_agents`: sub-agents that work on parts of the task side by side, each in a thread
//! of its own; the run starts them (see `agent::run::children`) and answers the call with
//! what each did.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{ChildTask, Control, ToolDef, ToolEnv, ToolResult, tool};

/// The name of the tool.
pub const SPAWN_AGENTS: &str = "spawn_agents";

/// Sub-agents one call may start.
const MAX_AGENTS: usize = 16;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Isolation {
    /// It works in your workspace, as you do (the others too, at the same time).
    Shared,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AgentTask {
    /// What it should do, whole: it sees nothing of your conversation.
    task: String,
    /// The tools it may use (default: yours, except asking the user, plans and sub-agents).
    tools: Option<Vec<String>>,
    /// Where it works: `shared` (your workspace; the default, and for now the only one).
    isolation: Option<Isolation>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpawnAgents {
    /// The sub-agents, one task each.
    agents: Vec<AgentTask>,
    /// How many work at once (default and most: 4).
    max_parallel: Option<usize>,
}

async fn spawn_agents(_env: &ToolEnv, a: SpawnAgents) -> ToolResult {
    if a.agents.is_empty() {
        return ToolResult::error("give at least one agent a task");
    }
    if a.agents.len() > MAX_AGENTS {
        return ToolResult::error(format!(
            "at most {MAX_AGENTS} agents a call; split the work into fewer, larger tasks"
        ));
    }
    if let Some(empty) = a.agents.iter().position(|t| t.task.trim().is_empty()) {
        return ToolResult::error(format!("agent {} has no task", empty + 1));
    }
    for task in &a.agents {
        // One kind of isolation for now: every sub-agent works in the shared workspace.
        match task.isolation {
            None | Some(Isolation::Shared) => {}
        }
    }
    let n = a.agents.len();
    let mut result = ToolResult::ok(format!("Starting {n} sub-agents."));
    result.control = Some(Control::SpawnAgents {
        call_id: String::new(),
        tool: String::new(),
        agents: a
            .agents
            .into_iter()
            .map(|t| ChildTask {
                task: t.task,
                tools: t.tools,
            })
            .collect(),
        max_parallel: a.max_parallel.unwrap_or(usize::MAX).max(1),
    });
    result
}

/// The sub-agent tools.
pub fn tools() -> Vec<ToolDef> {
    vec![tool! {
        name: "spawn_agents",
        args: SpawnAgents,
        summary: None,
        raw: &[],
        description: "Start sub-agents that work on independent parts of the task at the same time, each with its own context and history, in your workspace. Returns when all have ended, with each one's answer, the files its file tools wrote, its tokens and cost. Give each a whole task: they see nothing of this conversation and cannot ask the user. Their spending counts against your limits.",
        example: json!({"agents": [{"task": "Write tests for src/parse.rs in tests/parse.rs"}, {"task": "Document the CLI flags in docs/cli.md"}]}),
        run: spawn_agents,
    }]
}
