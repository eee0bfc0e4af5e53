//! Long runs against the scripted model and a real coved: every request fits the window,
//! what was cut can be read back whole, knowledge lands in the system prompt, summaries
//! stand in for old history, and a context that cannot fit fails the run cleanly.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cove_core::agent::{Agent, AgentConfig, RunError, RunOutcome, ToolMode};
use cove_core::context::summarize::SUMMARY_PROMPT;
use cove_core::context::{ContextMode, ContextSettings};
use cove_core::llm::anthropic::Anthropic;
use cove_core::llm::openai::OpenAi;
use cove_core::llm::profile::ModelProfile;
use cove_core::llm::retry::RetryPolicy;
use cove_core::llm::{ChatMessage, ChatProvider};
use cove_core::store::{NewThread, Store, Thread};
use cove_harness::llm::{Fault, Received, Wire};
use cove_harness::prompt_cache::repeated_prefix;
use cove_harness::{DaemonBuilder, DaemonProcess, ScriptedLlm, Turn, log_text, workspace_binary};
use cove_protocol::events::{EventKind, RunEvent, RunStatus};
use serde_json::json;

struct Setup {
    agent: Arc<Agent>,
    _daemon: DaemonProcess,
    thread: Thread,
    store: Arc<Store>,
}

const WINDOW: u32 = 40_000;
const MAX_TOKENS: u32 = 4_000;

