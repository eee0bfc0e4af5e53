//! The agent loop in-process, against the scripted model and a real coved.

use std::sync::Arc;
use std::time::Duration;

use cove_core::agent::{Agent, AgentConfig, RunOutcome, ToolMode};
use cove_core::llm::anthropic::Anthropic;
use cove_core::llm::openai::OpenAi;
use cove_core::llm::profile::ModelProfile;
use cove_core::llm::retry::RetryPolicy;
use cove_core::llm::{ChatMessage, ChatProvider, Role};
use cove_core::permissions::{PermissionsConfig, Policy};
use cove_core::store::{Decision, NewThread, PauseKind, RunState, Store, Thread, ThreadStatus};
use cove_harness::llm::Wire;
use cove_harness::{
    DaemonBuilder, DaemonProcess, FixtureSite, ScriptedLlm, Turn, workspace_binary,
};
use cove_protocol::events::{EventKind, RunEvent, RunStatus};
use serde_json::json;

struct Setup {
    agent: Arc<Agent>,
    daemon: DaemonProcess,
    thread: Thread,
    store: Arc<Store>,
}

async fn setup(llm: &ScriptedLlm, wire: Wire, mode: ToolMode) -> Setup {
    setup_with(llm, wire, mode, None).await
}

async fn setup_with(
    llm: &ScriptedLlm,
    wire: Wire,
    mode: ToolMode,
    permissions: Option<Policy>,
) -> Setup {
    setup_configured(llm, wire, mode, permissions, |config| config).await
}

/// [`setup_with`], with the agent's configuration changed by `tweak`.
async fn setup_configured(
    llm: &ScriptedLlm,
    wire: Wire,
    mode: ToolMode,
    permissions: Option<Policy>,
    tweak: impl FnOnce(AgentConfig) -> AgentConfig,
) -> Setup {
    let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let provider: Arc<dyn ChatProvider> = match wire {
        Wire::OpenAi => Arc::new(OpenAi::new(
            http,
            &llm.openai_base_url(),
            Some("k".into()),
            "openai",
        )),
        Wire::Anthropic => Arc::new(Anthropic::new(http, &llm.anthropic_base_url(), "k".into())),
    };
    let store = Arc::new(Store::in_memory().unwrap());
    let thread = store
        .create_thread(NewThread::new(
            "test",
            "scripted/model",
            mode.as_str(),
            "test",
        ))
        .unwrap();
    let agent = Arc::new(Agent::new(
        AgentConfig::new(
            "scripted",
            "scripted/model",
            ModelProfile {
                vision: true,
                ..ModelProfile::UNKNOWN
            },
            mode,
        )
        .max_tokens(1000)
        .max_iterations(20)
        .max_auto_continues(3)
        .retry(RetryPolicy {
            max_attempts: 4,
            base: Duration::from_millis(10),
            cap: Duration::from_secs(2),
        })
        .workspace_label(daemon.path("").display().to_string())
        .apply(|config| match permissions {
            Some(policy) => config.permissions(policy),
            None => config,
        })
        .apply(tweak),
        provider,
        store.clone(),
        daemon.client.clone(),
    ));
    Setup {
        agent,
        daemon,
        thread,
        store,
    }
}

async fn run(s: &Setup, input: &str) -> (RunOutcome, Vec<RunEvent>) {
    let (events, outcome) = s
        .agent
        .start(&s.thread, Some(ChatMessage::user(input)))
        .unwrap()
        .finish()
        .await;
    (outcome.unwrap(), events)
}

fn names(events: &[RunEvent]) -> Vec<&'static str> {
    events
        .iter()
        .map(|e| e.kind.name())
        .filter(|n| *n != "assistant_text")
        .collect()
}

