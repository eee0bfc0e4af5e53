//! The versions of a thread's plan: proposed by the agent, approved (perhaps as the user
//! edited it) or rejected by the user, and its steps' progress while the agent works to it.

use cove_protocol::plan::{Plan, PlanStatus, PlanStep, StepStatus};
use rusqlite::{OptionalExtension, Transaction, params};

use super::{Decision, RequestKind, Store, StoreError, now_ms};

/// Why a change to the plan cannot be made; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("thread {0} has no plan waiting for approval; `cove show {0}` shows its plan")]
    NotWaiting(String),
    #[error("thread {0} has no approved plan to report progress on; propose one with create_plan")]
    NotApproved(String),
    #[error("the plan has no step {step:?}; its steps are {known}")]
    NoStep { step: String, known: String },
    #[error("{0}")]
    Malformed(String),
    #[error("{0}")]
    Store(#[from] StoreError),
}

fn sql(e: rusqlite::Error) -> PlanError {
    PlanError::Store(StoreError::from(e))
}

/// A plan's goal and steps, as the agent proposes them or the user edits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDraft {
    pub goal: String,
    pub steps: Vec<PlanStep>,
}

impl PlanDraft {
    /// Checks the draft: a goal, at least one step, each with words, ids unique (steps
    /// without an id are numbered).
    pub fn checked(mut self) -> Result<PlanDraft, PlanError> {
        self.goal = self.goal.trim().to_string();
        if self.goal.is_empty() {
            return Err(PlanError::Malformed("the plan has no goal".into()));
        }
        if self.steps.is_empty() {
            return Err(PlanError::Malformed("the plan has no steps".into()));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, step) in self.steps.iter_mut().enumerate() {
            step.description = step.description.trim().to_string();
            if step.description.is_empty() {
                return Err(PlanError::Malformed(format!(
                    "step {} has no description",
                    i + 1
                )));
            }
            step.id = step.id.trim().to_string();
            if step.id.is_empty() {
                step.id = (i + 1).to_string();
            }
            if !seen.insert(step.id.clone()) {
                return Err(PlanError::Malformed(format!(
                    "two steps have the id {:?}",
                    step.id
                )));
            }
        }
        Ok(self)
    }
}

fn latest(tx: &Transaction<'_>, thread: &str) -> Result<Option<Plan>, PlanError> {
    let text: Option<String> = tx
        .query_row(
            "SELECT plan FROM plans WHERE thread_id = ?1 ORDER BY version DESC LIMIT 1",
            params![thread],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql)?;
    text.map(|t| parse(&t)).transpose()
}

fn parse(text: &str) -> Result<Plan, PlanError> {
    serde_json::from_str(text)
        .map_err(|e| PlanError::Store(StoreError::Corrupt(format!("a stored plan: {e}"))))
}

/// Who changed the plan: the agent's changes are told in its run's events as they happen,
/// the user's (approve, edit, reject) by the thread's next run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Agent,
    User,
}

fn save(
    tx: &Transaction<'_>,
    thread: &str,
    plan: &Plan,
    new: bool,
    by: By,
) -> Result<(), PlanError> {
    let text = serde_json::to_string(plan)
        .map_err(|e| PlanError::Store(StoreError::Corrupt(e.to_string())))?;
    let announced = by == By::Agent;
    if new {
        tx.execute(
            "INSERT INTO plans (thread_id, version, plan, status, created_at, announced) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![thread, plan.version, text, plan.status.as_str(), now_ms(), announced],
        )
        .map_err(sql)?;
    } else {
        tx.execute(
            "UPDATE plans SET plan = ?3, status = ?4, announced = ?5 WHERE thread_id = ?1 AND version = ?2",
            params![thread, plan.version, text, plan.status.as_str(), announced],
        )
        .map_err(sql)?;
    }
    Ok(())
}