async fn setup(
    llm: &ScriptedLlm,
    wire: Wire,
    mode: ToolMode,
    window: u32,
    context: ContextSettings,
) -> Setup {
    let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    std::fs::write(daemon.path("log.txt"), log_text()).unwrap();
    let http = reqwest::Client::new();
    // The OpenAI run counts with tiktoken; the Anthropic run estimates and calibrates.
    let (provider, model): (Arc<dyn ChatProvider>, &str) = match wire {
        Wire::OpenAi => (
            Arc::new(OpenAi::new(
                http,
                &llm.openai_base_url(),
                Some("k".into()),
                "openai",
            )),
            "gpt-4o",
        ),
        Wire::Anthropic => (
            Arc::new(Anthropic::new(http, &llm.anthropic_base_url(), "k".into())),
            "claude-sonnet-4-5",
        ),
    };
    let store = Arc::new(Store::in_memory().unwrap());
    let thread = store
        .create_thread(NewThread::new("test", model, mode.as_str(), "test"))
        .unwrap();
    let agent = Arc::new(Agent::new(
        AgentConfig::new(
            model,
            format!("scripted/{model}"),
            ModelProfile {
                context_window: window,
                max_output: MAX_TOKENS,
                vision: false,
            },
            mode,
        )
        .max_tokens(MAX_TOKENS)
        .max_iterations(400)
        .max_auto_continues(3)
        .retry(RetryPolicy {
            max_attempts: 3,
            base: Duration::from_millis(10),
            cap: Duration::from_secs(1),
        })
        .context(context),
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

async fn run(s: &Setup, input: &str) -> (Result<RunOutcome, RunError>, Vec<RunEvent>) {
    let (events, outcome) = s
        .agent
        .start(&s.thread, Some(ChatMessage::user(input)))
        .unwrap()
        .finish()
        .await;
    (outcome, events)
}

/// The id in the newest truncation note of a request.
fn truncated_id(r: &Received) -> Option<i64> {
    let text = r.all_text();
    let marker = "call expand_message with message_id ";
    let at = text.rfind(marker)? + marker.len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn assert_within_window(requests: &[Received], window: u32) {
    for (i, r) in requests.iter().enumerate() {
        let prompt = r.prompt_tokens();
        assert!(
            prompt as u64 + r.max_tokens() <= u64::from(window),
            "request {i}: {prompt} prompt tokens + {} output > window {window}",
            r.max_tokens()
        );
        assert!(
            r.all_text().contains("Audit the log"),
            "request {i} lost the task"
        );
    }
}

const TASK: &str = "Audit the log: read log.txt again and again until told to stop.";

/// The share of the prompt tokens of `requests` (from the second) that repeat the start of
/// the request before, and how many requests repeat less than 80%.
fn repeated_share(requests: &[Received]) -> f64 {
    let (mut repeated, mut sent) = (0, 0);
    for pair in requests.windows(2) {
        let prompt = pair[1].prompt_tokens();
        repeated += repeated_prefix(&pair[0], &pair[1]).min(prompt);
        sent += prompt;
    }
    repeated as f64 / sent as f64
}

/// How many of `requests` whose prompt takes half the window or more repeat less than 80%
/// of the request before (a short prompt's new turn is a large part of it, cut or not).
fn below_80(requests: &[Received], window: u32) -> usize {
    requests
        .windows(2)
        .filter(|pair| {
            let prompt = pair[1].prompt_tokens();
            prompt * 2 >= window as usize
                && repeated_prefix(&pair[0], &pair[1]).min(prompt) * 10 < prompt * 8
        })
        .count()
}

#[tokio::test]
async fn a_long_run_keeps_each_prompt_the_start_of_the_next() {
    const LARGE: u32 = 128_000;
    for (wire, mode) in [
        (Wire::OpenAi, ToolMode::Native),
        (Wire::Anthropic, ToolMode::Xml),
    ] {
        let llm = ScriptedLlm::start().await.unwrap();
        let s = setup(&llm, wire, mode, LARGE, ContextSettings::default()).await;
        for i in 0..299 {
            llm.push(
                Turn::text(format!("Pass {i}.")).call("read_file", json!({"file_path": "log.txt"})),
            );
        }
        llm.push(Turn::text("").call("complete", json!({"text": "Audited."})));
        let (outcome, events) = run(&s, TASK).await;
        assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
        let requests = llm.received();
        assert_eq!(requests.len(), 300);
        assert_within_window(&requests, LARGE);
        let compressed = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::ContextCompressed { .. }))
            .count();
        assert!(
            compressed > 250,
            "{wire:?} {mode:?}: compressed {compressed} calls"
        );
        let share = repeated_share(&requests);
        assert!(
            share >= 0.8,
            "{wire:?} {mode:?}: {share:.3} of the prompt tokens repeat the previous request"
        );
        let low = below_80(&requests, LARGE);
        assert!(
            low * 20 <= requests.len(),
            "{wire:?} {mode:?}: {low} requests repeat less than 80% of the one before"
        );
    }
}

#[tokio::test]
async fn a_300_iteration_run_never_overflows_and_reads_back_what_was_cut() {
    for (wire, mode) in [
        (Wire::OpenAi, ToolMode::Native),
        (Wire::Anthropic, ToolMode::Xml),
    ] {
        let llm = ScriptedLlm::start().await.unwrap();
        let s = setup(&llm, wire, mode, WINDOW, ContextSettings::default()).await;
        let expanded = Arc::new(AtomicUsize::new(0));
        for i in 0..300 {
            if i == 250 {
                // Ask for the newest result the context shows cut.
                let seen = expanded.clone();
                llm.push_fn(move |r| {
                    let id = truncated_id(r).expect("a truncation note by iteration 250");
                    seen.store(id as usize, Ordering::SeqCst);
                    Turn::text("Reading it whole.")
                        .call("expand_message", json!({"message_id": id}))
                });
            } else if i == 299 {
                llm.push(Turn::text("").call("complete", json!({"text": "Audited."})));
            } else {
                llm.push(
                    Turn::text(format!("Pass {i}."))
                        .call("read_file", json!({"file_path": "log.txt"})),
                );
            }
        }
        let (outcome, events) = run(&s, TASK).await;
        let outcome = outcome.unwrap();
        assert!(
            matches!(outcome, RunOutcome::Completed { .. }),
            "{wire:?} {mode:?}: {outcome:?}"
        );
        let requests = llm.received();
        assert_eq!(requests.len(), 300, "{wire:?} {mode:?}");
        assert_within_window(&requests, WINDOW);

        // Each request repeats the start of the one before, as far as the cuts allow (what a
        // provider's prompt cache serves). Here every result is an eighth of the window, so
        // the newest turn alone is a fifth of each prompt: the share cannot reach 80%
        // (`a_long_run_keeps_each_prompt_the_start_of_the_next` holds a common window to it).
        let share = repeated_share(&requests);
        assert!(
            share >= 0.75,
            "{wire:?} {mode:?}: {share:.3} of the prompt tokens repeat the previous request"
        );

        // Without compression the last request would carry 299 results of ~5k tokens.
        let last = requests.last().unwrap().prompt_tokens();
        assert!(last < WINDOW as usize, "{last}");
        let compressed = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::ContextCompressed { .. }))
            .count();
        assert!(compressed > 200, "compressed {compressed} calls");

        // The expanded message came back whole in the next request.
        let id = expanded.load(Ordering::SeqCst) as i64;
        let original = s
            .store
            .llm_message(&s.thread.id, id)
            .unwrap()
            .expect("the truncated message is stored")
            .text();
        assert!(original.len() > 19_000, "{}", original.len());
        assert!(
            requests[251].all_text().contains(&original),
            "{wire:?} {mode:?}: the expanded message is not whole in the next request"
        );

        // Nothing was lost from the store: 300 answers and 300 results, plus the task.
        assert_eq!(
            s.store.llm_messages(&s.thread.id).unwrap().len(),
            1 + 300 + 300
        );
    }
}

