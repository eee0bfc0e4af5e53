//! A scripted language model over real HTTP, speaking the OpenAI Chat Completions and the
//! Anthropic Messages streaming formats, with chunk boundaries in awkward places.
//!
//! A script is a list of steps; each request is answered by the next step. A step renders its
//! tool calls natively when the request offers `tools`, and as Suna's XML in the text when it
//! does not, so one script drives both tool modes. Faults (429, 500, a cut stream, a hang)
//! apply to a step's first attempts; a step is used up only once it was answered in full.

mod checks;
mod stream;

pub use checks::{pairing_problems, tool_definition_problems};
pub use stream::{OUTPUT_TOKENS, xml_text};
use stream::{anthropic_events, chunking, fail, openai_events, sse};

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use serde_json::{Value, json};

use crate::prompt_cache::{Billed, PromptCaches};
use crate::received::collect_text;
pub use crate::received::{Received, Wire};

/// A tool call in a scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedCall {
    pub name: String,
    pub arguments: Value,
}

/// How a step's first attempts fail.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// 429 with `retry-after` (seconds).
    RateLimited { retry_after_secs: u64 },
    /// 500.
    ServerError,
    /// The stream stops (the connection closes) after this many bytes.
    CutAfter(usize),
    /// The server never answers (until the client gives up).
    Hang,
    /// 400: the prompt is longer than the model's window (Anthropic's wording).
    PromptTooLong,
    /// 400 `context_length_exceeded`, stating this window as OpenAI's and vLLM's API do.
    WindowExceeded(u64),
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub text: String,
    pub calls: Vec<ScriptedCall>,
    /// `stop`, `length` or `tool_calls`; inferred when absent.
    pub finish: Option<&'static str>,
    /// In XML form, text sent raw after the calls (to script malformed XML).
    pub raw_xml: Option<String>,
    faults: VecDeque<Fault>,
}

impl Turn {
    /// An answer of plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Turn {
            text: text.into(),
            calls: Vec::new(),
            finish: None,
            raw_xml: None,
            faults: VecDeque::new(),
        }
    }

    /// Adds a tool call.
    pub fn call(mut self, name: &str, arguments: Value) -> Self {
        self.calls.push(ScriptedCall {
            name: name.into(),
            arguments,
        });
        self
    }

    /// Sets the finish reason.
    pub fn finish(mut self, reason: &'static str) -> Self {
        self.finish = Some(reason);
        self
    }

    /// Appends raw text to the XML rendering (for malformed calls).
    pub fn raw_xml(mut self, xml: impl Into<String>) -> Self {
        self.raw_xml = Some(xml.into());
        self
    }

    /// The next attempt at this step fails with `fault` (call several times to fail more).
    pub fn failing(mut self, fault: Fault) -> Self {
        self.faults.push_back(fault);
        self
    }
}

type Dynamic = Box<dyn Fn(&Received) -> Turn + Send + Sync>;

enum Step {
    Fixed(Turn),
    Dynamic(Dynamic, VecDeque<Fault>),
}

/// How the server cuts its streamed answers into writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Chunking {
    /// Boundaries inside `data:` lines, JSON strings and UTF-8 characters (the default: the
    /// client must cope).
    #[default]
    Awkward,
    /// One write per SSE event, as real providers send them (for benchmarks).
    PerEvent,
    /// One write per SSE event with this pause before each, as a model that takes its
    /// time: a watcher sees the answer grow.
    Paced(Duration),
}

#[derive(Default)]
struct Shared {
    steps: Mutex<VecDeque<Step>>,
    received: Mutex<Vec<Arc<Received>>>,
    chunking: Mutex<Chunking>,
    /// Requests that broke the pairing of tool calls and results (see [`pairing_problems`]).
    violations: Mutex<Vec<String>>,
    caches: Mutex<PromptCaches>,
    /// How each answered request was billed, in order.
    billed: Mutex<Vec<Billed>>,
    /// The window a llama.cpp server would run with: said at `/props`, and longer prompts
    /// are refused as llama.cpp refuses them.
    window: Mutex<Option<u64>>,
    /// Prompt tokens reported in the usage whatever was sent, as a server whose chat
    /// template dropped part of the prompt reports them.
    reported_prompt: Mutex<Option<u64>>,
}

