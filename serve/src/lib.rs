//! `cove serve`: the engine behind an HTTP API and a web page, for people who would rather
//! watch and steer in a browser tab and for other front ends. Runs belong to the server,
//! not to a connection; their events are stored and streamed as Server-Sent Events that
//! resume where a client left off. The API's routes come from the protocol's
//! [`SERVE_ENDPOINTS`] table, which also renders `/v1/openapi.json`.

mod api;
mod auth;
mod browser;
mod checkpoints;
mod error;
mod export;
mod feed;
mod metrics;
mod page;
#[cfg(test)]
mod page_types;
mod runs;
mod uploads;
mod view;
mod workspace;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::http::header::{LOCATION, REFERRER_POLICY, SET_COOKIE};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, get, on};
use cove_protocol::api::{Endpoint, Method};
use cove_protocol::events::{EventKind, RunEvent, RunStatus};
use cove_protocol::serve::{SERVE_ENDPOINTS, ServeOp};
use serde_json::json;

use auth::Auth;
use cove_core::config::FileConfig;
use cove_core::session::{Engine, Notice, RunSettings, SessionError};
use cove_core::store::{RunState, Store};
use cove_sandbox::LocalSettings;
use cove_sandbox::choice::{Narrate, SandboxRequest};
use feed::Feeds;
use runs::Live;
use uploads::Uploads;
use workspace::Sandboxes;

/// How a server is set up: what its front end (the command line) read and checked.
pub struct ServeOptions {
    /// Where to listen (port 0 picks a free one, printed).
    pub listen: SocketAddr,
    /// The API token (none: a new one, printed).
    pub token: Option<String>,
    /// The model of threads whose client names none.
    pub model: Option<String>,
    /// The sandbox every thread gets unless a client may name another.
    pub sandbox: SandboxRequest,
    /// Settings of every run.
    pub settings: RunSettings,
    /// More files of MCP servers for every run.
    pub mcp_config: Vec<PathBuf>,
    /// Use the settings of the folder the server runs in without asking.
    pub trust: bool,
    /// Print the address and the login link as a JSON line.
    pub json: bool,
    pub store: Arc<Store>,
    pub file: FileConfig,
    /// What a local sandbox's walls let through.
    pub local: LocalSettings,
    /// How Kubernetes sandboxes are reached (none: detected).
    pub in_cluster: Option<bool>,
}

/// Why the server did not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// An option is wrong: fix it.
    #[error("{0}")]
    Invalid(String),
    /// Something must be set up first (a free address, a model's key).
    #[error("{0}")]
    Setup(String),
    /// The server failed while it ran.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl From<cove_core::store::StoreError> for ServeError {
    fn from(e: cove_core::store::StoreError) -> Self {
        ServeError::Session(e.into())
    }
}

/// The server's notes on standard error (`cove: …`), as the command line words them; none
/// but warnings when it speaks JSON.
pub(crate) struct Log {
    json: bool,
}

impl Narrate for Log {
    fn note(&self, text: &str) {
        if !self.json {
            eprintln!("cove: {text}");
        }
    }

    fn warn(&self, text: &str) {
        eprintln!("cove: {text}");
    }
}

impl Log {
    /// Says each notice as loudly as it asks.
    fn say(&self, notices: &[Notice]) {
        for notice in notices {
            match notice {
                Notice::Note(text) => self.note(text),
                Notice::Warning(text) => self.warn(text),
            }
        }
    }
}

/// What every request of the server shares.
pub(crate) struct ServeState {
    store: Arc<Store>,
    file: FileConfig,
    local: LocalSettings,
    in_cluster: Option<bool>,
    log: Log,
    sandbox: SandboxRequest,
    settings: RunSettings,
    mcp_config: Vec<PathBuf>,
    trust: bool,
    /// The model of threads whose client names none (`--model`, `COVE_MODEL`).
    model: Option<String>,
    auth: Auth,
    feeds: Feeds,
    live: Live,
    uploads: Uploads,
    /// Sandboxes opened to show threads' files while no run has them.
    sandboxes: Sandboxes,
    /// Held while a reply is checked against what the thread waits for and its run starts.
    answering: tokio::sync::Mutex<()>,
    /// Addresses that show a workspace's web pages.
    views: view::Views,
}

#[derive(serde::Deserialize)]
struct LoginQuery {
    token: Option<String>,
}

/// The answer that sets the session cookie and opens the page. The cookie's path holds a
/// key drawn now; the page learns it from the address's fragment (which no request carries)
/// and makes its requests under it.
fn logged_in(session: &str) -> Response {
    let key = cove_core::store::new_id(16);
    (
        StatusCode::SEE_OTHER,
        [
            (SET_COOKIE, auth::session_cookie_header(session, &key)),
            (LOCATION, format!("/#key={key}")),
            (REFERRER_POLICY, "no-referrer".to_string()),
        ],
    )
        .into_response()
}

