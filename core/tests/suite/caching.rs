//! What a run costs: Anthropic cache breakpoints where the docs put them, an OpenAI prompt
//! whose start stays byte-identical from call to call, every call's tokens and cost stored
//! and summed at the run's end, and a cost limit that stops a run before the call that
//! would pass it.

use std::sync::Arc;
use std::time::Duration;

use cove_core::agent::{Agent, AgentConfig, RunError, RunOutcome, ToolMode};
use cove_core::llm::anthropic::{Anthropic, MAX_BREAKPOINTS};
use cove_core::llm::openai::OpenAi;
use cove_core::llm::price::PriceTable;
use cove_core::llm::profile::ModelProfile;
use cove_core::llm::retry::RetryPolicy;
use cove_core::llm::{ChatMessage, ChatProvider, Usage};
use cove_core::store::{NewThread, PlanDraft, Store, Thread};
use cove_harness::llm::{OUTPUT_TOKENS, Received};
use cove_harness::prompt_cache::repeated_prefix;
use cove_harness::{DaemonBuilder, DaemonProcess, ScriptedLlm, Turn, workspace_binary};
use cove_protocol::events::{EventKind, RunEvent};
use cove_protocol::plan::{PlanStep, StepStatus};
use serde_json::{Value, json};

struct Setup {
    agent: Arc<Agent>,
    _daemon: DaemonProcess,
    thread: Thread,
    store: Arc<Store>,
}

/// A notes file of about 1,500 tokens, read again and again.
fn notes() -> String {
    (0..300)
        .map(|i| format!("note {i}: the build passed on runner {} ", i % 7))
        .collect()
}

async fn setup(
    llm: &ScriptedLlm,
    provider: Arc<dyn ChatProvider>,
    model: &str,
    mode: ToolMode,
    configure: impl FnOnce(AgentConfig) -> AgentConfig,
) -> Setup {
    let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    std::fs::write(daemon.path("notes.txt"), notes()).unwrap();
    let _ = llm;
    let store = Arc::new(Store::in_memory().unwrap());
    let thread = store
        .create_thread(NewThread::new("test", model, mode.as_str(), "test"))
        .unwrap();
    let config = AgentConfig::new(
        model,
        format!("scripted/{model}"),
        ModelProfile {
            context_window: 200_000,
            max_output: 4_000,
            vision: false,
        },
        mode,
    )
    .max_tokens(4_000)
    .max_iterations(100)
    .retry(RetryPolicy {
        max_attempts: 2,
        base: Duration::from_millis(10),
        cap: Duration::from_millis(100),
    });
    let agent = Arc::new(Agent::new(
        configure(config),
        provider,
        store.clone(),
        daemon.client.clone(),
    ));
    Setup {
        agent,
        _daemon: daemon,
        thread,
        store,
    }
}

fn anthropic(llm: &ScriptedLlm) -> Arc<dyn ChatProvider> {
    Arc::new(Anthropic::new(
        reqwest::Client::new(),
        &llm.anthropic_base_url(),
        "k".into(),
    ))
}

fn openai(llm: &ScriptedLlm) -> OpenAi {
    OpenAi::new(
        reqwest::Client::new(),
        &llm.openai_base_url(),
        Some("k".into()),
        "openai",
    )
}

async fn run(s: &Setup, input: Option<&str>) -> (Result<RunOutcome, RunError>, Vec<RunEvent>) {
    let (events, outcome) = s
        .agent
        .start(&s.thread, input.map(ChatMessage::user))
        .unwrap()
        .finish()
        .await;
    (outcome, events)
}

/// Queues `reads` answers that read the notes, then one that completes.
fn script(llm: &ScriptedLlm, reads: usize) {
    for i in 0..reads {
        llm.push(
            Turn::text(format!("Pass {i}.")).call("read_file", json!({"file_path": "notes.txt"})),
        );
    }
    llm.push(Turn::text("").call("complete", json!({"text": "Read."})));
}

