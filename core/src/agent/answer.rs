//! One model answer: streamed, its tool calls found as they complete (native deltas or XML)
//! and started at once, retried whole when the stream fails.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use tokio::task::AbortHandle;
use tracing::Instrument;

use cove_protocol::events::{EventKind, FinishReason};
use futures_util::future::{BoxFuture, Shared};
use futures_util::{FutureExt, StreamExt};
use serde_json::{Value, json};

use super::events::Emitter;
use super::permission::{Gate, NotRun};
use super::spans;
use crate::llm::retry::RetryPolicy;
use crate::llm::{ChatProvider, ChatRequest, LlmError, StopReason, StreamEvent, Usage};
use crate::toolcall::ToolMode;
use crate::toolcall::xml::{XmlEvent, XmlParser};
use crate::tools::{Tool, ToolEnv, ToolRegistry, ToolResult};

/// A tool execution that may be awaited from several places.
pub type Execution = Shared<BoxFuture<'static, ToolResult>>;

/// One tool call of an answer.
#[derive(Clone)]
pub struct Call {
    pub id: String,
    pub name: String,
    /// The arguments as the model gave them (an object; `{"_raw": ...}` when unreadable).
    pub arguments: Value,
    pub execution: Execution,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

/// A complete answer.
#[derive(Debug)]
pub struct Answer {
    /// The text as the model wrote it (in XML mode, with its tool-call blocks).
    pub raw_text: String,
    pub calls: Vec<Call>,
    pub finish: FinishReason,
    pub usage: Usage,
}

/// The tool tasks a run started, aborted when the last holder drops it (the run's end), so a
/// stopped run leaves no tool running.
#[derive(Debug, Default)]
pub struct ToolTasks(Mutex<Vec<AbortHandle>>);

impl ToolTasks {
    fn add(&self, task: AbortHandle) {
        let mut tasks = self.0.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }
}

impl Drop for ToolTasks {
    fn drop(&mut self) {
        let tasks = self.0.get_mut().unwrap_or_else(|p| p.into_inner());
        for task in tasks.drain(..) {
            task.abort();
        }
    }
}

/// Runs the tool calls of one answer, in parallel or one after another.
pub struct Executor {
    env: Arc<ToolEnv>,
    registry: Arc<ToolRegistry>,
    emitter: Arc<Emitter>,
    tasks: Arc<ToolTasks>,
    parallel: bool,
    /// The permission gate calls pass before they run.
    gate: Option<Arc<Gate>>,
    /// The latest execution, which a sequential one waits for.
    previous: Option<Execution>,
    /// Set once a call is held for permission: the sequential calls after it do not run.
    held: Arc<std::sync::atomic::AtomicBool>,
    /// Executions of earlier attempts at this answer, by call: a retried stream that repeats
    /// a call reuses its execution instead of running it twice.
    earlier: HashMap<String, Vec<Execution>>,
    /// Executions of the current attempt, by call.
    current: HashMap<String, Vec<Execution>>,
    /// The span the calls' spans go under: the run's.
    parent: tracing::Span,
}

fn call_key(name: &str, arguments: &Value) -> String {
    format!("{name}\u{0}{arguments}")
}

impl Executor {
    /// An executor for one answer.
    pub(crate) fn new(
        env: Arc<ToolEnv>,
        registry: Arc<ToolRegistry>,
        emitter: Arc<Emitter>,
        tasks: Arc<ToolTasks>,
        parallel: bool,
        gate: Option<Arc<Gate>>,
    ) -> Self {
        Executor {
            env,
            registry,
            emitter,
            tasks,
            parallel,
            gate,
            previous: None,
            held: Arc::default(),
            earlier: HashMap::new(),
            current: HashMap::new(),
            parent: tracing::Span::current(),
        }
    }

    /// A new attempt at the answer begins: what ran so far becomes reusable.
    fn next_attempt(&mut self) {
        for (key, runs) in self.current.drain() {
            self.earlier.entry(key).or_default().extend(runs);
        }
    }

