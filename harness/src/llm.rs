//! A scripted language model over real HTTP, speaking the OpenAI Chat Completions and the
//! Anthropic Messages streaming formats, with chunk boundaries in awkward places.
//!
//! A script is a list of steps; each request is answered by the next step. A step renders its
//! tool calls natively when the request offers `tools`, and as Suna's XML in the text when it
//! does not, so one script drives both tool modes. Faults (429, 500, a cut stream, a hang)
//! apply to a step's first attempts; a step is used up only once it was answered in full.

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

/// Where the tool calls and their results of a request do not pair up, as the providers
/// require: in native mode each call's result comes right after the answer that made it
/// (OpenAI: `tool` messages; Anthropic: `tool_result` blocks in the next user message), and
/// no result stands without its call; in XML mode an answer with `<function_calls>` is
/// followed by results, and results follow an answer with calls.
pub fn pairing_problems(request: &Received) -> Vec<String> {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut problems = Vec::new();
    if !request.native_tools() {
        let text = |m: &Value| {
            let mut out = String::new();
            collect_text(&m["content"], &mut out);
            out
        };
        for (i, m) in messages.iter().enumerate() {
            let role = m["role"].as_str().unwrap_or_default();
            let is_result = role == "user" && text(m).starts_with("<function_results>");
            if role == "assistant" && text(m).contains("<function_calls>") {
                let answered = messages
                    .get(i + 1)
                    .is_some_and(|next| text(next).starts_with("<function_results>"));
                if !answered {
                    let next: String = messages
                        .get(i + 1)
                        .map(|n| text(n).chars().take(120).collect())
                        .unwrap_or_default();
                    problems.push(format!(
                        "message {i}: XML tool calls without results (next: {next:?})"
                    ));
                }
            }
            if is_result {
                let after_calls =
                    i.checked_sub(1)
                        .and_then(|p| messages.get(p))
                        .is_some_and(|prev| {
                            text(prev).contains("<function_calls>")
                                || text(prev).starts_with("<function_results>")
                        });
                if !after_calls {
                    problems.push(format!("message {i}: XML results after no tool calls"));
                }
            }
        }
        return problems;
    }
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let mut results: Vec<String> = Vec::new();
        match request.wire {
            Wire::OpenAi => {
                if role == "tool" {
                    results.push(m["tool_call_id"].as_str().unwrap_or_default().to_string());
                }
            }
            Wire::Anthropic => {
                for block in m["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        results.push(
                            block["tool_use_id"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                        );
                    }
                }
            }
        }
        for id in &results {
            match open.iter().position(|o| o == id) {
                Some(at) => {
                    open.remove(at);
                }
                None => problems.push(format!(
                    "message {i}: a result for {id:?}, which no open call has"
                )),
            }
        }
        let is_results_only = match request.wire {
            Wire::OpenAi => role == "tool",
            Wire::Anthropic => role == "user" && !results.is_empty(),
        };
        if !is_results_only && !open.is_empty() {
            problems.push(format!(
                "message {i}: calls {open:?} have no result before it"
            ));
            open.clear();
        }
        if role == "assistant" {
            match request.wire {
                Wire::OpenAi => {
                    for call in m["tool_calls"].as_array().into_iter().flatten() {
                        open.push(call["id"].as_str().unwrap_or_default().to_string());
                    }
                }
                Wire::Anthropic => {
                    for block in m["content"].as_array().into_iter().flatten() {
                        if block["type"] == "tool_use" {
                            open.push(block["id"].as_str().unwrap_or_default().to_string());
                        }
                    }
                }
            }
        }
    }
    if !open.is_empty() {
        problems.push(format!("the last answer's calls {open:?} have no result"));
    }
    problems
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

/// Where the request's tool definitions break rules both providers enforce: names of 1-64
/// characters of `[A-Za-z0-9_-]`, unique; an input schema of type object without `anyOf`,
/// `oneOf`, `allOf`, `not` or `enum` at its top (Anthropic refuses those); every array
/// schema with `items` (OpenAI refuses arrays without).
pub fn tool_definition_problems(request: &Received) -> Vec<String> {
    let mut problems = Vec::new();
    let mut names = std::collections::HashSet::new();
    for tool in request.body["tools"].as_array().into_iter().flatten() {
        let (name, schema) = match request.wire {
            Wire::OpenAi => (&tool["function"]["name"], &tool["function"]["parameters"]),
            Wire::Anthropic => (&tool["name"], &tool["input_schema"]),
        };
        let name = name.as_str().unwrap_or_default();
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            problems.push(format!("tool name {name:?} is not 1-64 of [A-Za-z0-9_-]"));
        }
        if !names.insert(name.to_string()) {
            problems.push(format!("tool {name:?} is defined twice"));
        }
        if schema["type"] != "object" {
            problems.push(format!(
                "tool {name:?}: the input schema is not of type object"
            ));
        }
        for key in ["anyOf", "oneOf", "allOf", "not", "enum"] {
            if schema.get(key).is_some() {
                problems.push(format!(
                    "tool {name:?}: {key} at the top of the input schema"
                ));
            }
        }
        arrays_without_items(name, schema, &mut problems);
    }
    problems
}