/// Where a body's `cache_control` marks are: `tool N`, `system N`, or `message T.B`.
fn marks(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (key, label) in [("tools", "tool"), ("system", "system")] {
        for (i, part) in body[key].as_array().into_iter().flatten().enumerate() {
            if part.get("cache_control").is_some() {
                out.push(format!("{label} {i}"));
            }
        }
    }
    for (t, turn) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (b, block) in turn["content"].as_array().into_iter().flatten().enumerate() {
            if block.get("cache_control").is_some() {
                out.push(format!("message {t}.{b}"));
            }
        }
    }
    out
}

/// The message blocks of a body in order, as (turn, block, text).
fn blocks(body: &Value) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    for (t, turn) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (b, block) in turn["content"].as_array().into_iter().flatten().enumerate() {
            out.push((t, b, block.to_string()));
        }
    }
    out
}

/// The cost of a run's calls at the table's price for `model`, from what the scripted
/// provider billed.
fn expected_cost(llm: &ScriptedLlm, model: &str) -> f64 {
    let price = PriceTable::default().price(model).unwrap();
    llm.billed()
        .iter()
        .map(|b| {
            price.cost(&Usage {
                input_tokens: b.prompt as u64,
                cached_tokens: b.cached as u64,
                cache_write_tokens: b.cache_write as u64,
                output_tokens: OUTPUT_TOKENS,
            })
        })
        .sum()
}

/// The end event's usage and cost.
fn end_of(events: &[RunEvent]) -> (cove_protocol::events::TokenUsage, Option<f64>, u64) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ThreadRunEnd {
                usage,
                cost,
                duration_ms,
                ..
            } => Some((*usage, *cost, *duration_ms)),
            _ => None,
        })
        .expect("the run's end")
}

