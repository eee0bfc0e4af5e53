//! The JSON API of `cove serve`: threads, their messages and the answers a person gives
//! (reply, permission decisions, plan approval), stop and resume. Errors are
//! `{"error": {"code", "message"}}`, the message saying what to do.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use cove_protocol::serve::{
    Accepted, EventWaitView, MessageList, NewThreadRequest, PermitRequest, PermitResponse,
    PlanAnswer, RejectRequest, ReplyRequest, ReplyResponse, ThreadList, ThreadView, Upload,
    UploadQuery, WaitingRequest,
};

use super::ServeState;
use super::error::{ApiError, ApiJson, ApiQuery};
use super::runs::{Claim, Input, launch};
use cove_core::llm::ChatMessage;
use cove_core::plan_answer::{approved, rejected};
use cove_core::store::{Decision, RequestKind, Thread};
use cove_sandbox::SandboxSpec;

/// A thread as the API shows it: the stored row, whether it runs now, what it waits for and
/// the number of its newest event.
fn view(state: &ServeState, thread: &Thread) -> Result<ThreadView, ApiError> {
    let running = state.live.get(&thread.id).is_some();
    let waiting = state
        .store
        .waiting_requests(&thread.id)?
        .into_iter()
        // A question whose thread runs again was answered: the run closes it as it begins.
        .filter(|r| !(running && r.kind == RequestKind::Ask))
        .map(|r| WaitingRequest {
            id: r.id,
            kind: r.kind.as_str().to_string(),
            tool: Some(r.tool).filter(|t| !t.is_empty()),
            summary: r.summary,
            why: Some(r.why).filter(|w| !w.is_empty()),
            arguments: Some(r.arguments).filter(|a| !a.is_null()),
            created_at: r.created_at,
            decision: r.decision.map(|d| d.as_str().to_string()),
        })
        .collect();
    // A wait a run of this server is in; one a dead process left is taken up on resume.
    let waiting_for = state
        .store
        .event_wait(&thread.id)?
        .filter(|_| running)
        .map(|w| EventWaitView {
            summary: w.summary,
            since: w.created_at,
            until: w.deadline,
        });
    Ok(ThreadView {
        id: thread.id.clone(),
        title: thread.title.clone(),
        created_at: thread.created_at,
        updated_at: thread.updated_at,
        model: thread.model.clone(),
        tool_mode: thread.tool_mode.clone(),
        sandbox: thread.sandbox.clone(),
        parent_id: thread.parent_id.clone(),
        status: thread.status.as_str().to_string(),
        running,
        waiting,
        waiting_for,
        last_event: state.store.last_event(&thread.id)?,
    })
}

/// `POST /v1/threads`: a thread for the task, started at once.
pub(super) async fn create_thread(
    State(state): State<Arc<ServeState>>,
    ApiJson(body): ApiJson<NewThreadRequest>,
) -> Result<(StatusCode, Json<ThreadView>), ApiError> {
    if body.task.trim().is_empty() {
        return Err(ApiError::bad(
            "the task is empty: say what the agent should do",
        ));
    }
    let mut sandbox = state.sandbox.clone();
    if let Some(choice) = body.sandbox.filter(|s| !s.trim().is_empty()) {
        if choice.contains("://") {
            return Err(ApiError::bad(format!(
                "sandbox {choice:?} is an address: name it in cove.toml ([sandboxes.NAME] with its url and token) and give that name"
            )));
        }
        let own = state.own_sandbox();
        if choice != own {
            if !state.may_choose(&choice) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "sandbox_not_allowed",
                    format!(
                        "this server runs threads in {own:?}; its operator lets clients choose others with [serve] sandboxes = [...] in cove.toml, and {choice:?} is not there"
                    ),
                ));
            }
            // The server's sandbox token is for its own sandbox, never another's.
            sandbox.token = None;
        }
        sandbox.sandbox = Some(choice);
    }
    let attachments = state.uploads.take(&body.attachments)?;
    let model = body
        .model
        .filter(|m| !m.trim().is_empty())
        .or_else(|| state.model.clone());
    let thread = state
        .engine()
        .new_thread(&body.task, model, body.tool_calls, |workspace| {
            let (spec, _) = state.sandbox_layer().choose(&sandbox, || workspace)?;
            Ok::<_, ApiError>(spec.label())
        })
        .await?;
    let plan_first = body.plan || state.file.plan.unwrap_or(false);
    launch(
        &state,
        thread.clone(),
        Input {
            message: Some(ChatMessage::user(body.task)),
            attachments,
        },
        plan_first,
    )?;
    Ok((StatusCode::CREATED, Json(view(&state, &thread)?)))
}