#[tokio::test]
async fn knowledge_is_in_the_system_prompt_in_order_and_within_budget() {
    let llm = ScriptedLlm::start().await.unwrap();
    let budget = 600;
    let s = setup(
        &llm,
        Wire::OpenAi,
        ToolMode::Native,
        100_000,
        ContextSettings {
            mode: ContextMode::Truncate,
            knowledge_budget: budget,
            ..ContextSettings::default()
        },
    )
    .await;
    let other = s
        .store
        .create_thread(NewThread::new("other", "m", "native", "x"))
        .unwrap();
    s.store
        .add_knowledge(None, "oldest-agent", &"Old advice. ".repeat(400))
        .unwrap();
    s.store
        .add_knowledge(None, "style", "Write in British English.")
        .unwrap();
    s.store
        .add_knowledge(Some(&other.id), "elsewhere", "Not for this thread.")
        .unwrap();
    s.store
        .add_knowledge(Some(&s.thread.id), "client", "The client is ACME Ltd.")
        .unwrap();
    llm.push(Turn::text("").call("complete", json!({"text": "ok"})));
    let (outcome, _) = run(&s, "Say hi.").await;
    assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
    let r = &llm.received()[0];
    let system = r.body["messages"][0]["content"].as_str().unwrap();
    let section = &system[system.find("# Knowledge").expect("a knowledge section")..];
    let pos = |needle: &str| section.find(needle);
    let (style, client) = (pos("## style").unwrap(), pos("## client").unwrap());
    assert!(style < client, "agent entries first, then the thread's");
    assert!(
        pos("elsewhere").is_none(),
        "other threads' entries stay out"
    );
    // The big old entry is cut or left out to keep within the budget.
    let bpe = tiktoken_rs::o200k_base_singleton();
    let tokens = bpe.encode_ordinary(section).len();
    assert!(tokens <= budget, "{tokens} > {budget}");
    assert!(
        section.contains("left out") || section.contains("oldest-agent"),
        "{section}"
    );
}