#[tokio::test]
async fn anthropic_breakpoints_sit_where_the_docs_say_and_the_cache_is_read() {
    const MODEL: &str = "claude-sonnet-4-5";
    for mode in [ToolMode::Native, ToolMode::Xml] {
        let llm = ScriptedLlm::start().await.unwrap();
        let s = setup(&llm, anthropic(&llm), MODEL, mode, |c| c).await;
        // An approved plan: shown with every call, after the history.
        s.store
            .propose_plan(
                &s.thread.id,
                PlanDraft {
                    goal: "Read the notes".into(),
                    steps: vec![PlanStep {
                        id: String::new(),
                        description: "Read notes.txt".into(),
                        status: StepStatus::Pending,
                    }],
                },
            )
            .unwrap();
        s.store.approve_plan(&s.thread.id, None).unwrap();
        script(&llm, 6);
        let (outcome, events) = run(&s, Some("Read the notes six times.")).await;
        assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
        let requests = llm.received();
        assert_eq!(requests.len(), 7, "{mode:?}");
        for (i, r) in requests.iter().enumerate() {
            let marks = marks(&r.body);
            assert!(
                marks.len() <= MAX_BREAKPOINTS,
                "{mode:?} request {i}: {marks:?}"
            );
            // The stable prefix: the last tool (native mode) and the system prompt.
            let tools = r.body["tools"].as_array().map_or(0, Vec::len);
            let mut fixed = Vec::new();
            if mode == ToolMode::Native {
                fixed.push(format!("tool {}", tools - 1));
            }
            fixed.push("system 0".to_string());
            assert_eq!(marks[..fixed.len()], fixed[..], "{mode:?} request {i}");
            // Rolling marks: the newest stable message, and (from the second call) the same
            // role's turn before it; the plan, for this call only, after every mark.
            let rolling = &marks[fixed.len()..];
            assert_eq!(
                rolling.len(),
                if i == 0 { 1 } else { 2 },
                "{mode:?} request {i}: {marks:?}"
            );
            let all = blocks(&r.body);
            let plan = all
                .iter()
                .position(|(_, _, text)| text.contains("The approved plan"))
                .expect("the plan rides along");
            let last_mark = all
                .iter()
                .rposition(|(t, b, _)| rolling.contains(&format!("message {t}.{b}")))
                .unwrap();
            assert!(
                last_mark < plan,
                "{mode:?} request {i}: a mark after the plan"
            );
            assert_eq!(plan, all.len() - 1, "the plan comes last");
            assert!(
                !r.system_text().contains("The approved plan"),
                "the plan is not in the system prompt, which stays the same"
            );
        }
        // The system prompt and tools are the same in every call; the cache serves them and
        // the history from the second call on.
        let first_system = &requests[0].body["system"];
        assert!(requests.iter().all(|r| &r.body["system"] == first_system));
        let billed = llm.billed();
        assert_eq!(billed[0].cached, 0);
        assert!(billed[0].cache_write > 0, "{:?}", billed[0]);
        // Everything that repeats the previous call (all of it but the plan) is read.
        for (i, b) in billed.iter().enumerate().skip(1) {
            let repeated = repeated_prefix(&requests[i - 1], &requests[i]);
            assert!(repeated > 0);
            assert_eq!(b.cached, repeated, "{mode:?} call {i}: {b:?}");
        }

        // The run's end carries what its calls took and cost, as stored per call.
        let (usage, cost, duration_ms) = end_of(&events);
        assert_eq!(usage.calls, 7);
        assert_eq!(
            usage.cached_tokens,
            billed.iter().map(|b| b.cached as u64).sum::<u64>()
        );
        assert_eq!(
            usage.cache_write_tokens,
            billed.iter().map(|b| b.cache_write as u64).sum::<u64>()
        );
        assert_eq!(
            usage.input_tokens,
            billed.iter().map(|b| b.prompt as u64).sum::<u64>()
        );
        assert_eq!(usage.output_tokens, 7 * OUTPUT_TOKENS);
        let expected = expected_cost(&llm, MODEL);
        let cost = cost.expect("Sonnet's price is known");
        assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
        assert!(duration_ms > 0);
        let run = s.store.last_run(&s.thread.id).unwrap().unwrap();
        let stored = s.store.calls(&run.id).unwrap();
        assert_eq!(stored.len(), 7);
        let sum: f64 = stored.iter().map(|c| c.cost.unwrap()).sum();
        assert!((sum - expected).abs() < 1e-9);
        let uncached =
            PriceTable::default().price(MODEL).unwrap().input * usage.input_tokens as f64 / 1e6;
        assert!(
            cost < uncached,
            "caching made it cheaper: {cost} vs {uncached}"
        );
    }
}

#[tokio::test]
async fn an_openai_prompt_starts_the_same_way_for_fifty_calls() {
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(
        &llm,
        Arc::new(openai(&llm)),
        "gpt-4o",
        ToolMode::Native,
        |c| c,
    )
    .await;
    script(&llm, 49);
    let (outcome, events) = run(&s, Some("Read the notes fifty times.")).await;
    assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
    let requests = llm.received();
    assert_eq!(requests.len(), 50);
    let bytes = |v: &Value| serde_json::to_string(v).unwrap();
    for (i, pair) in requests.windows(2).enumerate() {
        let (before, after) = (&pair[0].body, &pair[1].body);
        assert_eq!(bytes(&before["tools"]), bytes(&after["tools"]), "call {i}");
        let sent = before["messages"].as_array().unwrap();
        let next = after["messages"].as_array().unwrap();
        assert_eq!(sent[0]["role"], "system", "the system prompt first");
        assert!(next.len() > sent.len());
        assert_eq!(
            bytes(&Value::Array(sent.clone())),
            bytes(&Value::Array(next[..sent.len()].to_vec())),
            "call {} does not start as call {i} did",
            i + 1
        );
        // A compatible server is not sent a field it may not know.
        assert!(after.get("prompt_cache_key").is_none());
    }
    // The prompt cache serves the repeated start, as the usage says.
    let billed = llm.billed();
    for (i, b) in billed.iter().enumerate().skip(1) {
        let repeated = repeated_prefix(&requests[i - 1], &requests[i]);
        assert_eq!(b.cached, repeated / 128 * 128, "call {i}: {b:?}");
        assert!(b.cached * 10 >= b.prompt * 6, "call {i}: {b:?}");
    }
    let (usage, cost, _) = end_of(&events);
    assert_eq!(
        usage.cached_tokens,
        billed.iter().map(|b| b.cached as u64).sum::<u64>()
    );
    let expected = expected_cost(&llm, "gpt-4o");
    assert!((cost.unwrap() - expected).abs() < 1e-9);

    // OpenAI's own API takes the thread as prompt_cache_key.
    let llm = ScriptedLlm::start().await.unwrap();
    let provider = openai(&llm).with_prompt_cache_key(true);
    let s = setup(&llm, Arc::new(provider), "gpt-4o", ToolMode::Native, |c| c).await;
    script(&llm, 1);
    let (outcome, _) = run(&s, Some("Read the notes.")).await;
    assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
    for r in llm.received() {
        assert_eq!(r.body["prompt_cache_key"], json!(s.thread.id));
    }
}