/// `GET /v1/threads`: every thread, newest first.
pub(super) async fn list_threads(
    State(state): State<Arc<ServeState>>,
) -> Result<Json<ThreadList>, ApiError> {
    let threads = state
        .store
        .threads()?
        .iter()
        .map(|t| view(&state, t))
        .collect::<Result<_, _>>()?;
    Ok(Json(ThreadList { threads }))
}

/// `GET /v1/threads/{id}`.
pub(super) async fn get_thread(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Json<ThreadView>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    Ok(Json(view(&state, &thread)?))
}

/// `GET /v1/threads/{id}/messages`: the stored conversation.
pub(super) async fn messages(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Json<MessageList>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let messages = state
        .store
        .messages(&thread.id)?
        .into_iter()
        // What a rewind left aside is not the conversation any more.
        .filter(|m| m.branch == 0)
        .map(|m| serde_json::to_value(m).unwrap_or_default())
        .collect();
    Ok(Json(MessageList { messages }))
}

/// `POST /v1/threads/{id}/reply`: ends the takeover a running thread waits on; or, when the
/// thread is not running, its next run (the answer to its question, or a new message).
pub(super) async fn reply(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ReplyRequest>,
) -> Result<(StatusCode, Json<ReplyResponse>), ApiError> {
    let thread = state.store.thread_exact(&id)?;
    if body.text.trim().is_empty() {
        return Err(ApiError::bad("the reply is empty"));
    }
    let attachments = state.uploads.take(&body.attachments)?;
    let live = state.live.get(&thread.id);
    if let (Some(question), Some(_)) = (&body.answers, &live) {
        // A run has started since the question: someone answered it.
        return Err(ApiError::conflict(
            "already_answered",
            format!("the question {question} was answered already (in another tab?)"),
        ));
    }
    match live {
        Some(Some(run)) => {
            if !attachments.is_empty() {
                return Err(ApiError::conflict(
                    "not_waiting",
                    "files go with a new message, not with handing the browser back: send them once the run has ended",
                ));
            }
            if run.controller.reply(&ChatMessage::user(body.text))? {
                return Ok((
                    StatusCode::OK,
                    Json(ReplyResponse {
                        delivered: "run".into(),
                    }),
                ));
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
            // One answer per question, whichever tab sends it first: the check and the
            // run's claim go together.
            let _answering = state.answering.lock().await;
            let waiting = state.store.waiting_requests(&thread.id)?;
            if let Some(question) = &body.answers
                && !waiting
                    .iter()
                    .any(|r| &r.id == question && r.kind == RequestKind::Ask)
            {
                return Err(ApiError::conflict(
                    "already_answered",
                    format!("the question {question} was answered already (in another tab?)"),
                ));
            }
            if waiting.iter().any(|r| r.kind == RequestKind::Plan) {
                return Err(ApiError::conflict(
                    "plan_waiting",
                    format!(
                        "thread {}'s plan waits for approval: approve or reject it",
                        thread.id
                    ),
                ));
            }
            launch(
                &state,
                thread,
                Input {
                    message: Some(ChatMessage::user(body.text)),
                    attachments,
                },
                false,
            )
            .map_err(|e| match body.answers {
                Some(question) => ApiError::conflict(
                    "already_answered",
                    format!("the question {question} was answered already (in another tab?)"),
                ),
                None => e,
            })?;
            Ok((
                StatusCode::ACCEPTED,
                Json(ReplyResponse {
                    delivered: "new_run".into(),
                }),
            ))
        }
    }
}

/// `POST /v1/threads/{id}/permissions/{request}`: allow_once, allow_for_thread or deny. The
/// waiting call runs (or is refused); a thread that is not running resumes.
pub(super) async fn permit(
    State(state): State<Arc<ServeState>>,
    Path((id, request)): Path<(String, String)>,
    ApiJson(body): ApiJson<PermitRequest>,
) -> Result<Json<PermitResponse>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let decision: Decision = body.decision.parse().map_err(|_| {
        ApiError::bad(format!(
            "decision must be allow_once, allow_for_thread or deny, not {:?}",
            body.decision
        ))
    })?;
    let decided = match state.live.get(&thread.id) {
        Some(Some(run)) => run
            .controller
            .permit(&request, decision, body.reason.as_deref())?,
        // The run starting takes the decision up as it begins.
        Some(None) => {
            state
                .store
                .decide_request(&thread.id, &request, decision, body.reason.as_deref())?
        }
        None => {
            // Its run ended (the server restarted): the decision takes effect as it
            // resumes, and is recorded only if it can.
            let claim = Claim::take(&state, &thread.id)?;
            let decided = state.store.decide_request(
                &thread.id,
                &request,
                decision,
                body.reason.as_deref(),
            )?;
            claim.start(thread, Input::default(), false);
            decided
        }
    };
    Ok(Json(PermitResponse {
        request: decided.request.id,
        decision: decision.as_str().to_string(),
        also: decided.also.into_iter().map(|r| r.id).collect(),
    }))
}

