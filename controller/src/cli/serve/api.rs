//! The JSON API of `cove serve`: threads, their messages and the answers a person gives
//! (reply, permission decisions, plan approval), stop and resume. Errors are
//! `{"error": {"code", "message"}}`, the message saying what to do.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::ServeState;
use super::runs::launch;
use crate::cli::plan::{approved, rejected};
use crate::cli::run::new_thread;
use crate::llm::ChatMessage;
use crate::store::{DecideError, Decision, PlanError, RequestKind, StoreError, Thread};

/// An error answer.
#[derive(Debug)]
pub(super) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub(super) fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }

    fn bad(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": {"code": self.code, "message": self.message}})),
        )
            .into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NoThread(id) => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no thread {id:?}; GET /v1/threads lists them"),
            ),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                other.to_string(),
            ),
        }
    }
}

impl From<crate::cli::CliError> for ApiError {
    fn from(e: crate::cli::CliError) -> Self {
        use crate::cli::CliError;
        match e {
            CliError::Usage(m) => ApiError::bad(m),
            CliError::NotFound(m) => ApiError::new(StatusCode::NOT_FOUND, "not_found", m),
            CliError::Setup(m) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "setup", m),
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "failed",
                other.to_string(),
            ),
        }
    }
}

impl From<PlanError> for ApiError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Store(s) => s.into(),
            PlanError::Malformed(m) => ApiError::bad(m),
            other => ApiError::conflict("no_plan_waiting", other.to_string()),
        }
    }
}

impl From<DecideError> for ApiError {
    fn from(e: DecideError) -> Self {
        match e {
            e @ DecideError::NoRequest { .. } => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
            }
            e @ DecideError::AlreadyDecided { .. } => {
                ApiError::conflict("already_answered", e.to_string())
            }
            e @ DecideError::NotOffered { .. } => ApiError::bad(e.to_string()),
            DecideError::Store(s) => s.into(),
        }
    }
}