/// `GET /login?token=...`: trades a login link's one-time secret for the session cookie;
/// without one, the login page.
async fn login(State(state): State<Arc<ServeState>>, Query(query): Query<LoginQuery>) -> Response {
    let Some(secret) = query.token else {
        return page::login_help("Log in with the link cove serve printed, or its API token.");
    };
    match state.auth.log_in(&secret) {
        Some(session) => logged_in(&session),
        None => page::login_help(
            "This login link was used already, or is not this server's: each works once.",
        ),
    }
}

/// `POST /login` (the login page's form): trades the API token for the session cookie.
async fn login_with_token(
    State(state): State<Arc<ServeState>>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<LoginQuery>,
) -> Response {
    if !auth::same_origin(&headers) {
        return error::ApiError::new(
            StatusCode::FORBIDDEN,
            "cross_origin",
            "log in from this server's own page",
        )
        .into_response();
    }
    match state
        .auth
        .log_in_with_token(form.token.as_deref().unwrap_or_default())
    {
        Some(session) => logged_in(&session),
        None => page::login_help("That is not this server's API token."),
    }
}

fn filter(method: Method) -> MethodFilter {
    match method {
        Method::Get => MethodFilter::GET,
        Method::Post => MethodFilter::POST,
        Method::Put => MethodFilter::PUT,
        Method::Delete => MethodFilter::DELETE,
    }
}

/// The handler serving one row of the table.
fn handler(endpoint: &Endpoint<ServeOp>) -> MethodRouter<Arc<ServeState>> {
    let m = filter(endpoint.method);
    match endpoint.op {
        ServeOp::OpenApi => on(m, openapi),
        ServeOp::ThreadsList => on(m, api::list_threads),
        ServeOp::ThreadsCreate => on(m, api::create_thread),
        ServeOp::ThreadGet => on(m, api::get_thread),
        ServeOp::ThreadFileView => on(m, view::open_view),
        ServeOp::ThreadDelete => on(m, api::delete_thread),
        ServeOp::ThreadMessages => on(m, api::messages),
        ServeOp::ThreadExport => on(m, export::export),
        ServeOp::ThreadEvents => on(m, feed::events),
        ServeOp::ThreadReply => on(m, api::reply),
        ServeOp::ThreadPermit => on(m, api::permit),
        ServeOp::ThreadApprove => on(m, api::approve),
        ServeOp::ThreadReject => on(m, api::reject),
        ServeOp::ThreadStop => on(m, api::stop),
        ServeOp::ThreadResume => on(m, api::resume),
        ServeOp::ThreadTakeover => on(m, browser::takeover),
        ServeOp::ThreadFiles => on(m, workspace::list),
        ServeOp::ThreadFileContent => on(m, workspace::content),
        ServeOp::ThreadScreenshot => on(m, browser::screenshot),
        ServeOp::ThreadLatestScreenshot => on(m, browser::latest_screenshot),
        ServeOp::ThreadCheckpoints => on(m, checkpoints::list),
        ServeOp::ThreadCheckpointDiff => on(m, checkpoints::diff),
        ServeOp::ThreadRewind => on(m, checkpoints::rewind),
        ServeOp::ThreadFork => on(m, checkpoints::fork),
        ServeOp::Upload => on(m, api::upload),
        ServeOp::Metrics => on(m, metrics::metrics),
    }
}

/// `GET /v1/openapi.json`.
async fn openapi() -> axum::Json<serde_json::Value> {
    axum::Json(cove_protocol::serve::openapi_document(env!(
        "CARGO_PKG_VERSION"
    )))
}

async fn unknown_route() -> error::ApiError {
    error::ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_route",
        "no such route; see /v1/openapi.json",
    )
}

fn router(state: Arc<ServeState>) -> Router {
    let mut protected = Router::new();
    for endpoint in SERVE_ENDPOINTS {
        protected = protected.route(endpoint.path, handler(endpoint));
    }
    let protected = protected
        .fallback(unknown_route)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::guard,
        ));
    Router::new()
        .route("/login", get(login).post(login_with_token))
        .route("/", get(page::index))
        .route("/page/{file}", get(page::module))
        .route("/app.css", get(page::style))
        .route("/view/{token}/{*path}", get(view::serve_view))
        .merge(protected)
        .with_state(state)
}

/// Runs left marked running by a server that died are interrupted: each thread gets an
/// event saying so, and resumes on request.
fn interrupt_leftovers(state: &ServeState) -> Result<(), ServeError> {
    let store = &state.store;
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
            timestamp_ms: u64::try_from(cove_core::store::now_ms()).unwrap_or(0),
            kind: EventKind::Error {
                message: format!("{why}; resume the thread to continue"),
                fatal: false,
            },
        };
        state.feeds.publish(store, event)?;
    }
    Ok(())
}

