//! The permission gate a tool call passes before it runs: the policy allows it, refuses it,
//! or asks the user, and then the call waits, stored, for their decision from the run's
//! handle or from any process on the database. Other calls of the same answer go on. When
//! no one can answer during the run, the call is held instead: the run pauses once the
//! answer's other calls are done, and the next run applies the decision.

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use cove_protocol::client::CovedClient;
use cove_protocol::events::EventKind;
use serde_json::Value;

use super::control::RunControl;
use super::events::Emitter;
use crate::permissions::{self, Effect, Policy, Verdict};
use crate::store::{Decision, NewRequest, Request, RequestKind, Store};
use crate::tools::{Control, ToolResult};
use cove_protocol::plan::PlanStatus;

/// How often a waiting call looks in the store for a decision given by another process (one
/// given through the run's handle wakes it at once).
const DECISION_POLL: Duration = Duration::from_millis(250);

/// The decisions a request offers.
const DECISIONS: [Decision; 3] = [
    Decision::AllowOnce,
    Decision::AllowForThread,
    Decision::Deny,
];

/// The gate of one run's calls.
#[derive(Debug)]
pub(crate) struct Gate {
    /// None lets every call run (a plan-first run without a policy).
    pub policy: Option<Arc<Policy>>,
    /// Calls that change anything wait for an approved plan.
    pub plan_first: bool,
    pub store: Arc<Store>,
    pub thread_id: String,
    pub run_id: String,
    pub control: Arc<RunControl>,
    pub emitter: Arc<Emitter>,
    /// Requests are not waited for but held: no one can answer during the run.
    pub hold: bool,
    /// The sandbox, asked where a shell call's session is before its command is read.
    pub sandbox: CovedClient,
}

/// Why a call did not run.
#[derive(Debug)]
pub(crate) enum NotRun {
    /// The policy, the plan or the user refused it: the model reads this result.
    Refused(ToolResult),
    /// It waits for a decision no one can give during this run; the run pauses.
    Held(ToolResult),
}

fn refused(result: ToolResult) -> NotRun {
    NotRun::Refused(result)
}

impl Gate {
    /// Waits until call `call_id` of `tool` (which rules know as `policy_name`) may run;
    /// the result to give the model instead when it may not.
    pub async fn pass(
        &self,
        call_id: &str,
        tool: &str,
        policy_name: &str,
        args: &Value,
    ) -> Result<(), NotRun> {
        if self.plan_first && permissions::effect_of(policy_name, args) == Effect::Change {
            let approved = self
                .store
                .current_plan(&self.thread_id)
                .map_err(|e| refused(unavailable(&e)))?
                .is_some_and(|p| p.status == PlanStatus::Approved);
            if !approved {
                return Err(refused(ToolResult::error(
                    "Not run: the user wants to approve a plan before anything is changed. Propose it with create_plan (you may read and look around first).",
                )));
            }
        }
        let Some(policy) = &self.policy else {
            return Ok(());
        };
        let shell_dir = if policy.reads_shell_dir(policy_name, args) {
            self.shell_dir(args).await
        } else {
            None
        };
        let why = match policy.check_from(policy_name, args, shell_dir.as_deref()) {
            Verdict::Allow => return Ok(()),
            Verdict::Deny { why } => {
                return Err(refused(ToolResult::error(format!(
                    "Not run: {why}. Do not try to get around it; find another way or ask the user."
                ))));
            }
            Verdict::Ask { why } => why,
        };
        let fingerprint = permissions::fingerprint(policy_name, args);
        match self.store.granted(&self.thread_id, &fingerprint) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(refused(unavailable(&e))),
        }
        let request = self
            .store
            .open_request(NewRequest {
                thread_id: self.thread_id.clone(),
                run_id: self.run_id.clone(),
                kind: RequestKind::Permission,
                call_id: call_id.to_string(),
                tool: tool.to_string(),
                summary: permissions::summary(policy_name, args),
                why,
                arguments: args.clone(),
                fingerprint,
            })
            .map_err(|e| refused(unavailable(&e)))?;
        self.wait(request)
            .instrument(super::spans::wait("permission"))
            .await
    }

    /// Where the shell of the session a call names is (an earlier `cd` moved it); `None`
    /// when the session has no shell yet or the sandbox does not say (an older coved).
    async fn shell_dir(&self, args: &Value) -> Option<String> {
        let name = args
            .get("session_name")
            .and_then(Value::as_str)
            .unwrap_or(cove_tools::DEFAULT_SESSION);
        let sessions = self.sandbox.sessions().await.ok()?;
        sessions
            .sessions
            .into_iter()
            .find(|s| s.name == name)
            .and_then(|s| s.cwd)
    }

    /// Takes up a request a killed run left: announces it again if it still waits, then
    /// acts on its decision as [`Gate::pass`] does.
    pub async fn resume(&self, request: Request) -> Result<(), NotRun> {
        self.wait(request).await
    }

    /// Waits for `request`'s decision (announcing the request while it has none), then
    /// records that the run acts on it; holds it when no one can answer during the run.
    async fn wait(&self, request: Request) -> Result<(), NotRun> {
        if request.decision.is_none() {
            self.emitter.emit(EventKind::PermissionRequest {
                request_id: request.id.clone(),
                call_id: request.call_id.clone(),
                tool: request.tool.clone(),
                summary: request.summary.clone(),
                why: request.why.clone(),
                arguments: request.arguments.clone(),
                decisions: DECISIONS.iter().map(|d| d.as_str().to_string()).collect(),
            });
            if self.hold {
                let mut held = ToolResult::error(format!(
                    "Not run yet: it waits for the user's permission (request {}).",
                    request.id
                ));
                held.control = Some(Control::AwaitsPermission {
                    request_id: request.id,
                    summary: request.summary,
                });
                return Err(NotRun::Held(held));
            }
        }
        let decided = loop {
            // Registered before looking, so a decision stored in between still wakes it.
            let woken = self.control.decided();
            match self.store.request(&self.thread_id, &request.id) {
                Ok(Some(r)) if r.decision.is_some() => break r,
                Ok(_) => {}
                Err(e) => return Err(refused(unavailable(&e))),
            }
            tokio::select! {
                () = woken => {}
                () = tokio::time::sleep(DECISION_POLL) => {}
            }
        };
        let decision = decided.decision.unwrap_or(Decision::Deny);
        self.emitter.emit(EventKind::PermissionDecided {
            request_id: decided.id.clone(),
            call_id: decided.call_id.clone(),
            decision: decision.as_str().to_string(),
            reason: decided.reason.clone(),
        });
        if let Err(e) = self.store.mark_applied(&self.thread_id, &decided.id) {
            tracing::warn!(error = %e, "cannot record that a permission decision was acted on");
        }
        if decision.allows() {
            return Ok(());
        }
        Err(refused(ToolResult::error(match decided.reason {
            Some(reason) => format!("Not run: the user denied this call. Their reason: {reason}"),
            None => "Not run: the user denied this call.".to_string(),
        })))
    }
}

fn unavailable(error: &dyn std::fmt::Display) -> ToolResult {
    ToolResult::error(format!(
        "Not run: the permission for this call could not be recorded ({error})"
    ))
}