fn arrays_without_items(tool: &str, schema: &Value, problems: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            let is_array = match map.get("type") {
                Some(Value::String(t)) => t == "array",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
                _ => false,
            };
            if is_array && !map.contains_key("items") {
                problems.push(format!("tool {tool:?}: an array schema without items"));
            }
            for (key, value) in map {
                // Enum and default values are data, not schemas.
                if key != "enum" && key != "default" && key != "const" && key != "examples" {
                    arrays_without_items(tool, value, problems);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                arrays_without_items(tool, item, problems);
            }
        }
        _ => {}
    }
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

async fn fail(fault: Fault, partial: String) -> Response {
    match fault {
        Fault::RateLimited { retry_after_secs } => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, retry_after_secs.to_string())],
            r#"{"error":{"message":"rate limited","type":"rate_limit_error"}}"#,
        )
            .into_response(),
        Fault::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"error":{"message":"internal error","type":"api_error"}}"#,
        )
            .into_response(),
        Fault::PromptTooLong => (
            StatusCode::BAD_REQUEST,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 205668 tokens > 200000 maximum"}}"#,
        )
            .into_response(),
        Fault::WindowExceeded(window) => (
            StatusCode::BAD_REQUEST,
            json!({"error": {"message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {} tokens. Please reduce the length of the messages.", window + 1_204),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
            .to_string(),
        )
            .into_response(),
        Fault::CutAfter(bytes) => sse(partial, Some(bytes), Chunking::Awkward),
        Fault::Hang => {
            std::future::pending::<()>().await;
            StatusCode::OK.into_response()
        }
    }
}

/// Chunk sizes that put boundaries inside `data:`, inside JSON strings and inside UTF-8.
const CHUNKS: [usize; 9] = [1, 7, 3, 17, 2, 29, 5, 64, 11];

fn chunking(shared: &Shared) -> Chunking {
    shared.chunking.lock().map(|c| *c).unwrap_or_default()
}

fn sse(text: String, cut_after: Option<usize>, chunking: Chunking) -> Response {
    let bytes = text.into_bytes();
    let end = cut_after.map_or(bytes.len(), |n| n.min(bytes.len()));
    let mut pieces = Vec::new();
    let (mut at, mut i) = (0, 0);
    while at < end {
        let n = match chunking {
            Chunking::Awkward => CHUNKS[i % CHUNKS.len()],
            Chunking::PerEvent | Chunking::Paced(_) => bytes[at..end]
                .windows(2)
                .position(|w| w == b"\n\n")
                .map_or(end - at, |p| p + 2),
        }
        .min(end - at);
        pieces.push(Bytes::copy_from_slice(&bytes[at..at + n]));
        at += n;
        i += 1;
    }
    let cut = cut_after.is_some();
    let pause = match chunking {
        Chunking::Paced(pause) => Some(pause),
        Chunking::Awkward | Chunking::PerEvent => None,
    };
    let stream =
        futures_util::stream::unfold((pieces.into_iter(), cut), move |(mut it, cut)| async move {
            match it.next() {
                Some(piece) => {
                    match pause {
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => tokio::task::yield_now().await,
                    }
                    Some((Ok::<Bytes, std::io::Error>(piece), (it, cut)))
                }
                // A cut stream ends in an error, which drops the connection mid-body.
                None if cut => Some((
                    Err(std::io::Error::other("cut")),
                    (Vec::new().into_iter(), false),
                )),
                None => None,
            }
        });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Splits `s` into pieces of `n` characters (never inside a character).
fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// The text a turn shows the model in XML tool mode.
pub fn xml_text(turn: &Turn) -> String {
    let mut text = turn.text.clone();
    if !turn.calls.is_empty() {
        text.push_str("\n<function_calls>\n");
        for call in &turn.calls {
            text.push_str(&format!("<invoke name=\"{}\">\n", call.name));
            if let Some(args) = call.arguments.as_object() {
                for (key, value) in args {
                    let raw = match value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    text.push_str(&format!("<parameter name=\"{key}\">{raw}</parameter>\n"));
                }
            }
            text.push_str("</invoke>\n");
        }
        text.push_str("</function_calls>");
    }
    if let Some(raw) = &turn.raw_xml {
        text.push_str(raw);
    }
    text
}

/// Output tokens every scripted answer reports.
pub const OUTPUT_TOKENS: u64 = 5;

fn finish_of(turn: &Turn, native: bool) -> &'static str {
    turn.finish.unwrap_or(if native && !turn.calls.is_empty() {
        "tool_calls"
    } else {
        "stop"
    })
}