impl ServeState {
    /// The sandbox threads get unless a client names another: `--sandbox`, `sandbox` in
    /// cove.toml, or `local`.
    pub(crate) fn own_sandbox(&self) -> String {
        self.sandbox
            .sandbox
            .clone()
            .or_else(|| self.file.sandbox.clone())
            .unwrap_or_else(|| "local".into())
    }

    /// Whether a client may name `choice` for its thread: only what `[serve] sandboxes`
    /// lists (the operator decides where agents run).
    /// `host` (no walls) only when listed by that very name: no pattern admits it.
    pub(crate) fn may_choose(&self, choice: &str) -> bool {
        self.file.serve.as_ref().is_some_and(|serve| {
            serve.sandboxes.iter().any(|pattern| {
                if choice == "host" {
                    pattern == "host"
                } else {
                    cove_core::permissions::glob::Glob::new(pattern).matches(choice)
                }
            })
        })
    }

    /// The engine over the server's database and `cove.toml`.
    pub(crate) fn engine(&self) -> Engine<'_> {
        Engine {
            store: &self.store,
            file: &self.file,
        }
    }

    /// The sandboxes the server reaches.
    pub(crate) fn sandbox_layer(&self) -> cove_sandbox::choice::Sandboxes<'_> {
        cove_sandbox::choice::Sandboxes {
            store: &self.store,
            file: &self.file,
            local: &self.local,
            in_cluster: self.in_cluster,
            narrate: &self.log,
            helper_program: std::env::current_exe().ok(),
        }
    }
}

/// Serves until Ctrl-C: the API, the page and the runs (see the module's docs).
pub async fn serve(options: ServeOptions) -> Result<(), ServeError> {
    if let Some(token) = &options.token
        && token.len() < 32
    {
        return Err(ServeError::Invalid(
            "--token must have 32 characters or more".into(),
        ));
    }
    let model = options.model.filter(|m| !m.trim().is_empty());
    if let Some(name) = &model {
        // A wrong name or a missing key is said now, not at the first task.
        let choice =
            cove_core::llm::choice::ModelChoice::parse(name).map_err(SessionError::from)?;
        cove_core::llm::choice::connect(&choice).map_err(SessionError::from)?;
    }
    let json = options.json;
    let listen = options.listen;
    let given_token = options.token.is_some();
    let state = Arc::new(ServeState {
        store: options.store,
        file: options.file,
        local: options.local,
        in_cluster: options.in_cluster,
        log: Log { json },
        sandbox: options.sandbox,
        settings: options.settings,
        mcp_config: options.mcp_config,
        trust: options.trust,
        model,
        auth: Auth::new(options.token),
        feeds: Feeds::default(),
        live: Live::default(),
        uploads: Uploads::new(cove_core::config::data_dir().join("serve/uploads")),
        sandboxes: Sandboxes::default(),
        answering: tokio::sync::Mutex::new(()),
        views: view::Views::default(),
    });
    interrupt_leftovers(&state)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| ServeError::Setup(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServeError::Setup(e.to_string()))?;
    let login = format!("http://{addr}/login?token={}", state.auth.login_secret());
    // A token the operator gave is theirs already: not echoed into logs.
    let shown = if given_token {
        None
    } else {
        Some(state.auth.token.clone())
    };
    if json {
        println!(
            "{}",
            json!({"listening": format!("http://{addr}"), "login_url": login, "token": shown})
        );
    } else {
        println!("cove serve listening on http://{addr}");
        println!("open in your browser (works once): {login}");
        match &shown {
            Some(token) => println!("API token (Authorization: Bearer): {token}"),
            None => println!("API token (Authorization: Bearer): the one given with --token"),
        }
    }
    let janitor = {
        let state = state.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(10));
            loop {
                tick.tick().await;
                state.sandboxes.close_idle(false).await;
            }
        })
    };
    let stopping = {
        let state = state.clone();
        async move {
            let _ = tokio::signal::ctrl_c().await;
            janitor.abort();
            state.sandboxes.close_idle(true).await;
            state.live.stop_all();
            // The runs record that they stopped before the process ends.
            for _ in 0..100 {
                if state.live.count() == 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            // Open event streams end, so the server can.
            state.feeds.close();
        }
    };
    // The page's requests come under its cookie's secret path; the routes are the plain ones.
    let app = tower::Layer::layer(
        &axum::middleware::map_request(auth::strip_key),
        router(state),
    );
    axum::serve(listener, axum::ServiceExt::into_make_service(app))
        .with_graceful_shutdown(stopping)
        .await
        .map_err(|e| ServeError::Failed(format!("the server failed: {e}")))
}