#[tokio::test]
async fn summaries_stand_in_for_old_history_which_stays_stored() {
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(
        &llm,
        Wire::Anthropic,
        ToolMode::Native,
        WINDOW,
        ContextSettings {
            mode: ContextMode::Summarize,
            knowledge_budget: 4_000,
            ..ContextSettings::default()
        },
    )
    .await;
    let main_calls = Arc::new(AtomicUsize::new(0));
    for _ in 0..80 {
        let calls = main_calls.clone();
        llm.push_fn(move |r| {
            if r.system_text() == SUMMARY_PROMPT {
                return Turn::text("SUMMARY-42: the log was read many times; all jobs ok.");
            }
            if calls.fetch_add(1, Ordering::SeqCst) >= 40 {
                Turn::text("").call("complete", json!({"text": "done"}))
            } else {
                Turn::text("Again.").call("read_file", json!({"file_path": "log.txt"}))
            }
        });
    }
    let (outcome, events) = run(&s, TASK).await;
    assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
    let summarized = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ContextSummarized { .. }))
        .count();
    assert!(summarized >= 1, "no summary was made");
    let requests = llm.received();
    assert_within_window(
        &requests
            .iter()
            .filter(|r| r.system_text() != SUMMARY_PROMPT)
            .cloned()
            .collect::<Vec<_>>(),
        WINDOW,
    );
    let summary_requests: Vec<_> = requests
        .iter()
        .filter(|r| r.system_text() == SUMMARY_PROMPT)
        .collect();
    assert_eq!(summary_requests.len(), summarized);
    for r in &summary_requests {
        assert!(r.prompt_tokens() + r.max_tokens() as usize <= WINDOW as usize);
    }
    let last = requests.last().unwrap();
    assert!(
        last.all_text().contains("SUMMARY-42"),
        "the summary rides along"
    );
    let summary = s.store.latest_summary(&s.thread.id).unwrap().unwrap();
    assert!(summary.text.starts_with("SUMMARY-42"));
    // The originals stay stored, readable by id.
    assert!(
        s.store
            .llm_message(&s.thread.id, summary.first)
            .unwrap()
            .is_some()
    );
    assert_eq!(
        s.store.llm_messages(&s.thread.id).unwrap().len(),
        1 + 2 * 41
    );
}

#[tokio::test]
async fn a_context_that_cannot_fit_fails_the_run_without_calling_the_model() {
    let llm = ScriptedLlm::start().await.unwrap();
    // The system prompt and tool descriptions alone are bigger than this window.
    let s = setup(
        &llm,
        Wire::OpenAi,
        ToolMode::Native,
        3_000,
        ContextSettings::default(),
    )
    .await;
    llm.push(Turn::text("never sent"));
    let (outcome, events) = run(&s, "Anything.").await;
    let err = outcome.unwrap_err();
    assert!(matches!(err, RunError::Context(_)), "{err}");
    assert!(err.to_string().contains("3000"), "{err}");
    assert_eq!(llm.request_count(), 0, "no request, no retry loop");
    let fatal = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Error { fatal: true, message } if message.contains("cannot fit")))
        .count();
    assert_eq!(fatal, 1);
    assert!(matches!(
        events.last().map(|e| &e.kind),
        Some(EventKind::ThreadRunEnd {
            status: RunStatus::Failed,
            ..
        })
    ));
    assert_eq!(
        s.store.last_run(&s.thread.id).unwrap().unwrap().status,
        cove_core::store::RunState::Failed
    );
}

#[tokio::test]
async fn a_provider_that_finds_the_prompt_too_long_gets_a_smaller_one_then_a_clear_failure() {
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(
        &llm,
        Wire::Anthropic,
        ToolMode::Native,
        WINDOW,
        ContextSettings::default(),
    )
    .await;
    for i in 0..8 {
        let mut turn = Turn::text("Again.").call("read_file", json!({"file_path": "log.txt"}));
        if i == 5 {
            // Cove believes this prompt fits; the provider disagrees once.
            turn = turn.failing(Fault::PromptTooLong);
        }
        llm.push(turn);
    }
    llm.push(Turn::text("").call("complete", json!({"text": "done"})));
    let (outcome, events) = run(&s, TASK).await;
    assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
    let requests = llm.received();
    assert_eq!(requests.len(), 10, "one extra request for the refusal");
    let (refused, retried) = (requests[5].prompt_tokens(), requests[6].prompt_tokens());
    assert!(
        retried < refused,
        "the retry is smaller: {retried} vs {refused}"
    );
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::Error { fatal: false, message } if message.contains("too long"))));

    // A provider that refuses every time ends the run after two tighter tries.
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(
        &llm,
        Wire::Anthropic,
        ToolMode::Native,
        WINDOW,
        ContextSettings::default(),
    )
    .await;
    let mut turn = Turn::text("never");
    for _ in 0..10 {
        turn = turn.failing(Fault::PromptTooLong);
    }
    llm.push(turn);
    let (outcome, _) = run(&s, TASK).await;
    let err = outcome.unwrap_err();
    assert!(err.to_string().contains("prompt is too long"), "{err}");
    assert_eq!(llm.request_count(), 3, "two retries, then a clear failure");
}