#[tokio::test]
async fn a_cost_limit_stops_the_run_before_the_call_that_would_pass_it() {
    const MODEL: &str = "gpt-4o";
    const LIMIT: f64 = 0.15;
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(&llm, Arc::new(openai(&llm)), MODEL, ToolMode::Native, |c| {
        c.max_cost(Some(LIMIT))
    })
    .await;
    script(&llm, 30);
    let (outcome, events) = run(&s, Some("Read the notes thirty times.")).await;
    assert!(
        matches!(outcome.unwrap(), RunOutcome::Stopped),
        "stopped, resumable"
    );
    let made = llm.request_count();
    assert!(made > 1 && made < 31, "{made} calls");
    let reason = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Error {
                message,
                fatal: false,
            } if message.contains("limit") => Some(message.clone()),
            _ => None,
        })
        .expect("a clear reason");
    assert!(reason.contains("cove resume"), "{reason}");
    let (usage, cost, _) = end_of(&events);
    assert_eq!(usage.calls as usize, made);
    let spent = cost.unwrap();
    assert!(spent <= LIMIT, "spent {spent}, limit {LIMIT}");
    assert!((spent - expected_cost(&llm, MODEL)).abs() < 1e-9);

    // The call it held back: resumed with a higher limit, the run makes it first. At its
    // worst (prompt uncached, the whole output cap) it would have passed the limit (Cove
    // counts the prompt before sending it, within a few percent of the provider).
    let s = Setup {
        agent: Arc::new(Agent::new(
            AgentConfig::new(
                MODEL,
                "scripted/gpt-4o",
                ModelProfile {
                    context_window: 200_000,
                    max_output: 4_000,
                    vision: false,
                },
                ToolMode::Native,
            )
            .max_tokens(4_000)
            .max_cost(Some(10.0)),
            Arc::new(openai(&llm)),
            s.store.clone(),
            s._daemon.client.clone(),
        )),
        ..s
    };
    let (outcome, _) = run(&s, None).await;
    assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
    let held: &Received = &llm.received()[made];
    let price = PriceTable::default().price(MODEL).unwrap();
    let worst = price.worst_case(held.prompt_tokens() as u64, held.max_tokens());
    assert!(
        spent + worst * 1.05 > LIMIT,
        "the held call's worst case {worst} fitted within {LIMIT} after {spent}"
    );

    // A limit without a price cannot be kept: the run says so before calling anyone.
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(
        &llm,
        Arc::new(openai(&llm)),
        "llama3.1:8b",
        ToolMode::Native,
        |c| c.max_cost(Some(1.0)),
    )
    .await;
    script(&llm, 1);
    let (outcome, _) = run(&s, Some("Read.")).await;
    let err = outcome.unwrap_err();
    assert!(matches!(err, RunError::NoPrice { .. }), "{err}");
    assert!(err.to_string().contains("[prices."), "{err}");
    assert_eq!(llm.request_count(), 0);
}
