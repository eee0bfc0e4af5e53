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

// Variants without doc comments: the tool's description says what each means, once.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Isolation {
    Shared,
    Fork,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AgentTask {
    /// The whole task: it sees nothing of your conversation.
    task: String,
    /// Tools it may use (default: yours, but ask and plans).
    tools: Option<Vec<String>>,
    /// Default shared.
    isolation: Option<Isolation>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpawnAgents {
    agents: Vec<AgentTask>,
    /// How many at once (default and most: 4).
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
                fork: matches!(t.isolation, Some(Isolation::Fork)),
            })
            .collect(),
        max_parallel: a.max_parallel.unwrap_or(usize::MAX).max(1),
    });
    result
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ApplyChanges {
    /// The sub-agent's thread id, as spawn_agents named it.
    agent: String,
}

async fn apply_changes(env: &ToolEnv, a: ApplyChanges) -> ToolResult {
    let Some(book) = &env.book else {
        return ToolResult::error("sub-agents need a stored thread");
    };
    let children = match book.store.children(&book.thread) {
        Ok(children) => children,
        Err(e) => return ToolResult::error(e.to_string()),
    };
    let wanted = a.agent.trim();
    let Some(child) = children.iter().find(|c| c.id == wanted) else {
        return ToolResult::error(format!(
            "no sub-agent of this thread has the thread id {wanted:?}; spawn_agents named each one's thread"
        ));
    };
    let Some(fork) = &child.fork else {
        return ToolResult::error(format!(
            "sub-agent {wanted} worked in your workspace: its changes are there already"
        ));
    };
    let applied = match env.sandbox.apply_fork(fork).await {
        Ok(applied) => applied,
        Err(e) if e.code() == Some(&cove_protocol::ErrorCode::NotFound) => {
            return ToolResult::error(format!(
                "sub-agent {wanted}'s copy is gone: its changes were applied already, or it changed nothing"
            ));
        }
        Err(e) => return ToolResult::from_client(&e),
    };
    let mut lines = vec![format!("Changes of sub-agent {wanted}:")];
    for (what, paths) in [
        ("Applied", &applied.applied),
        (
            "Merged with changes made here since (different lines)",
            &applied.merged,
        ),
        ("Already as the sub-agent left them", &applied.unchanged),
    ] {
        if !paths.is_empty() {
            lines.push(format!("{what}: {}.", paths.join(", ")));
        }
    }
    // The copy has served: what was not taken is to be made by hand from its diffs (kept
    // copies outlive the sandbox's daemon, and at most 16 exist).
    if let Err(e) = env.sandbox.delete_fork(fork).await {
        tracing::debug!(error = %e, "the fork was not deleted");
    }
    if !applied.conflicts.is_empty() {
        lines.push("Not applied, left as your workspace has them (conflicts):".into());
        for conflict in &applied.conflicts {
            lines.push(format!("- {}: {}", conflict.path, conflict.reason));
        }
        lines.push(
            "The sub-agent's diff of each is in the spawn_agents result: make those changes by hand where they still make sense."
                .into(),
        );
    }
    if lines.len() == 1 {
        lines.push("none; it changed nothing.".into());
    }
    ToolResult::ok(lines.join("\n"))
}

/// The sub-agent tools.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "spawn_agents",
            args: SpawnAgents,
            summary: None,
            raw: &[],
            description: "Start sub-agents on parts of the task at the same time, each with its own context: in your workspace (isolation shared) or in its own copy (fork: its changes come back as a diff you merge with apply_changes). Returns when all have ended, with each one's answer, changes, tokens and cost. Their spending counts against your limits.",
            example: json!({"agents": [{"task": "Write tests for src/parse.rs in tests/parse.rs"}, {"task": "Document the CLI flags in docs/cli.md"}]}),
            run: spawn_agents,
        },
        tool! {
            name: "apply_changes",
            args: ApplyChanges,
            summary: Some("agent"),
            raw: &[],
            description: "Merge a forked sub-agent's changes into your workspace, file by file: taken where you did not change the file meanwhile, merged where you changed other lines, else left as you have it and reported as a conflict.",
            example: json!({"agent": "3f9a2c1b"}),
            run: apply_changes,
        },
    ]
}