fn openai_events(turn: &Turn, native: bool, billed: Billed) -> String {
    let mut out = String::new();
    let mut chunk = |delta: Value, finish: Option<&str>| {
        let body = json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        out.push_str(&format!("data: {body}\n\n"));
    };
    chunk(json!({"role": "assistant", "content": ""}), None);
    let text = if native {
        turn.text.clone()
    } else {
        xml_text(turn)
    };
    for piece in pieces(&text, 9) {
        chunk(json!({"content": piece}), None);
    }
    if native {
        for (i, call) in turn.calls.iter().enumerate() {
            chunk(
                json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function",
                    "function": {"name": call.name, "arguments": ""}}]}),
                None,
            );
            for piece in pieces(&call.arguments.to_string(), 7) {
                chunk(
                    json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                    None,
                );
            }
        }
    }
    chunk(json!({}), Some(finish_of(turn, native)));
    out.push_str(&format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-scripted", "choices": [], "usage": {"prompt_tokens": billed.prompt,
            "completion_tokens": OUTPUT_TOKENS, "prompt_tokens_details": {"cached_tokens": billed.cached}}})
    ));
    out.push_str("data: [DONE]\n\n");
    out
}

fn anthropic_events(turn: &Turn, native: bool, billed: Billed) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant",
            "content": [], "usage": {"input_tokens": billed.prompt - billed.cached - billed.cache_write,
                "cache_read_input_tokens": billed.cached, "cache_creation_input_tokens": billed.cache_write,
                "output_tokens": 1}}}),
    );
    let text = if native {
        turn.text.clone()
    } else {
        xml_text(turn)
    };
    let mut block = 0;
    if !text.is_empty() {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": block, "content_block": {"type": "text", "text": ""}}),
        );
        event("ping", json!({"type": "ping"}));
        for piece in pieces(&text, 9) {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": block, "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": block}),
        );
        block += 1;
    }
    if native {
        for (i, call) in turn.calls.iter().enumerate() {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": block, "content_block":
                    {"type": "tool_use", "id": format!("toolu_{i}"), "name": call.name, "input": {}}}),
            );
            for piece in pieces(&call.arguments.to_string(), 7) {
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": block,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}),
                );
            }
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": block}),
            );
            block += 1;
        }
    }
    let stop = match finish_of(turn, native) {
        "length" => "max_tokens",
        "tool_calls" => "tool_use",
        _ => "end_turn",
    };
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": OUTPUT_TOKENS}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod pairing_tests {
    use super::*;

    fn request(wire: Wire, native: bool, messages: Value) -> Received {
        let mut body = json!({"messages": messages});
        if native {
            body["tools"] = json!([{"name": "read_file"}]);
        }
        Received {
            wire,
            body,
            headers: HeaderMap::new(),
        }
    }

    #[test]
    fn openai_calls_need_their_tool_messages_right_after() {
        let paired = json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "user", "content": "the browser now"},
        ]);
        assert!(pairing_problems(&request(Wire::OpenAi, true, paired)).is_empty());
        let missing = json!([
            {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "next"},
        ]);
        assert_eq!(
            pairing_problems(&request(Wire::OpenAi, true, missing)).len(),
            1
        );
        let orphan = json!([
            {"role": "user", "content": "task"},
            {"role": "tool", "tool_call_id": "z", "content": "1"},
        ]);
        assert_eq!(
            pairing_problems(&request(Wire::OpenAi, true, orphan)).len(),
            1
        );
    }

    #[test]
    fn anthropic_results_come_in_the_next_user_message() {
        let paired = json!([
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}, {"type": "text", "text": "and the page"}]},
        ]);
        assert!(pairing_problems(&request(Wire::Anthropic, true, paired)).is_empty());
        let late = json!([
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a"}]},
            {"role": "user", "content": [{"type": "text", "text": "something else"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
        ]);
        assert_eq!(
            pairing_problems(&request(Wire::Anthropic, true, late)).len(),
            2
        );
    }

    #[test]
    fn xml_calls_are_followed_by_results_and_results_follow_calls() {
        let paired = json!([
            {"role": "assistant", "content": "<function_calls><invoke name=\"x\"></invoke></function_calls>"},
            {"role": "user", "content": "<function_results>1</function_results>"},
            {"role": "user", "content": "<function_results>2</function_results>"},
        ]);
        assert!(pairing_problems(&request(Wire::OpenAi, false, paired)).is_empty());
        let cut = json!([
            {"role": "assistant", "content": "<function_calls><invoke name=\"x\"></invoke></function_calls>"},
            {"role": "user", "content": "[Context note: left out]"},
            {"role": "user", "content": "<function_results>1</function_results>"},
        ]);
        assert_eq!(
            pairing_problems(&request(Wire::Anthropic, false, cut)).len(),
            2
        );
    }
}
