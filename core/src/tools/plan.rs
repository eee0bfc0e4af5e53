//! Plan tools: the agent proposes a plan for the user to approve (`create_plan`, which
//! pauses the run), then reports each step's progress (`update_plan`).

use cove_protocol::plan::{PlanStep, StepStatus};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{Control, ToolDef, ToolEnv, ToolResult, tool};
use crate::store::PlanDraft;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NewStep {
    /// A short id ("1", "2", …); numbered in order when left out.
    id: Option<String>,
    /// What the step does, in a sentence the user can judge.
    description: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreatePlan {
    /// What the task achieves when done.
    goal: String,
    /// The steps, in order.
    steps: Vec<NewStep>,
}

async fn create_plan(_env: &ToolEnv, a: CreatePlan) -> ToolResult {
    let draft = PlanDraft {
        goal: a.goal,
        steps: a
            .steps
            .into_iter()
            .map(|s| PlanStep {
                id: s.id.unwrap_or_default(),
                description: s.description,
                status: StepStatus::Pending,
            })
            .collect(),
    };
    match draft.checked() {
        Ok(draft) => {
            let mut result = ToolResult::ok(
                "The plan is proposed to the user; the run pauses until they approve, edit or reject it.",
            );
            result.control = Some(Control::Plan { draft });
            result
        }
        Err(e) => ToolResult::error(format!("The plan was not proposed: {e}.")),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdatePlan {
    /// The step's id in the approved plan.
    step_id: String,
    /// pending, in_progress, completed or skipped.
    status: StepStatus,
    /// What happened, for the user (why a step was skipped, what it produced).
    note: Option<String>,
}

async fn update_plan(env: &ToolEnv, a: UpdatePlan) -> ToolResult {
    let Some(book) = &env.book else {
        return ToolResult::error("This run keeps no plan.");
    };
    match book
        .store
        .update_plan_step(&book.thread, &a.step_id, a.status)
    {
        Ok(plan) => {
            let mut result = ToolResult::ok(format!(
                "Step {} is {}.",
                a.step_id.trim(),
                a.status.as_str()
            ));
            result.event =
                Some(cove_protocol::events::EventKind::PlanUpdated { plan, note: a.note });
            result
        }
        Err(e) => ToolResult::error(e.to_string()),
    }
}

/// The plan tools.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "create_plan",
            args: CreatePlan,
            summary: Some("goal"),
            raw: &[],
            description: "Propose a plan for the user to approve before you act: the goal and the steps, each a sentence they can judge. The run pauses until they approve, edit or reject it; a rejection comes back with their reason, and you propose a new version. Use it for large or risky tasks (several stages, changes that are hard to undo), and always when told to plan first.",
            example: json!({"goal": "A landing page for the bakery, served on port 8000", "steps": [{"id": "1", "description": "Write index.html and style.css from the brief"}, {"id": "2", "description": "Serve it and check it in the browser"}]}),
            run: create_plan,
        },
        tool! {
            name: "update_plan",
            args: UpdatePlan,
            summary: Some("step_id"),
            raw: &["note"],
            description: "Report progress on the approved plan: set a step to in_progress when you start it, completed when it is done and checked, skipped (with a note) when it is not needed.",
            example: json!({"step_id": "1", "status": "completed", "note": "index.html and style.css written"}),
            run: update_plan,
        },
    ]
}