/// `POST /v1/threads/{id}/approve`: approves the waiting plan; the thread runs on.
pub(super) async fn approve(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<PlanAnswer>), ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let claim = Claim::take(&state, &thread.id)?;
    let plan = state.store.approve_plan(&thread.id, None)?;
    claim.start(thread, Input::text(approved(&plan, false)), false);
    Ok((
        StatusCode::ACCEPTED,
        Json(PlanAnswer { plan, ended: false }),
    ))
}

/// `POST /v1/threads/{id}/reject`: rejects the waiting plan; with a reason the agent
/// proposes a new version, without one the thread ends there.
pub(super) async fn reject(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RejectRequest>,
) -> Result<(StatusCode, Json<PlanAnswer>), ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let reason = body.reason;
    let claim = Claim::take(&state, &thread.id)?;
    let plan = state.store.reject_plan(&thread.id, reason.as_deref())?;
    let ended = match rejected(&plan) {
        Some(message) => {
            claim.start(thread, Input::text(message), false);
            false
        }
        None => true,
    };
    Ok((StatusCode::ACCEPTED, Json(PlanAnswer { plan, ended })))
}

/// `POST /v1/threads/{id}/stop`: stops the run, or keeps a starting one from beginning.
pub(super) async fn stop(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let thread = state.store.thread_exact(&id)?;
    if !state.live.stop(&thread.id) {
        return Err(ApiError::conflict(
            "not_running",
            format!("thread {} is not running", thread.id),
        ));
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            state: "stopping".into(),
        }),
    ))
}

/// `DELETE /v1/threads/{id}`: the thread and what is stored of it, unless it runs. The
/// thread is held while it goes, so no run can start on it meanwhile.
pub(super) async fn delete_thread(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Json<Accepted>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let _held = Claim::take(&state, &thread.id)?;
    state.store.delete_thread(&thread.id)?;
    tracing::info!(thread = %thread.id, "thread deleted");
    state.sandboxes.close(&thread.id).await;
    release_pooled_sandbox(&state, &thread.sandbox).await;
    Ok(Json(Accepted {
        state: "deleted".into(),
    }))
}

/// Removes the sandbox a deleted thread took from a pool, once no thread uses it: a pooled
/// sandbox is never handed to another.
async fn release_pooled_sandbox(state: &Arc<ServeState>, label: &str) {
    let name = match SandboxSpec::from_label(label) {
        SandboxSpec::Docker { name } | SandboxSpec::Kubernetes { name } => name,
        _ => return,
    };
    let pooled = match state.store.sandbox(&name) {
        Ok(Some(made)) if made.made_as.is_some() => made,
        _ => return,
    };
    let still_used = state
        .store
        .threads()
        .map_or(true, |threads| threads.iter().any(|t| t.sandbox == label));
    if still_used {
        return;
    }
    match state.sandbox_layer().remove_made(&pooled).await {
        Ok(()) => tracing::info!(sandbox = %name, "the pooled sandbox of a deleted thread removed"),
        Err(e) => {
            tracing::warn!(sandbox = %name, error = %e, "the pooled sandbox of a deleted thread could not be removed; `cove sandbox rm` it")
        }
    }
}

/// `POST /v1/threads/{id}/resume`: continues a thread whose run stopped.
pub(super) async fn resume(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let thread = state.store.thread_exact(&id)?;
    launch(&state, thread, Input::default(), false)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            state: "resumed".into(),
        }),
    ))
}

/// `POST /v1/uploads?name=`: holds a file for a task or reply that names it.
pub(super) async fn upload(
    State(state): State<Arc<ServeState>>,
    ApiQuery(query): ApiQuery<UploadQuery>,
    body: Body,
) -> Result<(StatusCode, Json<Upload>), ApiError> {
    let upload = state.uploads.put(&query.name, body).await?;
    Ok((StatusCode::CREATED, Json(upload)))
}