#[tokio::test]
async fn a_task_plans_acts_asks_and_completes_in_every_wire_and_mode() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        for mode in [ToolMode::Native, ToolMode::Xml] {
            let llm = ScriptedLlm::start().await.unwrap();
            let s = setup(&llm, wire, mode).await;
            llm.push(Turn::text("I'll plan first.").call(
                "create_file",
                json!({"file_path": "/workspace/todo.md", "file_contents": "- [ ] count files\n"}),
            ));
            llm.push(Turn::text("").call("execute_command", json!({"command": "ls | wc -l"})));
            llm.push(
                Turn::text("One question.").call("ask", json!({"text": "Shall I delete todo.md?"})),
            );
            let (outcome, events) = run(&s, "Count the files.").await;
            assert_eq!(
                outcome,
                RunOutcome::Paused {
                    waits_for: PauseKind::Ask,
                    text: "Shall I delete todo.md?".into(),
                    attachments: vec![],
                },
                "{wire:?} {mode:?}"
            );
            assert_eq!(
                std::fs::read_to_string(s.daemon.path("todo.md")).unwrap(),
                "- [ ] count files\n",
                "{wire:?} {mode:?}"
            );
            assert_eq!(
                names(&events),
                [
                    "thread_run_start",
                    "user_message",
                    "assistant_response_start",
                    "tool_started",
                    "tool_completed",
                    "finish",
                    "assistant_response_start",
                    "tool_started",
                    "tool_completed",
                    "finish",
                    "assistant_response_start",
                    "tool_started",
                    "tool_completed",
                    "finish",
                    "ask",
                    "thread_run_end",
                ],
                "{wire:?} {mode:?}"
            );
            assert!(
                events.windows(2).all(|w| w[1].seq == w[0].seq + 1),
                "sequence numbers without gaps"
            );
            let text: String = events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::AssistantText { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            assert!(
                text.contains("I'll plan first.") && !text.contains("<invoke"),
                "{text:?}"
            );
            // The command's result reached the model.
            let requests = llm.received();
            assert_eq!(requests.len(), 3);
            assert!(
                requests[2].all_text().contains("exit code 0\n1"),
                "{wire:?} {mode:?}"
            );
            assert_eq!(requests[0].native_tools(), mode == ToolMode::Native);

            // The reply resumes the thread; the model completes.
            llm.push(Turn::text("Done.").call(
                "complete",
                json!({"text": "1 file", "attachments": ["todo.md"]}),
            ));
            let (outcome, events) = run(&s, "No, keep it.").await;
            assert_eq!(
                outcome,
                RunOutcome::Completed {
                    text: Some("1 file".into()),
                    attachments: vec!["todo.md".into()],
                }
            );
            assert_eq!(names(&events).last(), Some(&"thread_run_end"));
            assert!(llm.received()[3].all_text().contains("No, keep it."));
            let stored = s.store.llm_messages(&s.thread.id).unwrap();
            let roles: Vec<_> = stored
                .iter()
                .map(|(_, m)| format!("{:?}", m.role))
                .collect();
            let expected_result = if mode == ToolMode::Native {
                "Tool"
            } else {
                "User"
            };
            assert_eq!(
                roles,
                [
                    "User",
                    "Assistant",
                    expected_result,
                    "Assistant",
                    expected_result,
                    "Assistant",
                    expected_result,
                    "User",
                    "Assistant",
                    expected_result,
                ],
                "{wire:?} {mode:?}"
            );
        }
    }
}

#[tokio::test]
async fn failures_go_back_to_the_model_and_an_answer_without_tools_ends_the_run() {
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(&llm, Wire::OpenAi, ToolMode::Xml).await;
    llm.push(
        Turn::text("Two at once.")
            .call("read_file", json!({"file_path": "missing.txt"}))
            .call("create_file", json!({"file_path": "ok.txt", "file_contents": "fine"}))
            .raw_xml("<function_calls><invoke><parameter name=\"x\">1</parameter></invoke></function_calls>"),
    );
    llm.push(Turn::text("All done, nothing more to do."));
    let (outcome, events) = run(&s, "go").await;
    assert_eq!(
        outcome,
        RunOutcome::Completed {
            text: None,
            attachments: vec![]
        }
    );
    assert_eq!(
        std::fs::read_to_string(s.daemon.path("ok.txt")).unwrap(),
        "fine"
    );
    let failed = events
        .iter()
        .filter(|e| e.kind.name() == "tool_failed")
        .count();
    assert_eq!(failed, 2, "the missing file and the malformed call");
    let second = &llm.received()[1];
    let text = second.all_text();
    assert!(
        text.contains("missing.txt") && text.contains("not_found"),
        "{text}"
    );
    assert!(text.contains("malformed tool call"), "{text}");
    assert!(text.contains("Created ok.txt"), "{text}");
}

