//! A plan: the contract between the user and the agent for a task. The agent proposes it
//! (`create_plan`), the user approves, edits or rejects it, and the agent reports each step's
//! progress (`update_plan`). Each change the user makes is a new version.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a step stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    #[default]
    Pending,
    InProgress,
    Completed,
    Skipped,
}

impl StepStatus {
    /// Its name, as the tools and events write it.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Completed => "completed",
            StepStatus::Skipped => "skipped",
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    /// Short and stable across versions where the step stays ("1", "2", …).
    pub id: String,
    pub description: String,
    #[serde(default)]
    pub status: StepStatus,
}

/// Where a version of a plan stands with the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Waiting for the user.
    Proposed,
    /// The agent works to it.
    Approved,
    /// Turned down; a newer version may follow.
    Rejected,
    /// Replaced by a newer version before it was answered.
    Superseded,
}

impl PlanStatus {
    /// Its name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Proposed => "proposed",
            PlanStatus::Approved => "approved",
            PlanStatus::Rejected => "rejected",
            PlanStatus::Superseded => "superseded",
        }
    }
}

/// A version of a thread's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// The thread's plan: the same across versions.
    pub id: String,
    /// From 1.
    pub version: u32,
    pub goal: String,
    pub steps: Vec<PlanStep>,
    pub status: PlanStatus,
    /// Why the user rejected it, when they said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Plan {
    /// The plan as a numbered list with each step's status, for people and for the model.
    pub fn to_markdown(&self) -> String {
        let mut text = format!("# {}\n", self.goal.trim());
        for (i, step) in self.steps.iter().enumerate() {
            let mark = match step.status {
                StepStatus::Pending => " ",
                StepStatus::InProgress => "~",
                StepStatus::Completed => "x",
                StepStatus::Skipped => "-",
            };
            text.push_str(&format!(
                "{}. [{mark}] {} (step {})\n",
                i + 1,
                step.description.trim(),
                step.id
            ));
        }
        text
    }
}