#[tokio::test]
async fn a_window_stated_in_a_refusal_is_fitted_to_from_then_on() {
    const STATED: u64 = 20_000;
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(
        &llm,
        Wire::OpenAi,
        ToolMode::Native,
        WINDOW,
        ContextSettings::default(),
    )
    .await;
    for i in 0..8 {
        let mut turn = Turn::text("Again.").call("read_file", json!({"file_path": "log.txt"}));
        if i == 3 {
            // Cove plans for 40,000 tokens; the server runs the model with 20,000.
            turn = turn.failing(Fault::WindowExceeded(STATED));
        }
        llm.push(turn);
    }
    llm.push(Turn::text("").call("complete", json!({"text": "done"})));
    let (outcome, events) = run(&s, TASK).await;
    assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
    let requests = llm.received();
    assert_eq!(requests.len(), 10, "one extra request for the refusal");
    assert!(
        requests[3].prompt_tokens() as u64 > STATED,
        "the refused prompt was beyond the stated window"
    );
    // The refused call and every one after it fit the stated window, though the history
    // grows past it.
    assert_within_window(&requests[4..], STATED as u32);
    let told = events
        .iter()
        .filter(|e| matches!(&e.kind,
            EventKind::Error { fatal: false, message } if message.contains("the model's window is 20,000 tokens, not the 40,000")))
        .count();
    assert_eq!(told, 1, "said once");
}

#[tokio::test]
async fn a_server_that_reads_far_less_than_was_sent_is_named_once_with_both_counts() {
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(
        &llm,
        Wire::OpenAi,
        ToolMode::Native,
        WINDOW,
        ContextSettings::default(),
    )
    .await;
    // As llama-cpp-python with a chat template that drops the tools reported it.
    llm.report_prompt_tokens(1_200);
    for _ in 0..3 {
        llm.push(Turn::text("Again.").call("read_file", json!({"file_path": "log.txt"})));
    }
    llm.push(Turn::text("").call("complete", json!({"text": "done"})));
    let (outcome, events) = run(&s, TASK).await;
    assert!(matches!(outcome.unwrap(), RunOutcome::Completed { .. }));
    let warnings: Vec<&String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Error {
                fatal: false,
                message,
            } if message.contains("cut or ignored part of the prompt") => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "said once: {warnings:?}");
    let sent = llm.received()[0].prompt_tokens();
    assert!(
        warnings[0].contains("the server read 1,200 prompt tokens of about")
            && warnings[0].contains("--context-window"),
        "both counts and what to do: {} (sent {sent})",
        warnings[0]
    );
}

#[tokio::test]
async fn a_tight_window_keeps_most_of_each_prompt_the_start_of_the_next_on_both_wires() {
    // 16k tokens, and tool results of about 24 KB: a result cannot stay whole for long.
    const TIGHT: u32 = 16_000;
    let big: String = log_text() + &log_text()[..4_600];
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let llm = ScriptedLlm::start().await.unwrap();
        let s = setup(
            &llm,
            wire,
            ToolMode::Native,
            TIGHT,
            ContextSettings::default(),
        )
        .await;
        std::fs::write(s._daemon.path("log.txt"), &big).unwrap();
        for i in 0..39 {
            llm.push(
                Turn::text(format!("Pass {i}.")).call("read_file", json!({"file_path": "log.txt"})),
            );
        }
        llm.push(Turn::text("").call("complete", json!({"text": "Audited."})));
        let (outcome, _) = run(&s, TASK).await;
        assert!(
            matches!(outcome.unwrap(), RunOutcome::Completed { .. }),
            "{wire:?}"
        );
        let requests = llm.received();
        assert_within_window(&requests, TIGHT);
        // A result too long to keep is cut when first sent, and says how to read it all.
        assert!(
            requests[1]
                .all_text()
                .contains("call expand_message with message_id"),
            "{wire:?}: the first result is sent cut"
        );
        let share = repeated_share(&requests);
        eprintln!("{wire:?}: {share:.3} over {} requests", requests.len());
        assert!(
            share >= 0.85,
            "{wire:?}: only {share:.3} of the prompt tokens repeat the previous request"
        );
    }
}
