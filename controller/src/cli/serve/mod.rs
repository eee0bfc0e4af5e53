//! `cove serve`: the engine behind an HTTP API, for front ends other than the terminal.
//! Runs belong to the server, not to a connection; their events are stored and streamed
//! as Server-Sent Events that resume where a client left off.
//!
//! Not built yet: the web page (`/` says so), attachments and workspace files.

mod api;
mod auth;
mod feed;
mod runs;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;
use cove_protocol::events::{EventKind, RunEvent, RunStatus};
use serde_json::json;

use super::run::RunFlags;
use super::sandbox_choice::SandboxArgs;
use super::{CliError, Invocation};
use crate::store::RunState;
use auth::{Auth, COOKIE_NAME};
use feed::Feeds;
use runs::Live;

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    /// Where to listen (port 0 picks a free one, printed).
    #[arg(long, env = "COVE_SERVE_LISTEN", default_value = "127.0.0.1:7800")]
    listen: SocketAddr,
    /// The API token (default: a new one each start, printed).
    #[arg(long, env = "COVE_SERVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The sandbox every thread gets (default: a local one per thread).
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// Settings of every run.
    #[command(flatten)]
    run: RunFlags,
}

/// What every request of the server shares.
pub(super) struct ServeState {
    inv: Arc<Invocation>,
    sandbox: SandboxArgs,
    flags: RunFlags,
    auth: Auth,
    feeds: Feeds,
    live: Live,
}

#[derive(serde::Deserialize)]
struct LoginQuery {
    token: String,
}

/// `GET /login?token=...`: trades a login link's one-time secret for the session cookie.
async fn login(State(state): State<Arc<ServeState>>, Query(query): Query<LoginQuery>) -> Response {
    match state.auth.log_in(&query.token) {
        Some(session) => (
            StatusCode::SEE_OTHER,
            [
                (
                    SET_COOKIE,
                    format!("{COOKIE_NAME}={session}; HttpOnly; SameSite=Strict; Path=/"),
                ),
                (LOCATION, "/".to_string()),
            ],
        )
            .into_response(),
        None => (
            StatusCode::UNAUTHORIZED,
            Html("<!doctype html><title>Cove</title><p>This login link was used already or is not this server's. Each start of <code>cove serve</code> prints a new one; for another, restart it."),
        )
            .into_response(),
    }
}

/// `GET /`: the web page is not built yet.
async fn index() -> Html<&'static str> {
    Html(
        "<!doctype html><title>Cove</title><p>cove serve is running. Its web page is not built yet; use the API (<code>/v1/threads</code>, see the README).",
    )
}

fn router(state: Arc<ServeState>) -> Router {
    let api = Router::new()
        .route(
            "/v1/threads",
            get(api::list_threads).post(api::create_thread),
        )
        .route("/v1/threads/{id}", get(api::get_thread))
        .route("/v1/threads/{id}/messages", get(api::messages))
        .route("/v1/threads/{id}/events", get(feed::events))
        .route("/v1/threads/{id}/reply", post(api::reply))
        .route("/v1/threads/{id}/permissions/{request}", post(api::permit))
        .route("/v1/threads/{id}/approve", post(api::approve))
        .route("/v1/threads/{id}/reject", post(api::reject))
        .route("/v1/threads/{id}/stop", post(api::stop))
        .route("/v1/threads/{id}/resume", post(api::resume))
        .route("/", get(index))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::guard,
        ));
    Router::new()
        .route("/login", get(login))
        .merge(api)
        .with_state(state)
}

/// Runs left marked running by a server that died are interrupted: each thread gets an
/// event saying so, and resumes on request.
fn interrupt_leftovers(state: &ServeState) -> Result<(), CliError> {
    let store = &state.inv.store;
    for thread in store.threads()? {
        let Some(last) = store.last_run(&thread.id)? else {
            continue;
        };
        if last.status != RunState::Running {
            continue;
        }
        let why = "interrupted: the server stopped";
        store.end_run(&last, RunStatus::Stopped, Some(why), None)?;
        let event = RunEvent {
            seq: 0,
            thread_id: thread.id.clone(),
            run_id: last.id.clone(),
            timestamp_ms: u64::try_from(crate::store::now_ms()).unwrap_or(0),
            kind: EventKind::Error {
                message: format!("{why}; resume the thread to continue"),
                fatal: false,
            },
        };
        state.feeds.publish(store, event)?;
    }
    Ok(())
}

/// `cove serve`.
pub(super) async fn serve(inv: Invocation, args: ServeArgs) -> Result<ExitCode, CliError> {
    if let Some(token) = &args.token
        && token.len() < 32
    {
        return Err(CliError::Usage(
            "--token must have 32 characters or more".into(),
        ));
    }
    let json = inv.printer.json();
    let state = Arc::new(ServeState {
        inv: Arc::new(inv),
        sandbox: args.sandbox,
        flags: args.run,
        auth: Auth::new(args.token),
        feeds: Feeds::default(),
        live: Live::default(),
    });
    interrupt_leftovers(&state)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::Setup(format!("cannot listen on {}: {e}", args.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::Setup(e.to_string()))?;
    let login = format!("http://{addr}/login?token={}", state.auth.login_secret());
    if json {
        println!(
            "{}",
            json!({"listening": format!("http://{addr}"), "login_url": login, "token": state.auth.token})
        );
    } else {
        println!("cove serve listening on http://{addr}");
        println!("open in your browser (works once): {login}");
        println!("API token (Authorization: Bearer): {}", state.auth.token);
    }
    let stopping = {
        let state = state.clone();
        async move {
            let _ = tokio::signal::ctrl_c().await;
            for run in state.live.all() {
                run.stop();
            }
            // The runs record that they stopped before the process ends.
            for _ in 0..100 {
                if state.live.count() == 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    };
    axum::serve(listener, router(state))
        .with_graceful_shutdown(stopping)
        .await
        .map_err(|e| CliError::Failed(format!("the server failed: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