    /// Executions started by failed attempts and not reused by the final one.
    fn orphans(&self) -> usize {
        self.earlier.values().map(Vec::len).sum()
    }

    /// Starts a call (or reuses the same call of an earlier attempt).
    fn start(&mut self, id: String, name: String, arguments: Result<Value, String>) -> Call {
        let stored_args = match &arguments {
            Ok(v) => v.clone(),
            Err(_) => json!({}),
        };
        let key = call_key(&name, &stored_args);
        if arguments.is_ok()
            && let Some(reused) = self
                .earlier
                .get_mut(&key)
                .and_then(|runs| (!runs.is_empty()).then(|| runs.remove(0)))
        {
            self.current.entry(key).or_default().push(reused.clone());
            return Call {
                id,
                name,
                arguments: stored_args,
                execution: reused,
            };
        }
        let registry = self.registry.clone();
        let env = self.env.clone();
        let emitter = self.emitter.clone();
        let previous = if self.parallel {
            None
        } else {
            self.previous.clone()
        };
        let call_id = id.clone();
        let tool = name.clone();
        let args_for_run = arguments.clone();
        let gate = self.gate.clone();
        let held = self.held.clone();
        let span = spans::tool(&self.parent, &call_id, &tool);
        let task = tokio::spawn(
            async move {
            if let Some(previous) = previous {
                previous.await;
                // Set before the held call's execution ended, so seen here.
                if held.load(std::sync::atomic::Ordering::Acquire) {
                    let skipped = ToolResult::error(
                        "Not run: an earlier call of this answer waits for the user's permission, and calls run one after another. Make this call again once that one has run.",
                    );
                    announce_end(&emitter, call_id, tool, &skipped);
                    spans::tool_outcome("skipped", None);
                    return skipped;
                }
            }
            let def = registry.resolve(&tool).await;
            if let (Some(gate), Ok(def), Ok(args)) = (&gate, &def, &args_for_run) {
                match gate.pass(&call_id, &tool, &def.policy_name(), args).await {
                    Ok(()) => {}
                    Err(NotRun::Refused(refused)) => {
                        announce_not_run(&emitter, Ok(def), call_id, tool, args, &refused);
                        spans::tool_outcome("refused", None);
                        return refused;
                    }
                    // Its permission request says what became of it.
                    Err(NotRun::Held(waits)) => {
                        held.store(true, std::sync::atomic::Ordering::Release);
                        spans::tool_outcome("held", None);
                        return waits;
                    }
                }
            }
            let def = def.as_ref().map_err(String::as_str);
            run_announced(&emitter, def, &env, call_id, tool, args_for_run).await
        }
            .instrument(span),
        );
        self.tasks.add(task.abort_handle());
        let execution: Execution = async move {
            task.await
                .unwrap_or_else(|e| ToolResult::error(format!("the tool crashed: {e}")))
        }
        .boxed()
        .shared();
        self.previous = Some(execution.clone());
        self.current.entry(key).or_default().push(execution.clone());
        Call {
            id,
            name,
            arguments: stored_args,
            execution,
        }
    }
}

/// Runs one call of `def` (or says why there is no such tool), announcing its start and
/// its end.
pub(crate) async fn run_announced(
    emitter: &Emitter,
    def: Result<&Tool, &str>,
    env: &ToolEnv,
    call_id: String,
    tool: String,
    arguments: Result<Value, String>,
) -> ToolResult {
    let summary = match (def, &arguments) {
        (Ok(def), Ok(args)) => def.summarize(args),
        _ => None,
    };
    spans::tool_summary(summary.as_deref());
    emitter.emit(EventKind::ToolStarted {
        call_id: call_id.clone(),
        tool: tool.clone(),
        summary,
        arguments: arguments.clone().unwrap_or(Value::Null),
    });
    let result = match (def, arguments) {
        (_, Err(why)) => ToolResult::error(why),
        (Err(missing), Ok(_)) => ToolResult::error(missing),
        (Ok(def), Ok(args)) => def.call(env, args).await,
    };
    if let Some(shot) = result
        .browser_state
        .as_ref()
        .and_then(|state| state.screenshot.as_ref())
    {
        emitter.keep_screenshot(&call_id, shot);
    }
    spans::tool_outcome(if result.ok { "ok" } else { "error" }, Some(&result));
    announce_end(emitter, call_id, tool, &result);
    result
}

/// Announces a call that was not run (the user or a rule refused it): what it would have
/// done, then why not, so a watcher sees the command or arguments that were refused.
pub(crate) fn announce_not_run(
    emitter: &Emitter,
    def: Result<&Tool, &str>,
    call_id: String,
    tool: String,
    arguments: &Value,
    result: &ToolResult,
) {
    emitter.emit(EventKind::ToolStarted {
        call_id: call_id.clone(),
        tool: tool.clone(),
        summary: def.ok().and_then(|def| def.summarize(arguments)),
        arguments: arguments.clone(),
    });
    announce_end(emitter, call_id, tool, result);
}

/// Announces how a call ended.
pub(crate) fn announce_end(emitter: &Emitter, call_id: String, tool: String, result: &ToolResult) {
    emitter.emit(if result.ok {
        EventKind::ToolCompleted {
            call_id,
            tool,
            output: result.text.clone(),
        }
    } else {
        EventKind::ToolFailed {
            call_id,
            tool,
            error: result.text.clone(),
        }
    });
}

/// The answer's settings.
#[derive(Debug, Clone, Copy)]
pub struct AnswerSettings {
    pub mode: ToolMode,
    /// Most tool calls one XML answer may make; the rest are not run.
    pub max_calls: usize,
    pub retry: RetryPolicy,
}

/// Streams one answer, retrying transient failures, and starts its tools as calls complete.
pub async fn answer(
    provider: &dyn ChatProvider,
    request: &ChatRequest,
    settings: AnswerSettings,
    executor: &mut Executor,
    iteration: u32,
) -> Result<Answer, LlmError> {
    let emitter = executor.emitter.clone();
    let mut attempt = 1;
    loop {
        match attempt_answer(provider, request, settings, executor, iteration).await {
            Ok(answer) => {
                let orphans = executor.orphans();
                if orphans > 0 {
                    emitter.emit(EventKind::Error {
                        message: format!(
                            "{orphans} tool call(s) of an interrupted answer ran, and the retried answer did not repeat them"
                        ),
                        fatal: false,
                    });
                }
                return Ok(answer);
            }
            Err(e) if e.is_retryable() && attempt < settings.retry.max_attempts => {
                let delay = settings.retry.delay(attempt, e.retry_after());
                emitter.emit(EventKind::LlmRetry {
                    attempt,
                    delay_ms: delay.as_millis() as u64,
                    reason: e.to_string(),
                });
                tokio::time::sleep(delay).await;
                executor.next_attempt();
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn attempt_answer(
    provider: &dyn ChatProvider,
    request: &ChatRequest,
    settings: AnswerSettings,
    executor: &mut Executor,
    iteration: u32,
) -> Result<Answer, LlmError> {
    let emitter = executor.emitter.clone();
    let mut stream = provider.stream(request).await?;
    let mut raw_text = String::new();
    let mut parser = XmlParser::new();
    let mut parsed = Vec::new();
    let mut native: BTreeMap<usize, (String, String, String)> = BTreeMap::new();
    let mut calls: Vec<Call> = Vec::new();
    let mut finish: Option<FinishReason> = None;
    let mut usage = Usage::default();
    let xml = settings.mode == ToolMode::Xml;

    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta(text) => {
                raw_text.push_str(&text);
                if !xml {
                    emitter.emit(EventKind::AssistantText { text });
                    continue;
                }
                parser.push(&text, &mut parsed);
                take_xml_events(&mut parsed, executor, &mut calls, iteration, true);
                if calls.len() >= settings.max_calls && settings.max_calls > 0 {
                    // Enough calls for one answer: stop reading and keep the text up to the
                    // end of the last call that will run.
                    if let Some(end) = parser.last_invoke_end() {
                        raw_text.truncate(end.min(raw_text.len()));
                        raw_text.push_str("\n</function_calls>");
                    }
                    finish = Some(FinishReason::XmlToolLimitReached);
                    break;
                }
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                native.insert(index, (id, name, String::new()));
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                if let Some(call) = native.get_mut(&index) {
                    call.2.push_str(&arguments);
                }
            }
            StreamEvent::ToolCallEnd { index } => {
                if let Some((id, name, args)) = native.remove(&index) {
                    calls.push(start_native(
                        executor,
                        id,
                        name,
                        &args,
                        iteration,
                        calls.len(),
                    ));
                }
            }
            StreamEvent::Usage(u) => usage = u,
            StreamEvent::Finish(reason) => {
                finish = Some(match reason {
                    StopReason::Length => FinishReason::Length,
                    StopReason::ToolCalls => FinishReason::ToolCalls,
                    StopReason::Stop | StopReason::Other(_) => FinishReason::Stop,
                });
            }
        }
    }
    if xml && finish != Some(FinishReason::XmlToolLimitReached) {
        parser.finish(&mut parsed);
        take_xml_events(&mut parsed, executor, &mut calls, iteration, false);
    }
    // Calls whose end never arrived (some servers skip it) are complete with the stream.
    for (_, (id, name, args)) in std::mem::take(&mut native) {
        calls.push(start_native(
            executor,
            id,
            name,
            &args,
            iteration,
            calls.len(),
        ));
    }
    let finish = finish.unwrap_or(FinishReason::Stop);
    let finish = if !calls.is_empty() && finish == FinishReason::Stop && !xml {
        FinishReason::ToolCalls
    } else {
        finish
    };
    Ok(Answer {
        raw_text,
        calls,
        finish,
        usage,
    })
}

/// Tells the text of parsed XML events and starts their calls, a malformed one as a call
/// that fails with why. With `invokes` off (the stream's end) only the text and the
/// malformed rest are taken.
fn take_xml_events(
    events: &mut Vec<XmlEvent>,
    executor: &mut Executor,
    calls: &mut Vec<Call>,
    iteration: u32,
    invokes: bool,
) {
    // A call's id, drawn only for a call: text deltas are the stream's hot path.
    let id = |calls: &Vec<Call>| format!("xml_{iteration}_{}", calls.len());
    for event in events.drain(..) {
        match event {
            XmlEvent::Text(text) => executor.emitter.emit(EventKind::AssistantText { text }),
            XmlEvent::Invoke(invoke) if invokes => {
                let arguments = match executor.registry.get(&invoke.name) {
                    Some(def) => def.arguments_from_xml(&invoke.parameters),
                    None => Err(format!("there is no tool named {:?}", invoke.name)),
                };
                let id = id(calls);
                calls.push(executor.start(id, invoke.name, arguments));
            }
            XmlEvent::Invoke(_) => {}
            XmlEvent::Malformed { reason } => {
                let id = id(calls);
                calls.push(executor.start(
                    id,
                    "invalid_tool_call".into(),
                    Err(format!("malformed tool call: {reason}")),
                ));
            }
        }
    }
}

fn start_native(
    executor: &mut Executor,
    id: String,
    name: String,
    args: &str,
    iteration: u32,
    n: usize,
) -> Call {
    let id = if id.is_empty() {
        format!("call_{iteration}_{n}")
    } else {
        id
    };
    let arguments = if args.trim().is_empty() {
        Ok(json!({}))
    } else {
        match serde_json::from_str::<Value>(args) {
            Ok(v) if v.is_object() => Ok(v),
            Ok(_) => Err("the arguments are not a JSON object".to_string()),
            Err(e) => Err(format!("the arguments are not valid JSON ({e})")),
        }
    };
    let raw = args.to_string();
    let mut call = executor.start(id, name, arguments);
    if call.arguments == json!({})
        && !raw.trim().is_empty()
        && serde_json::from_str::<Value>(&raw).is_err()
    {
        // Keep what the model wrote, in a form every provider accepts back.
        call.arguments = json!({"_raw": raw});
    }
    call
}