/// A thread as the API shows it: the stored row, whether it runs now, what it waits for and
/// the number of its newest event.
fn view(state: &ServeState, thread: &Thread) -> Result<Value, ApiError> {
    let waiting: Vec<Value> = state
        .inv
        .store
        .waiting_requests(&thread.id)?
        .into_iter()
        .map(|r| {
            json!({
                "id": r.id, "kind": r.kind.as_str(), "tool": r.tool, "summary": r.summary,
                "why": r.why, "arguments": r.arguments, "created_at": r.created_at,
                "decision": r.decision.map(|d| d.as_str()),
            })
        })
        .collect();
    let mut value = serde_json::to_value(thread).unwrap_or(Value::Null);
    value["running"] = json!(state.live.get(&thread.id).is_some());
    value["waiting"] = json!(waiting);
    value["last_event"] = json!(state.inv.store.last_event(&thread.id)?);
    Ok(value)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NewTask {
    task: String,
    model: Option<String>,
    tool_calls: Option<String>,
    #[serde(default)]
    plan: bool,
}

/// `POST /v1/threads`: a thread for the task, started at once.
pub(super) async fn create_thread(
    State(state): State<Arc<ServeState>>,
    Json(body): Json<NewTask>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if body.task.trim().is_empty() {
        return Err(ApiError::bad(
            "the task is empty: say what the agent should do",
        ));
    }
    let thread = new_thread(
        &state.inv,
        &body.task,
        body.model,
        body.tool_calls,
        &state.sandbox,
    )?;
    let plan_first = body.plan || state.inv.file.plan.unwrap_or(false);
    launch(
        &state,
        thread.clone(),
        Some(ChatMessage::user(body.task)),
        plan_first,
    )?;
    Ok((StatusCode::CREATED, Json(view(&state, &thread)?)))
}

/// `GET /v1/threads`: every thread, newest first.
pub(super) async fn list_threads(
    State(state): State<Arc<ServeState>>,
) -> Result<Json<Value>, ApiError> {
    let threads = state.inv.store.threads()?;
    let rows: Vec<Value> = threads
        .iter()
        .map(|t| view(&state, t))
        .collect::<Result<_, _>>()?;
    Ok(Json(json!({ "threads": rows })))
}

/// `GET /v1/threads/{id}`.
pub(super) async fn get_thread(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let thread = state.inv.store.thread(&id)?;
    Ok(Json(view(&state, &thread)?))
}

/// `GET /v1/threads/{id}/messages`: the stored conversation.
pub(super) async fn messages(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let thread = state.inv.store.thread(&id)?;
    let messages = state.inv.store.messages(&thread.id)?;
    Ok(Json(json!({ "messages": messages })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Reply {
    text: String,
}

/// `POST /v1/threads/{id}/reply`: ends the takeover a running thread waits on; or, when the
/// thread is not running, its next run (the answer to its question, or a new message).
pub(super) async fn reply(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    Json(body): Json<Reply>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let thread = state.inv.store.thread(&id)?;
    if body.text.trim().is_empty() {
        return Err(ApiError::bad("the reply is empty"));
    }
    let message = ChatMessage::user(body.text);
    match state.live.get(&thread.id) {
        Some(Some(run)) => {
            if run.reply(&message)? {
                return Ok((StatusCode::OK, Json(json!({"delivered": "run"}))));
            }
            Err(ApiError::conflict(
                "not_waiting",
                format!(
                    "thread {} is working and waits for no answer; reply once it asks, or stop it",
                    thread.id
                ),
            ))
        }
        Some(None) => Err(ApiError::conflict(
            "starting",
            format!(
                "thread {} is starting and waits for no answer yet",
                thread.id
            ),
        )),
        None => {
            let plan_waits = state
                .inv
                .store
                .waiting_requests(&thread.id)?
                .iter()
                .any(|r| r.kind == RequestKind::Plan);
            if plan_waits {
                return Err(ApiError::conflict(
                    "plan_waiting",
                    format!(
                        "thread {}'s plan waits for approval: approve or reject it",
                        thread.id
                    ),
                ));
            }
            launch(&state, thread, Some(message), false)?;
            Ok((StatusCode::ACCEPTED, Json(json!({"delivered": "new_run"}))))
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Permit {
    decision: String,
    reason: Option<String>,
}

/// `POST /v1/threads/{id}/permissions/{request}`: allow_once, allow_for_thread or deny. The
/// waiting call runs (or is refused); a thread that is not running resumes.
pub(super) async fn permit(
    State(state): State<Arc<ServeState>>,
    Path((id, request)): Path<(String, String)>,
    Json(body): Json<Permit>,
) -> Result<Json<Value>, ApiError> {
    let thread = state.inv.store.thread(&id)?;
    let decision: Decision = body.decision.parse().map_err(|_| {
        ApiError::bad(format!(
            "decision must be allow_once, allow_for_thread or deny, not {:?}",
            body.decision
        ))
    })?;
    let live = state.live.get(&thread.id);
    let decided = match &live {
        Some(Some(run)) => run.permit(&request, decision, body.reason.as_deref())?,
        _ => state.inv.store.decide_request(
            &thread.id,
            &request,
            decision,
            body.reason.as_deref(),
        )?,
    };
    if live.is_none() {
        // Its run ended (the server restarted): the decision takes effect as it resumes.
        launch(&state, thread, None, false)?;
    }
    let also: Vec<&str> = decided.also.iter().map(|r| r.id.as_str()).collect();
    Ok(Json(json!({
        "request": decided.request.id,
        "decision": decision.as_str(),
        "also": also,
    })))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Reject {
    reason: Option<String>,
}

/// `POST /v1/threads/{id}/approve`: approves the waiting plan; the thread runs on.
pub(super) async fn approve(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let thread = state.inv.store.thread(&id)?;
    let plan = state.inv.store.approve_plan(&thread.id, None)?;
    launch(&state, thread, Some(approved(&plan, false)), false)?;
    Ok((StatusCode::ACCEPTED, Json(json!({"plan": plan}))))
}

/// `POST /v1/threads/{id}/reject`: rejects the waiting plan; with a reason the agent
/// proposes a new version, without one the thread ends there.
pub(super) async fn reject(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    body: Option<Json<Reject>>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let thread = state.inv.store.thread(&id)?;
    let reason = body.and_then(|b| b.0.reason);
    let plan = state.inv.store.reject_plan(&thread.id, reason.as_deref())?;
    let ended = match rejected(&plan) {
        Some(message) => {
            launch(&state, thread, Some(message), false)?;
            false
        }
        None => true,
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"plan": plan, "ended": ended})),
    ))
}

/// `POST /v1/threads/{id}/stop`.
pub(super) async fn stop(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let thread = state.inv.store.thread(&id)?;
    match state.live.get(&thread.id) {
        Some(Some(run)) => {
            run.stop();
            Ok((StatusCode::ACCEPTED, Json(json!({"stopping": true}))))
        }
        Some(None) => Err(ApiError::conflict(
            "starting",
            "the run is starting; stop it in a moment",
        )),
        None => Err(ApiError::conflict(
            "not_running",
            format!("thread {} is not running", thread.id),
        )),
    }
}

/// `POST /v1/threads/{id}/resume`: continues a thread whose run stopped.
pub(super) async fn resume(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let thread = state.inv.store.thread(&id)?;
    launch(&state, thread, None, false)?;
    Ok((StatusCode::ACCEPTED, Json(json!({"resumed": true}))))
}