/// A running scripted model.
pub struct ScriptedLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedLlm {
    /// Serves on a free localhost port, with an empty script.
    pub async fn start() -> Result<ScriptedLlm> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/models", get(models))
            .route("/props", get(props))
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            // Uncompressed long runs send bodies of many megabytes (as real APIs allow).
            .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            // Streamed answers are many small writes: Nagle's algorithm would hold each one
            // back until the client's delayed ACK, 40 ms per exchange.
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).await;
        });
        Ok(ScriptedLlm { addr, shared, task })
    }

    /// `OPENAI_BASE_URL` for this server.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `ANTHROPIC_BASE_URL` for this server.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves as llama.cpp with a context of `n_ctx` tokens: `GET /props` says it, and a
    /// prompt longer than it is refused with llama.cpp's error.
    pub fn serve_window(&self, n_ctx: u64) {
        if let Ok(mut window) = self.shared.window.lock() {
            *window = Some(n_ctx);
        }
    }

    /// Reports `tokens` as every answer's prompt tokens (OpenAI wire), whatever was sent.
    pub fn report_prompt_tokens(&self, tokens: u64) {
        if let Ok(mut reported) = self.shared.reported_prompt.lock() {
            *reported = Some(tokens);
        }
    }

    /// Queues a fixed answer.
    pub fn push(&self, turn: Turn) {
        if let Ok(mut steps) = self.shared.steps.lock() {
            steps.push_back(Step::Fixed(turn));
        }
    }

    /// Queues an answer computed from the request it answers.
    pub fn push_fn(&self, f: impl Fn(&Received) -> Turn + Send + Sync + 'static) {
        if let Ok(mut steps) = self.shared.steps.lock() {
            steps.push_back(Step::Dynamic(Box::new(f), VecDeque::new()));
        }
    }

    /// Queues a computed answer whose first attempts fail.
    pub fn push_fn_failing(
        &self,
        faults: Vec<Fault>,
        f: impl Fn(&Received) -> Turn + Send + Sync + 'static,
    ) {
        if let Ok(mut steps) = self.shared.steps.lock() {
            steps.push_back(Step::Dynamic(Box::new(f), faults.into()));
        }
    }

    /// Sets how answers are cut into writes from now on.
    pub fn set_chunking(&self, chunking: Chunking) {
        if let Ok(mut c) = self.shared.chunking.lock() {
            *c = chunking;
        }
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.shared
            .received
            .lock()
            .map(|r| r.iter().map(|one| Received::clone(one)).collect())
            .unwrap_or_default()
    }

    /// How each answered request's prompt was billed (cached and written parts as the
    /// provider's prompt cache would have them), in order.
    pub fn billed(&self) -> Vec<Billed> {
        self.shared
            .billed
            .lock()
            .map(|b| b.clone())
            .unwrap_or_default()
    }

    /// How many requests the server has received.
    pub fn request_count(&self) -> usize {
        self.shared.received.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// Steps not yet used.
    pub fn remaining(&self) -> usize {
        self.shared.steps.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// Waits up to `within` for the server to have received `n` requests.
    pub async fn wait_for_requests(&self, n: usize, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if self.request_count() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

impl ScriptedLlm {
    /// Requests so far that a real provider would have refused for a tool call without a
    /// result or a result without a call.
    pub fn violations(&self) -> Vec<String> {
        self.shared
            .violations
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }
}

impl Drop for ScriptedLlm {
    /// Fails the test that sent a request a real provider would refuse, even when the test
    /// itself never looked (each such request was also answered 400, as a provider would).
    fn drop(&mut self) {
        self.task.abort();
        let violations = self.violations();
        if !violations.is_empty() && !std::thread::panicking() {
            panic!(
                "the controller sent requests a real provider would refuse:\n{}",
                violations.join("\n")
            );
        }
    }
}

/// The next answer, or the fault this attempt must suffer. Steps are used up on success.
fn next(shared: &Shared, received: &Received) -> Result<Turn, Fault> {
    let Ok(mut steps) = shared.steps.lock() else {
        return Err(Fault::ServerError);
    };
    let Some(front) = steps.front_mut() else {
        return Ok(Turn::text("(the script has no more answers)"));
    };
    match front {
        Step::Fixed(turn) => {
            if let Some(fault) = turn.faults.pop_front() {
                return Err(fault);
            }
        }
        Step::Dynamic(_, faults) => {
            if let Some(fault) = faults.pop_front() {
                return Err(fault);
            }
        }
    }
    match steps.pop_front() {
        Some(Step::Fixed(turn)) => Ok(turn),
        Some(Step::Dynamic(f, _)) => Ok(f(received)),
        None => Ok(Turn::text("")),
    }
}

fn record(shared: &Shared, wire: Wire, headers: HeaderMap, body: &Bytes) -> Arc<Received> {
    let received = Arc::new(Received {
        wire,
        body: serde_json::from_slice(body).unwrap_or(Value::Null),
        headers,
    });
    if let Ok(mut all) = shared.received.lock() {
        all.push(received.clone());
    }
    received
}

/// A provider's refusal of a request whose tool calls and results do not pair up, or
/// whose tool definitions it would not accept.
fn refuse_unpaired(shared: &Shared, request: &Received) -> Option<Response> {
    let mut problems = pairing_problems(request);
    problems.extend(tool_definition_problems(request));
    if problems.is_empty() {
        return None;
    }
    let index = shared.received.lock().map(|r| r.len()).unwrap_or(0);
    if let Ok(mut violations) = shared.violations.lock() {
        violations.extend(problems.iter().map(|p| format!("request {index}: {p}")));
    }
    let message = format!(
        "tool calls and results do not pair up: {}",
        problems.join("; ")
    );
    Some(
        (
            StatusCode::BAD_REQUEST,
            json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string(),
        )
            .into_response(),
    )
}

/// `GET /props` as llama.cpp's server answers it, when a window was set; 404 otherwise, as
/// other servers answer.
async fn props(State(shared): State<Arc<Shared>>) -> Response {
    match shared.window.lock().ok().and_then(|w| *w) {
        Some(n_ctx) => axum::Json(json!({
            "default_generation_settings": {"n_ctx": n_ctx, "params": {"n_predict": -1}},
            "total_slots": 1,
            "model_path": "/models/scripted.gguf",
            "chat_template": "",
        }))
        .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// llama.cpp's refusal of a prompt longer than its context, when a window was set.
fn refuse_beyond_window(shared: &Shared, request: &Received) -> Option<Response> {
    let n_ctx = shared.window.lock().ok().and_then(|w| *w)?;
    let prompt = request.prompt_tokens() as u64;
    (prompt > n_ctx).then(|| {
        (
            StatusCode::BAD_REQUEST,
            json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": n_ctx}})
            .to_string(),
        )
            .into_response()
    })
}

/// `GET /v1/models` as OpenAI's API answers it: the one model served here.
async fn models() -> Response {
    axum::Json(serde_json::json!({
        "object": "list",
        "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "cove-harness"}],
    }))
    .into_response()
}

async fn openai(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request = record(&shared, Wire::OpenAi, headers, &body);
    if let Some(refusal) = refuse_unpaired(&shared, &request) {
        return refusal;
    }
    if let Some(refusal) = refuse_beyond_window(&shared, &request) {
        return refusal;
    }
    match next(&shared, &request) {
        Ok(turn) => {
            let mut billed = match shared.caches.lock() {
                Ok(mut caches) => caches.openai(&request),
                Err(_) => Billed::default(),
            };
            if let Some(reported) = shared.reported_prompt.lock().ok().and_then(|r| *r) {
                billed = Billed {
                    prompt: reported as usize,
                    cached: 0,
                    cache_write: 0,
                };
            }
            if let Ok(mut all) = shared.billed.lock() {
                all.push(billed);
            }
            sse(
                openai_events(&turn, request.native_tools(), billed),
                None,
                chunking(&shared),
            )
        }
        Err(fault) => {
            fail(
                fault,
                openai_events(&Turn::text("partial answer"), false, Billed::default()),
            )
            .await
        }
    }
}

async fn anthropic(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request = record(&shared, Wire::Anthropic, headers, &body);
    if let Some(refusal) = refuse_unpaired(&shared, &request) {
        return refusal;
    }
    let billed = match shared.caches.lock() {
        Ok(mut caches) => caches.anthropic(&request),
        Err(_) => Ok(Billed::default()),
    };
    let billed = match billed {
        Ok(billed) => billed,
        Err(message) => {
            if let Ok(mut violations) = shared.violations.lock() {
                violations.push(format!("cache marks: {message}"));
            }
            return (
                StatusCode::BAD_REQUEST,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
                    .to_string(),
            )
                .into_response();
        }
    };
    match next(&shared, &request) {
        Ok(turn) => {
            if let Ok(mut all) = shared.billed.lock() {
                all.push(billed);
            }
            sse(
                anthropic_events(&turn, request.native_tools(), billed),
                None,
                chunking(&shared),
            )
        }
        Err(fault) => {
            fail(
                fault,
                anthropic_events(&Turn::text("partial answer"), false, Billed::default()),
            )
            .await
        }
    }
}

#[cfg(test)]
mod pairing_tests;