#[tokio::test]
async fn a_stopped_run_abandons_its_tools_and_the_next_run_repairs_the_thread() {
    for mode in [ToolMode::Native, ToolMode::Xml] {
        let llm = ScriptedLlm::start().await.unwrap();
        let s = setup(&llm, Wire::OpenAi, mode).await;
        llm.push(Turn::text("This takes a while.").call(
            "execute_command",
            json!({"command": "sleep 30 && touch finished", "timeout": 60}),
        ));
        let mut handle = s
            .agent
            .start(&s.thread, Some(ChatMessage::user("go")))
            .unwrap();
        let stored = s.store.last_run(&s.thread.id).unwrap().unwrap();
        assert_eq!(
            (stored.id.as_str(), stored.status),
            (handle.run_id(), RunState::Running),
            "the run is recorded before start returns"
        );
        loop {
            let event = handle.next_event().await.expect("the tool never started");
            if event.kind.name() == "tool_started" {
                break;
            }
        }
        // In XML mode the tool starts while the answer still streams, and a partial answer
        // is never stored: stop once the answer is, so the next run has a call to repair.
        let mut tries = 0;
        while !s
            .store
            .llm_messages(&s.thread.id)
            .unwrap()
            .iter()
            .any(|(_, m)| m.role == Role::Assistant)
        {
            tries += 1;
            assert!(tries < 500, "the answer was never stored");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        handle.stop();
        // Had the tool gone on, its completion would arrive here (after 30 s) and the
        // channel would stay open until then.
        let (after, outcome) = handle.finish().await;
        assert_eq!(outcome.unwrap(), RunOutcome::Interrupted, "{mode:?}");
        assert_eq!(names(&after), ["thread_run_end"], "{mode:?}");
        assert!(matches!(
            after.last().unwrap().kind,
            EventKind::ThreadRunEnd {
                status: RunStatus::Stopped,
                ..
            }
        ));
        let stopped = s.store.last_run(&s.thread.id).unwrap().unwrap();
        assert_eq!(
            (stopped.status, stopped.error.as_deref()),
            (RunState::Stopped, Some("interrupted"))
        );
        assert_eq!(
            s.store.thread(&s.thread.id).unwrap().status,
            ThreadStatus::Stopped
        );

        // The next run gives the abandoned call a result before the model sees it (the
        // scripted model refuses a call without one).
        llm.push(Turn::text("").call("complete", json!({"text": "resumed"})));
        let (outcome, _) = run(&s, "go on").await;
        assert_eq!(
            outcome,
            RunOutcome::Completed {
                text: Some("resumed".into()),
                attachments: vec![]
            },
            "{mode:?}"
        );
        let resumed = llm.received().last().unwrap().all_text();
        assert!(
            resumed.contains("interrupted when Cove stopped"),
            "{mode:?}: {resumed}"
        );
    }
}

#[tokio::test]
async fn a_reply_through_the_handle_ends_a_takeover_and_the_run_goes_on() {
    let site = FixtureSite::start().await.unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    let s = setup(&llm, Wire::Anthropic, ToolMode::Native).await;
    llm.push(Turn::text("").call(
        "browser_navigate_to",
        json!({"url": site.url("takeover.html")}),
    ));
    llm.push(Turn::text("").call(
        "web_browser_takeover",
        json!({"text": "Please log in, then hand the browser back."}),
    ));
    llm.push_fn(|request| {
        let verdict = if request.all_text().contains("I logged in myself") {
            "ok"
        } else {
            "MISSING THE REPLY"
        };
        Turn::text("").call("complete", json!({"text": verdict}))
    });
    let mut handle = s
        .agent
        .start(&s.thread, Some(ChatMessage::user("Log in")))
        .unwrap();
    assert!(
        !handle.reply(&ChatMessage::user("too early")).unwrap(),
        "nothing waits for a reply yet"
    );
    let mut seen = Vec::new();
    loop {
        let event = handle.next_event().await.expect("the run ended early");
        let takeover = event.kind.name() == "takeover";
        seen.push(event);
        if takeover {
            break;
        }
    }
    // The wait is recorded just after the event.
    let mut tries = 0;
    while s.store.wait_of(&s.thread.id).unwrap().is_none() {
        tries += 1;
        assert!(tries < 500, "the run never waited");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        s.store.thread(&s.thread.id).unwrap().status,
        ThreadStatus::Waiting
    );
    assert!(
        handle
            .reply(&ChatMessage::user("I logged in myself"))
            .unwrap()
    );
    let (rest, outcome) = handle.finish().await;
    assert_eq!(
        outcome.unwrap(),
        RunOutcome::Completed {
            text: Some("ok".into()),
            attachments: vec![]
        }
    );
    let ended = rest
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TakeoverEnded { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(ended, "replied");
    assert!(s.store.wait_of(&s.thread.id).unwrap().is_none());
    assert_eq!(
        names(&seen).last(),
        Some(&"takeover"),
        "the run waited right after asking"
    );
    let stored: Vec<String> = s
        .store
        .llm_messages(&s.thread.id)
        .unwrap()
        .into_iter()
        .map(|(_, m)| m.text())
        .collect();
    assert!(!stored.iter().any(|t| t == "too early"), "{stored:?}");
}

/// Calls `f` on a value, for a builder step that depends on a test's input.
trait Apply: Sized {
    fn apply(self, f: impl FnOnce(Self) -> Self) -> Self {
        f(self)
    }
}

impl Apply for AgentConfig {}

/// Reads events until `want` says it has seen what it waits for; every event read is kept.
async fn read_until(
    handle: &mut cove_core::agent::RunHandle,
    seen: &mut Vec<RunEvent>,
    mut want: impl FnMut(&[RunEvent]) -> bool,
) {
    while !want(seen) {
        let event = tokio::time::timeout(Duration::from_secs(30), handle.next_event())
            .await
            .expect("the run went quiet")
            .expect("the run ended first");
        seen.push(event);
    }
}

fn requests(events: &[RunEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PermissionRequest {
                request_id,
                summary,
                ..
            } => Some((request_id.clone(), summary.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_call_the_policy_asks_about_waits_for_the_user_while_the_others_go_on() {
    for (wire, mode) in [
        (Wire::OpenAi, ToolMode::Native),
        (Wire::Anthropic, ToolMode::Xml),
    ] {
        let llm = ScriptedLlm::start().await.unwrap();
        // The test's coved runs on this machine with no walls around it: every command
        // asks, and deleting outside the workspace is what the reading finds.
        let policy = Policy::new(&PermissionsConfig::default(), None)
            .unwrap()
            .with_walls(false);
        let s = setup_with(&llm, wire, mode, Some(policy)).await;
        let outside = tempfile::tempdir().unwrap();
        let keep = outside.path().join("keep");
        let gone = outside.path().join("gone");
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::create_dir_all(&gone).unwrap();
        let rm = |dir: &std::path::Path| json!({ "command": format!("rm -rf {}", dir.display()) });
        llm.push(
            Turn::text("Cleaning up.")
                .call("execute_command", rm(&keep))
                .call(
                    "create_file",
                    json!({"file_path": "ok.txt", "file_contents": "fine"}),
                ),
        );
        llm.push(
            Turn::text("Then the other one, twice.")
                .call("execute_command", rm(&gone))
                .call("execute_command", rm(&gone)),
        );
        llm.push(Turn::text("All done."));

        let mut handle = s
            .agent
            .start(&s.thread, Some(ChatMessage::user("clean up")))
            .unwrap();
        let mut seen = Vec::new();
        // The file is written while the deletion waits for the user.
        read_until(&mut handle, &mut seen, |events| {
            !requests(events).is_empty()
                && events.iter().any(|e| {
                    matches!(&e.kind, EventKind::ToolCompleted { tool, .. } if tool == "create_file")
                })
        })
        .await;
        assert_eq!(
            std::fs::read_to_string(s.daemon.path("ok.txt")).unwrap(),
            "fine"
        );
        let (first, summary) = requests(&seen).remove(0);
        assert_eq!(summary, format!("run `rm -rf {}`", keep.display()));
        assert_eq!(s.store.waiting_requests(&s.thread.id).unwrap().len(), 1);
        handle
            .permit(&first, Decision::Deny, Some("keep that folder"))
            .unwrap();

        // Two identical requests: one allow_for_thread answers both.
        read_until(&mut handle, &mut seen, |events| requests(events).len() == 3).await;
        let waiting = requests(&seen);
        let decided = handle
            .permit(&waiting[1].0, Decision::AllowForThread, None)
            .unwrap();
        assert_eq!(
            decided
                .also
                .iter()
                .map(|r| r.id.clone())
                .collect::<Vec<_>>(),
            [waiting[2].0.clone()],
            "{wire:?} {mode:?}"
        );
        let (events, outcome) = handle.finish().await;
        seen.extend(events);
        assert!(
            matches!(outcome.unwrap(), RunOutcome::Completed { .. }),
            "{wire:?} {mode:?}"
        );
        assert!(keep.exists(), "the denied deletion did not run");
        assert!(!gone.exists(), "the allowed one did");
        let decided: Vec<String> = seen
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::PermissionDecided { decision, .. } => Some(decision.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(decided, ["deny", "allow_for_thread", "allow_for_thread"]);
        let second = llm.received()[1].all_text();
        assert!(
            second.contains("Not run: the user denied this call. Their reason: keep that folder"),
            "{wire:?} {mode:?}: {second}"
        );
        assert!(s.store.waiting_requests(&s.thread.id).unwrap().is_empty());
    }
}

#[tokio::test]
async fn with_no_one_to_answer_a_call_that_asks_pauses_the_run_and_the_next_applies_the_decision() {
    for (wire, mode) in [
        (Wire::OpenAi, ToolMode::Native),
        (Wire::Anthropic, ToolMode::Xml),
    ] {
        let llm = ScriptedLlm::start().await.unwrap();
        let policy = Policy::new(&PermissionsConfig::default(), None)
            .unwrap()
            .with_walls(false);
        // One call after another: the one after the held call must not run before it.
        let s = setup_configured(&llm, wire, mode, Some(policy), |config| {
            config.pause_for_permission(true).parallel_tools(false)
        })
        .await;
        let outside = tempfile::tempdir().unwrap();
        let gone = outside.path().join("gone");
        std::fs::create_dir_all(&gone).unwrap();
        let write = |name: &str| json!({"file_path": name, "file_contents": "x"});
        llm.push(
            Turn::text("In order.")
                .call("create_file", write("before.txt"))
                .call(
                    "execute_command",
                    json!({ "command": format!("rm -rf {}", gone.display()) }),
                )
                .call("create_file", write("after.txt")),
        );
        llm.push(Turn::text("All done."));

        let (outcome, events) = run(&s, "clean up").await;
        let RunOutcome::Paused {
            waits_for, text, ..
        } = outcome
        else {
            panic!("{wire:?} {mode:?}: {outcome:?}");
        };
        assert_eq!(waits_for, PauseKind::Permission);
        assert_eq!(
            text,
            format!("permission to run `rm -rf {}`", gone.display())
        );
        assert!(s.daemon.path("before.txt").exists(), "the call before ran");
        assert!(
            !s.daemon.path("after.txt").exists(),
            "the call after did not"
        );
        assert!(gone.exists());
        let started: Vec<&str> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolStarted { tool, .. } => Some(tool.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(started, ["create_file"], "{:?}", names(&events));
        assert!(
            events.iter().any(|e| matches!(&e.kind,
                EventKind::ToolFailed { tool, error, .. }
                    if tool == "create_file" && error.contains("waits for the user's permission"))),
            "{:?}",
            names(&events)
        );
        let waiting = s.store.waiting_requests(&s.thread.id).unwrap();
        assert_eq!(waiting.len(), 1);
        let last = s.store.last_run(&s.thread.id).unwrap().unwrap();
        assert_eq!(last.status, RunState::Paused);
        assert_eq!(last.pause_kind, Some(PauseKind::Permission));
        assert_eq!(llm.received().len(), 1);

        // A run with no decision yet asks again and pauses before any model call.
        let (events, outcome) = s.agent.start(&s.thread, None).unwrap().finish().await;
        assert!(
            matches!(
                outcome.unwrap(),
                RunOutcome::Paused {
                    waits_for: PauseKind::Permission,
                    ..
                }
            ),
            "{wire:?} {mode:?}"
        );
        assert_eq!(requests(&events).len(), 1, "{:?}", names(&events));
        assert_eq!(requests(&events)[0].0, waiting[0].id);
        assert_eq!(llm.received().len(), 1);

        s.store
            .decide_request(&s.thread.id, &waiting[0].id, Decision::AllowOnce, None)
            .unwrap();
        let (events, outcome) = s.agent.start(&s.thread, None).unwrap().finish().await;
        assert!(
            matches!(outcome.unwrap(), RunOutcome::Completed { .. }),
            "{wire:?} {mode:?}: {:?}",
            names(&events)
        );
        assert!(!gone.exists(), "the allowed call ran in the next run");
        let second = llm.received()[1].all_text();
        assert!(
            second.contains("Make this call again once that one has run"),
            "{wire:?} {mode:?}: {second}"
        );
    }
}
