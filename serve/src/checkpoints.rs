//! A thread's checkpoints over the API: listed with where in the conversation each was
//! taken, compared, rewound to (the thread's streams are told, so every tab shows it again
//! from its start), and forked from into a sandbox of the new thread's own.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use cove_core::session::RewindScope;
use cove_core::store::NewThread;
use cove_protocol::checkpoints::{CURRENT, CheckpointDiff, DiffQuery};
use cove_protocol::events::{EventKind, RunEvent};
use cove_protocol::serve::{
    ForkAnswer, ForkRequest, RewindAnswer, RewindRequest, RewindScopeWire, ThreadCheckpointView,
    ThreadCheckpoints,
};
use cove_sandbox::coved_log;

use super::ServeState;
use super::error::{ApiError, ApiJson, ApiQuery};
use super::runs::Claim;
use super::workspace::{from_sandbox, sandbox_of};

/// `GET /v1/threads/{id}/checkpoints`
pub(super) async fn list(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
) -> Result<Json<ThreadCheckpoints>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let checkpoints = state
        .store
        .checkpoints(&thread.id)?
        .into_iter()
        .filter(|c| c.sandbox == thread.sandbox)
        .map(|c| ThreadCheckpointView {
            checkpoint: c.checkpoint,
            run_id: c.run_id,
            after_message: c.after_message,
            reason: c.reason,
            files: c.files,
            changed: c.changed,
            created_at: c.created_at,
        })
        .collect();
    Ok(Json(ThreadCheckpoints { checkpoints }))
}

/// `GET /v1/threads/{id}/checkpoints/{checkpoint}/diff`
pub(super) async fn diff(
    State(state): State<Arc<ServeState>>,
    Path((id, checkpoint)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<DiffQuery>,
) -> Result<Json<CheckpointDiff>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let from = state.engine().checkpoint(&thread.id, &checkpoint)?;
    let to = if query.to == CURRENT {
        CURRENT.to_string()
    } else {
        state.engine().checkpoint(&thread.id, &query.to)?.checkpoint
    };
    let sandbox = sandbox_of(&state, &thread).await?;
    let diff = sandbox
        .checkpoint_diff(&from.checkpoint, &DiffQuery { to })
        .await
        .map_err(from_sandbox)?;
    Ok(Json(diff))
}

/// `POST /v1/threads/{id}/rewind`
pub(super) async fn rewind(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RewindRequest>,
) -> Result<Json<RewindAnswer>, ApiError> {
    let thread = state.store.thread_exact(&id)?;
    state.engine().checkpoint(&thread.id, &body.checkpoint)?;
    let scope = match body.scope {
        RewindScopeWire::Both => RewindScope::Both,
        RewindScopeWire::Files => RewindScope::FilesOnly,
        RewindScopeWire::Conversation => RewindScope::ConversationOnly,
    };
    // Its sandbox first (a running run's would answer, but then the claim is refused), then
    // no run may start on the thread while it goes back.
    let client = sandbox_of(&state, &thread).await?;
    let _held = Claim::take(&state, &thread.id)?;
    let done = state
        .engine()
        .rewind(
            &thread.id,
            &body.checkpoint,
            scope,
            body.stop_commands,
            &client,
        )
        .await?;
    let branch = done.conversation.map(|c| c.branch);
    if scope != RewindScope::FilesOnly {
        let event = RunEvent {
            seq: 0,
            thread_id: thread.id.clone(),
            run_id: String::new(),
            timestamp_ms: u64::try_from(cove_core::store::now_ms()).unwrap_or(0),
            kind: EventKind::ThreadRewound {
                checkpoint: body.checkpoint.clone(),
                branch,
            },
        };
        state.feeds.publish(&state.store, event)?;
    }
    Ok(Json(RewindAnswer {
        checkpoint: body.checkpoint,
        files_before: done.files.as_ref().map(|f| f.before.clone()),
        written: done.files.as_ref().map_or(0, |f| f.written),
        removed: done.files.as_ref().map_or(0, |f| f.removed),
        messages_aside: done.conversation.map_or(0, |c| c.messages),
        branch,
    }))
}

/// `POST /v1/threads/{id}/fork`
pub(super) async fn fork(
    State(state): State<Arc<ServeState>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ForkRequest>,
) -> Result<(StatusCode, Json<ForkAnswer>), ApiError> {
    let thread = state.store.thread_exact(&id)?;
    let new_id = NewThread::fresh_id();
    // A fork works apart: a local sandbox gets a workspace of its own even where the
    // server's threads share one (`--workspace`).
    let mut request = state.sandbox.clone();
    request.workspace = None;
    let (spec, token) = state
        .sandbox_layer()
        .choose(&request, || state.engine().workspace_of(&new_id))?;
    let label = spec.label();
    state.engine().check_fork_target(&thread, &label)?;
    let source = sandbox_of(&state, &thread).await?;
    let from = state
        .engine()
        .fork_source(&thread.id, body.checkpoint.as_deref(), &source)
        .await?;
    let target = state
        .sandbox_layer()
        .open(spec, token, Some(&coved_log()))
        .await?;
    let made = state
        .engine()
        .fork(&from, &source, &target.client, new_id, label)
        .await;
    target.close().await;
    let fork = made?;
    tracing::info!(thread = %fork.thread.id, from = %thread.id, checkpoint = %from.checkpoint.checkpoint, "thread forked");
    Ok((
        StatusCode::CREATED,
        Json(ForkAnswer {
            thread_id: fork.thread.id,
            forked_from: thread.id,
            checkpoint: from.checkpoint.checkpoint,
        }),
    ))
}