impl Store {
    fn plan_tx<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, PlanError>,
    ) -> Result<T, PlanError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let out = f(&tx)?;
        tx.commit().map_err(sql)?;
        Ok(out)
    }

    /// Stores the agent's proposal as the plan's next version, waiting for the user; a
    /// version still waiting is superseded by it.
    pub fn propose_plan(&self, thread: &str, draft: PlanDraft) -> Result<Plan, PlanError> {
        let draft = draft.checked()?;
        self.plan_tx(|tx| {
            let before = latest(tx, thread)?;
            // A plan still waiting for the user is replaced: its request closes.
            super::requests::close_waiting(
                tx,
                thread,
                RequestKind::Plan,
                Decision::Withdrawn,
                None,
            )
            .map_err(sql)?;
            if let Some(mut old) = before.clone().filter(|p| p.status == PlanStatus::Proposed) {
                old.status = PlanStatus::Superseded;
                save(tx, thread, &old, false, By::Agent)?;
            }
            let plan = Plan {
                id: thread.to_string(),
                version: before.map_or(1, |p| p.version + 1),
                goal: draft.goal,
                steps: draft.steps,
                status: PlanStatus::Proposed,
                reason: None,
            };
            save(tx, thread, &plan, true, By::Agent)?;
            Ok(plan)
        })
    }

    /// The plan's latest version.
    pub fn current_plan(&self, thread: &str) -> Result<Option<Plan>, PlanError> {
        self.plan_tx(|tx| latest(tx, thread))
    }

    /// Every version of the thread's plan, oldest first.
    pub fn plan_versions(&self, thread: &str) -> Result<Vec<Plan>, PlanError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT plan FROM plans WHERE thread_id = ?1 ORDER BY version")
            .map_err(sql)?;
        let texts = stmt
            .query_map(params![thread], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(sql)?;
        texts.iter().map(|t| parse(t)).collect()
    }

    /// Approves the plan waiting for the user, or, with `edited`, stores the user's edit as
    /// the next version, approved.
    pub fn approve_plan(&self, thread: &str, edited: Option<PlanDraft>) -> Result<Plan, PlanError> {
        let edited = edited.map(PlanDraft::checked).transpose()?;
        self.plan_tx(|tx| {
            let mut waiting = latest(tx, thread)?
                .filter(|p| p.status == PlanStatus::Proposed)
                .ok_or_else(|| PlanError::NotWaiting(thread.to_string()))?;
            super::requests::close_waiting(tx, thread, RequestKind::Plan, Decision::Approve, None)
                .map_err(sql)?;
            match edited {
                None => {
                    waiting.status = PlanStatus::Approved;
                    save(tx, thread, &waiting, false, By::User)?;
                    Ok(waiting)
                }
                Some(draft) => {
                    waiting.status = PlanStatus::Superseded;
                    save(tx, thread, &waiting, false, By::Agent)?;
                    let plan = Plan {
                        id: waiting.id,
                        version: waiting.version + 1,
                        goal: draft.goal,
                        steps: draft.steps,
                        status: PlanStatus::Approved,
                        reason: None,
                    };
                    save(tx, thread, &plan, true, By::User)?;
                    Ok(plan)
                }
            }
        })
    }

    /// Rejects the plan waiting for the user, with their reason if they gave one.
    pub fn reject_plan(&self, thread: &str, reason: Option<&str>) -> Result<Plan, PlanError> {
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        self.plan_tx(|tx| {
            let mut waiting = latest(tx, thread)?
                .filter(|p| p.status == PlanStatus::Proposed)
                .ok_or_else(|| PlanError::NotWaiting(thread.to_string()))?;
            super::requests::close_waiting(tx, thread, RequestKind::Plan, Decision::Reject, reason)
                .map_err(sql)?;
            waiting.status = PlanStatus::Rejected;
            waiting.reason = reason.map(str::to_string);
            save(tx, thread, &waiting, false, By::User)?;
            Ok(waiting)
        })
    }

    /// The plan's latest version if the user decided on it since a run last told of it (its
    /// approval, edit or rejection), marked told.
    pub fn take_untold_decision(&self, thread: &str) -> Result<Option<Plan>, PlanError> {
        self.plan_tx(|tx| {
            let untold: Option<String> = tx
                .query_row(
                    "SELECT plan FROM plans WHERE thread_id = ?1 AND announced = 0
                     ORDER BY version DESC LIMIT 1",
                    params![thread],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql)?;
            let Some(text) = untold else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE plans SET announced = 1 WHERE thread_id = ?1 AND announced = 0",
                params![thread],
            )
            .map_err(sql)?;
            parse(&text).map(Some)
        })
    }

    /// Moves a step of the approved plan to `status`.
    pub fn update_plan_step(
        &self,
        thread: &str,
        step: &str,
        status: StepStatus,
    ) -> Result<Plan, PlanError> {
        self.plan_tx(|tx| {
            let mut plan = latest(tx, thread)?
                .filter(|p| p.status == PlanStatus::Approved)
                .ok_or_else(|| PlanError::NotApproved(thread.to_string()))?;
            let known = plan
                .steps
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let Some(found) = plan.steps.iter_mut().find(|s| s.id == step.trim()) else {
                return Err(PlanError::NoStep {
                    step: step.to_string(),
                    known,
                });
            };
            found.status = status;
            save(tx, thread, &plan, false, By::Agent)?;
            Ok(plan)
        })
    }
}
