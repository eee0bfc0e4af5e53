//! The store against real database files: a database from the last release upgrades with
//! nothing lost, one from a newer Cove is refused untouched, and what is stored reads back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on the unexpected

use std::path::{Path, PathBuf};

use cove_protocol::conversation::ChatMessage;
use cove_protocol::events::RunStatus;
use cove_store::{
    DecideError, Decision, EventWait, MessageKind, NewRequest, NewThread, NewWatch, PauseKind,
    RequestKind, RunState, Store, StoreError, ThreadStatus, WatchState,
};
use rusqlite::Connection;
use serde_json::json;

/// The database Cove 0.1.0 wrote (no `user_version`): two threads, one completed with a
/// summary and a thread's knowledge, one paused on a takeover with its wait recorded, and a
/// Docker sandbox.
fn release_fixture(dir: &Path) -> PathBuf {
    let path = dir.join("cove.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v0.1.0.db"),
        &path,
    )
    .unwrap();
    path
}

/// Every row of every table, as text, in a stable order: what "nothing lost" compares.
fn dump(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut out = Vec::new();
    for table in [
        "threads",
        "runs",
        "messages",
        "waits",
        "requests",
        "sandboxes",
        "knowledge",
    ] {
        let exists: bool = conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        if !exists {
            continue;
        }
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY 1"))
            .unwrap();
        let columns = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let cells: Vec<String> = (0..columns)
                    .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                    .collect();
                Ok(format!("{table}: {}", cells.join(" | ")))
            })
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        out.extend(rows);
    }
    out
}

fn user_version(path: &Path) -> u32 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_database_from_the_last_release_upgrades_with_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = release_fixture(dir.path());
    assert_eq!(user_version(&path), 0, "the fixture is a 0.1.0 database");
    let before = dump(&path);
    assert_eq!(before.len(), 14, "{before:#?}");

    let store = Store::open(&path).unwrap();
    assert_eq!(user_version(&path), Store::schema_version());
    assert!(Store::schema_version() >= 2);

    // Everything reads back through the store, statuses as their enums.
    let threads = store.threads().unwrap();
    assert_eq!(threads.len(), 2);
    let done = store.thread("433792ce").unwrap();
    assert_eq!(done.status, ThreadStatus::Completed);
    assert_eq!(done.sandbox, "local:/tmp/ws");
    let paused = store.thread("aa6b").unwrap();
    assert_eq!(
        (paused.status, paused.tool_mode.as_str()),
        (ThreadStatus::Paused, "xml")
    );
    let run = store.last_run(&paused.id).unwrap().unwrap();
    assert_eq!(
        (run.status, run.pause_kind, run.pause_text.as_deref()),
        (
            RunState::Paused,
            Some(PauseKind::Takeover),
            Some("Please log in")
        )
    );
    // The takeover wait moved to the requests, where every wait of a thread is.
    let wait = store.wait_of(&paused.id).unwrap().unwrap();
    assert_eq!(
        (wait.run_id.as_str(), wait.after_message),
        (run.id.as_str(), 6)
    );
    let waiting = store.waiting_requests(&paused.id).unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].kind, RequestKind::Takeover);
    let messages = store.messages(&done.id).unwrap();
    let kinds: Vec<MessageKind> = messages.iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds,
        [
            MessageKind::User,
            MessageKind::Assistant,
            MessageKind::Tool,
            MessageKind::Status,
            MessageKind::Summary
        ]
    );
    let llm = store.llm_messages(&done.id).unwrap();
    assert_eq!(llm.len(), 3);
    assert_eq!(llm[1].1.tool_calls[0].name, "create_file");
    let summary = store.latest_summary(&done.id).unwrap().unwrap();
    assert_eq!((summary.id, summary.first, summary.last), (5, 1, 2));
    assert_eq!(store.knowledge(Some(&done.id)).unwrap().len(), 2);
    assert_eq!(store.knowledge(Some(&paused.id)).unwrap().len(), 1);
    let sandbox = store.sandbox("build-1").unwrap().unwrap();
    assert_eq!(sandbox.token, "0123456789abcdef0123456789abcdef0123");

    // The new schema is in use: the summary lookup has its index, and the upgraded
    // database takes new rows next to the old ones.
    let thread = store
        .create_thread(NewThread::new(
            "after",
            "openai/gpt-4o",
            "native",
            "local:/x",
        ))
        .unwrap();
    let new_run = store.start_run(&thread.id).unwrap();
    store
        .append_llm(&thread.id, Some(&new_run.id), &ChatMessage::user("hi"))
        .unwrap();
    store
        .end_run(&new_run, RunStatus::Completed, None, None)
        .unwrap();
    drop(store);
    let plan: String = Connection::open(&path)
        .unwrap()
        .query_row(
            "EXPLAIN QUERY PLAN SELECT id FROM messages WHERE thread_id = 'x' AND kind = 'summary' ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("messages_summaries"), "{plan}");

    // Nothing old changed: every row of 0.1.0 is still there as it was, but for the wait,
    // which is a request now (above).
    // Columns added since (ALTER TABLE ... ADD COLUMN) come after the old ones.
    let after = dump(&path);
    for row in before.iter().filter(|r| !r.starts_with("waits:")) {
        let extended = format!("{row} | ");
        assert!(
            after.iter().any(|a| a == row || a.starts_with(&extended)),
            "lost or changed in the upgrade: {row}"
        );
    }
    assert_eq!(
        after.len(),
        before.len() + 3,
        "the wait moved; one thread, run and message added"
    );

    // Opening again is a no-op.
    let again = Store::open(&path).unwrap();
    assert_eq!(again.threads().unwrap().len(), 3);
    assert_eq!(user_version(&path), Store::schema_version());
}

#[test]
fn a_database_from_a_newer_cove_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = release_fixture(dir.path());
    let newer = Store::schema_version() + 1;
    Connection::open(&path)
        .unwrap()
        .execute_batch(&format!("PRAGMA user_version = {newer}"))
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();

    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(error, StoreError::TooNew { found, supported } if found == newer && supported == Store::schema_version()),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("newer") && message.contains("left as it is"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the newer database is byte for byte as it was"
    );
    assert_eq!(user_version(&path), newer);
}

#[test]
fn threads_messages_runs_and_waits_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db/cove.db");
    let store = Store::open(&path).unwrap();
    let thread = store
        .create_thread(NewThread::new(
            "Build a site",
            "openai/gpt-4o",
            "native",
            "local:/tmp/ws",
        ))
        .unwrap();
    assert_eq!(thread.status, ThreadStatus::New);
    assert_eq!(store.thread(&thread.id).unwrap(), thread);
    assert_eq!(
        store.thread(&thread.id[..4]).unwrap().id,
        thread.id,
        "a prefix is enough"
    );
    assert!(matches!(store.thread("nope"), Err(StoreError::NoThread(_))));
    let run = store.start_run(&thread.id).unwrap();
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Running
    );
    store
        .append_llm(&thread.id, Some(&run.id), &ChatMessage::user("hi"))
        .unwrap();
    store
        .append_status(&thread.id, Some(&run.id), &json!({"type": "finish"}))
        .unwrap();
    store
        .append_llm(&thread.id, Some(&run.id), &ChatMessage::assistant("hello"))
        .unwrap();
    let llm = store.llm_messages(&thread.id).unwrap();
    assert_eq!(llm.len(), 2, "status messages are not sent to the model");
    assert_eq!(llm[1].1.text(), "hello");
    assert_eq!(store.messages(&thread.id).unwrap().len(), 3);

    // A wait takes a reply only while it is recorded.
    let after = store.begin_wait(&thread.id, &run.id).unwrap();
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Waiting
    );
    assert!(
        store
            .deliver_reply(&thread.id, &ChatMessage::user("done"))
            .unwrap()
    );
    let replies = store.user_messages_after(&thread.id, after).unwrap();
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].1.text(), "done");
    store.end_wait(&thread.id).unwrap();
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Running
    );
    assert!(
        !store
            .deliver_reply(&thread.id, &ChatMessage::user("late"))
            .unwrap()
    );

    store
        .end_run(
            &run,
            RunStatus::Paused,
            None,
            Some((PauseKind::Ask, "Which colour?")),
        )
        .unwrap();
    let last = store.last_run(&thread.id).unwrap().unwrap();
    assert_eq!(
        (last.status, last.pause_kind, last.pause_text.as_deref()),
        (
            RunState::Paused,
            Some(PauseKind::Ask),
            Some("Which colour?")
        )
    );
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Paused
    );
    drop(store);
    // Reopening finds everything.
    let again = Store::open(&path).unwrap();
    assert_eq!(again.llm_messages(&thread.id).unwrap().len(), 3);
    assert_eq!(again.threads().unwrap().len(), 1);
}

#[test]
fn stored_names_are_the_same_in_sqlite_and_json() {
    for status in ThreadStatus::ALL {
        let json = serde_json::to_value(status).unwrap();
        assert_eq!(json, json!(status.as_str()));
        assert_eq!(
            serde_json::from_value::<ThreadStatus>(json).unwrap(),
            *status
        );
        assert_eq!(status.as_str().parse::<ThreadStatus>().unwrap(), *status);
    }
    for state in RunState::ALL {
        assert_eq!(state.as_str().parse::<RunState>().unwrap(), *state);
        assert_eq!(ThreadStatus::from(*state).as_str(), state.as_str());
    }
    assert!("done".parse::<ThreadStatus>().is_err());
    assert_eq!(format!("{:<9}|", ThreadStatus::New), "new      |");
}

#[test]
fn controllers_opening_a_new_database_at_once_all_get_it() {
    // Several `cove run`s started together each create or upgrade the same database.
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cove.db");
        let start = std::sync::Barrier::new(6);
        std::thread::scope(|s| {
            let opened: Vec<_> = (0..6)
                .map(|n| {
                    let (path, start) = (&path, &start);
                    s.spawn(move || {
                        start.wait();
                        let store = Store::open(path)?;
                        let title = format!("thread {n}");
                        store.create_thread(NewThread::new(
                            &title,
                            "openai/scripted",
                            "native",
                            "local",
                        ))
                    })
                })
                .collect();
            for (n, handle) in opened.into_iter().enumerate() {
                if let Err(e) = handle.join().unwrap() {
                    panic!("round {round}, controller {n}: {e}");
                }
            }
        });
        assert_eq!(Store::open(&path).unwrap().threads().unwrap().len(), 6);
    }
}

#[test]
fn permission_requests_wait_until_decided_from_any_store_on_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cove.db");
    let store = Store::open(&path).unwrap();
    let thread = store
        .create_thread(NewThread::new("t", "m", "native", "local:/tmp/ws"))
        .unwrap();
    let run = store.start_run(&thread.id).unwrap();
    let ask = |call: &str, command: &str| NewRequest {
        thread_id: thread.id.clone(),
        run_id: run.id.clone(),
        kind: RequestKind::Permission,
        call_id: call.into(),
        tool: "execute_command".into(),
        summary: format!("run `{command}`"),
        why: "the command runs as root (sudo)".into(),
        arguments: json!({ "command": command }),
        fingerprint: format!("execute_command\n{command}"),
    };
    let first = store.open_request(ask("c1", "sudo ls")).unwrap();
    let twin = store.open_request(ask("c2", "sudo ls")).unwrap();
    let other = store.open_request(ask("c3", "sudo rm x")).unwrap();
    assert_eq!(store.waiting_requests(&thread.id).unwrap().len(), 3);
    assert_eq!(
        store
            .request(&thread.id, &first.id)
            .unwrap()
            .unwrap()
            .arguments,
        json!({"command": "sudo ls"})
    );

    // Another process (another Store on the file) answers.
    let elsewhere = Store::open(&path).unwrap();
    let decided = elsewhere
        .decide_request(&thread.id, &first.id, Decision::AllowForThread, None)
        .unwrap();
    assert_eq!(decided.request.decision, Some(Decision::AllowForThread));
    assert_eq!(
        decided
            .also
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>(),
        [twin.id.as_str()],
        "the identical waiting request is released with it, the other is not"
    );
    assert!(store.granted(&thread.id, &first.fingerprint).unwrap());
    assert!(!store.granted(&thread.id, &other.fingerprint).unwrap());
    let waiting = store.waiting_requests(&thread.id).unwrap();
    assert_eq!(
        waiting.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [other.id.as_str()]
    );

    // Bad decisions change nothing and say why.
    let again = store
        .decide_request(&thread.id, &twin.id, Decision::Deny, Some("no"))
        .unwrap_err();
    assert_eq!(
        again.to_string(),
        format!(
            "request {} was already answered (allow_for_thread); nothing was changed",
            twin.id
        )
    );
    let not_offered = store
        .decide_request(&thread.id, &other.id, Decision::Approve, None)
        .unwrap_err();
    assert_eq!(
        not_offered.to_string(),
        format!(
            "request {} asks for permission: answer it with allow_once, allow_for_thread, deny; nothing was changed",
            other.id
        )
    );
    let unknown = store
        .decide_request(&thread.id, "nope", Decision::Deny, None)
        .unwrap_err();
    assert!(
        matches!(unknown, DecideError::NoRequest { .. }),
        "{unknown}"
    );
    assert_eq!(
        store
            .request(&thread.id, &twin.id)
            .unwrap()
            .unwrap()
            .decision,
        Some(Decision::AllowForThread)
    );

    let denied = store
        .decide_request(
            &thread.id,
            &other.id,
            Decision::Deny,
            Some("  not on my machine "),
        )
        .unwrap();
    assert!(denied.also.is_empty());
    let stored = Store::open(&path)
        .unwrap()
        .request(&thread.id, &other.id)
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.decision, stored.reason.as_deref()),
        (Some(Decision::Deny), Some("not on my machine"))
    );
    assert!(store.waiting_requests(&thread.id).unwrap().is_empty());
    assert!("maybe".parse::<Decision>().is_err());
}

#[test]
fn a_plan_goes_through_versions_and_refuses_what_does_not_fit_its_state() {
    use cove_protocol::plan::{PlanStatus, PlanStep, StepStatus};
    use cove_store::{PlanDraft, PlanError};

    let store = Store::in_memory().unwrap();
    let thread = store
        .create_thread(NewThread::new("t", "m", "native", "local:/tmp/ws"))
        .unwrap();
    let t = thread.id.as_str();
    let draft = |goal: &str, steps: &[&str]| PlanDraft {
        goal: goal.into(),
        steps: steps
            .iter()
            .map(|d| PlanStep {
                id: String::new(),
                description: (*d).into(),
                status: StepStatus::Pending,
            })
            .collect(),
    };
    assert!(matches!(
        store.approve_plan(t, None),
        Err(PlanError::NotWaiting(_))
    ));
    let one = store
        .propose_plan(t, draft("Site", &["Write", "Serve"]))
        .unwrap();
    assert_eq!((one.version, one.status), (1, PlanStatus::Proposed));
    assert_eq!(one.steps[1].id, "2", "steps are numbered");
    assert!(matches!(
        store.update_plan_step(t, "1", StepStatus::Completed),
        Err(PlanError::NotApproved(_))
    ));
    let rejected = store.reject_plan(t, Some(" too vague ")).unwrap();
    assert_eq!(rejected.reason.as_deref(), Some("too vague"));
    let two = store
        .propose_plan(t, draft("Site", &["Write it", "Serve it"]))
        .unwrap();
    let three = store
        .propose_plan(t, draft("Site", &["Write", "Serve", "Check"]))
        .unwrap();
    assert_eq!((two.version, three.version), (2, 3));
    let edited = store
        .approve_plan(t, Some(draft("Site, edited", &["Write", "Check"])))
        .unwrap();
    assert_eq!(
        (edited.version, edited.status, edited.goal.as_str()),
        (4, PlanStatus::Approved, "Site, edited")
    );
    let moved = store
        .update_plan_step(t, "2", StepStatus::InProgress)
        .unwrap();
    assert_eq!(moved.steps[1].status, StepStatus::InProgress);
    let err = store
        .update_plan_step(t, "9", StepStatus::Completed)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "the plan has no step \"9\"; its steps are 1, 2");
    assert!(matches!(
        store.reject_plan(t, None),
        Err(PlanError::NotWaiting(_))
    ));
    let statuses: Vec<PlanStatus> = store
        .plan_versions(t)
        .unwrap()
        .iter()
        .map(|p| p.status)
        .collect();
    assert_eq!(
        statuses,
        [
            PlanStatus::Rejected,
            PlanStatus::Superseded,
            PlanStatus::Superseded,
            PlanStatus::Approved
        ]
    );
    assert!(matches!(
        store.propose_plan(t, draft(" ", &["x"])),
        Err(PlanError::Malformed(_))
    ));
}

#[test]
fn a_deleted_thread_leaves_nothing_behind_and_other_threads_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cove.db");
    let store = Store::open(&path).unwrap();
    let make = |title: &str| {
        let thread = store
            .create_thread(NewThread::new(
                title,
                "openai/gpt-4o",
                "native",
                "local:/tmp/ws",
            ))
            .unwrap();
        let run = store.start_run(&thread.id).unwrap();
        store
            .append_llm(&thread.id, Some(&run.id), &ChatMessage::user("hi"))
            .unwrap();
        store
            .append_status(&thread.id, Some(&run.id), &json!({"type": "finish"}))
            .unwrap();
        store
            .record_call(
                &run.id,
                1,
                "openai/gpt-4o",
                &cove_protocol::conversation::Usage {
                    input_tokens: 10,
                    ..Default::default()
                },
                None,
            )
            .unwrap();
        store
            .add_knowledge(Some(&thread.id), "note", "kept for this thread")
            .unwrap();
        thread
    };
    let gone = make("Delete me");
    let kept = make("Keep me");
    store.delete_thread(&gone.id).unwrap();
    assert!(matches!(
        store.thread_exact(&gone.id),
        Err(StoreError::NoThread(_))
    ));
    assert!(matches!(
        store.delete_thread(&gone.id),
        Err(StoreError::NoThread(_))
    ));
    assert_eq!(store.messages(&kept.id).unwrap().len(), 2);
    assert_eq!(store.knowledge(Some(&kept.id)).unwrap().len(), 1);
    drop(store);
    let conn = Connection::open(&path).unwrap();
    for table in ["runs", "messages", "knowledge"] {
        let left: i64 = conn
            .query_row(
                &format!("SELECT COUNT(*) FROM {table} WHERE thread_id = ?1"),
                [&gone.id],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0, "{table}");
    }
    let calls: i64 = conn
        .query_row("SELECT COUNT(*) FROM model_calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(calls, 1, "only the kept thread's call");
}

#[test]
fn an_event_wait_ends_with_its_result_and_its_watches_delivered_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cove.db");
    let store = Store::open(&path).unwrap();
    let thread = store
        .create_thread(NewThread::new(
            "Build",
            "openai/gpt-4o",
            "native",
            "local:/ws",
        ))
        .unwrap();
    let run = store.start_run(&thread.id).unwrap();
    for (id, label) in [("wa", Some("the build")), ("wb", None), ("wc", None)] {
        store
            .add_watch(
                &thread.id,
                &NewWatch {
                    id: id.into(),
                    label: label.map(String::from),
                    description: format!("watch {id}"),
                    expires_at: 1,
                },
            )
            .unwrap();
    }
    assert!(store.drop_watch(&thread.id, "wc").unwrap());
    assert!(!store.drop_watch(&thread.id, "wc").unwrap(), "dropped once");
    let pending = store.pending_watches(&thread.id).unwrap();
    let titles: Vec<&str> = pending.iter().map(|w| w.title()).collect();
    assert_eq!(titles, ["the build", "watch wb"]);
    assert!(pending.iter().all(|w| w.state == WatchState::Pending));
    let wait = EventWait {
        thread_id: thread.id.clone(),
        run_id: run.id.clone(),
        call_id: "call_1".into(),
        tool: "wait_for_events".into(),
        summary: "the build".into(),
        watches: vec!["wa".into()],
        created_at: 5,
        deadline: 10,
    };
    store.begin_event_wait(&wait).unwrap();
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Waiting
    );
    // Another process on the file sees the wait a killed run left.
    let other = Store::open(&path).unwrap();
    assert_eq!(other.event_wait(&thread.id).unwrap(), Some(wait));
    let result = ChatMessage::tool_result("call_1", "wait_for_events", "exit code 3", false);
    let id = store
        .deliver_events(
            &thread.id,
            &run.id,
            &result,
            &[("wa".into(), "{\"id\":1}".into())],
            &["wb".into()],
        )
        .unwrap();
    assert_eq!(other.event_wait(&thread.id).unwrap(), None);
    assert!(other.pending_watches(&thread.id).unwrap().is_empty());
    assert_eq!(
        other.thread(&thread.id).unwrap().status,
        ThreadStatus::Running
    );
    let stored = other.llm_messages(&thread.id).unwrap();
    assert_eq!(
        stored.last().map(|(i, m)| (*i, m.text())),
        Some((id, "exit code 3".into()))
    );
    // A stopped run forgets its wait without a result.
    store
        .begin_event_wait(&EventWait {
            call_id: "call_2".into(),
            ..other_wait(&thread.id, &run.id)
        })
        .unwrap();
    store.end_event_wait(&thread.id).unwrap();
    assert_eq!(store.event_wait(&thread.id).unwrap(), None);
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Running
    );
    store.delete_thread(&thread.id).unwrap();
    let conn = Connection::open(&path).unwrap();
    for table in ["watches", "event_waits"] {
        let left: i64 = conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0, "{table}");
    }
}

fn other_wait(thread: &str, run: &str) -> EventWait {
    EventWait {
        thread_id: thread.into(),
        run_id: run.into(),
        call_id: String::new(),
        tool: "wait_for_events".into(),
        summary: "anything".into(),
        watches: Vec::new(),
        created_at: 1,
        deadline: 2,
    }
}

#[test]
fn thread_ids_are_matched_as_text_never_as_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("cove.db")).unwrap();
    let thread = store
        .create_thread(NewThread::new("t", "m", "native", "local:/tmp/ws"))
        .unwrap();
    // The command line takes a unique prefix; the API only the whole id.
    assert_eq!(store.thread(&thread.id[..4]).unwrap().id, thread.id);
    assert_eq!(store.thread_exact(&thread.id).unwrap().id, thread.id);
    assert!(store.thread_exact(&thread.id[..4]).is_err());
    // `%` and `_` are characters of an id, not wildcards: with one thread stored, they
    // find nothing.
    for pattern in ["%", "_", "%%", "____", &format!("{}%", &thread.id[..2])] {
        assert!(store.thread(pattern).is_err(), "{pattern}");
        assert!(store.thread_exact(pattern).is_err(), "{pattern}");
    }
}

#[test]
fn a_spawn_keeps_its_notes_and_a_sub_agents_answer_closes_the_parents_question_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("cove.db")).unwrap();
    let parent = store
        .create_thread(NewThread::new("parent", "m", "native", "local:/w"))
        .unwrap();
    let child = store
        .create_thread(NewThread::new("child", "m", "native", "local:/w").child_of(&parent.id))
        .unwrap();
    let run = store.start_run(&parent.id).unwrap();
    let spawn = cove_store::Spawn {
        thread_id: parent.id.clone(),
        run_id: run.id.clone(),
        call_id: "call-1".into(),
        tool: "spawn_agents".into(),
        children: vec![cove_store::SpawnedChild {
            n: 1,
            thread: child.id.clone(),
            tools: None,
        }],
        max_parallel: 4,
        failed: vec!["Agent 2: did not start: no room.".into()],
    };
    store.begin_spawn(&spawn).unwrap();
    assert_eq!(store.spawn_of(&parent.id).unwrap(), Some(spawn));

    let asked = store
        .open_pause(
            &parent.id,
            &run.id,
            RequestKind::Ask,
            "ask",
            "Sub-agent 1 asks: which port?",
            json!({"agent_thread": child.id}),
        )
        .unwrap();
    let answer = ChatMessage::user("8080");
    let id = store
        .answer_sub_agent(&parent.id, &child.id, &answer)
        .unwrap();
    // The answer is the child's newest message, stored by no run; the question is closed.
    let last = store.messages(&child.id).unwrap().pop().unwrap();
    assert_eq!(
        (last.id, last.kind, last.run_id),
        (id, MessageKind::User, None)
    );
    assert!(store.waiting_requests(&parent.id).unwrap().is_empty());
    let closed = store.request(&parent.id, &asked.id).unwrap().unwrap();
    assert_eq!(closed.decision, Some(Decision::Answered));
    // Nothing of it in the parent's conversation.
    assert!(store.llm_messages(&parent.id).unwrap().is_empty());
}

#[test]
fn a_pool_member_goes_to_one_sandbox_only_and_never_past_its_age() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cove.db");
    let store = Store::open(&path).unwrap();
    let member = |name: &str, created_at: i64, ready: bool| cove_store::PoolMember {
        name: name.into(),
        pool: "py".into(),
        provider: "docker".into(),
        container_id: String::new(),
        url: None,
        boot_token: format!("boot-of-{name}"),
        image: "cove-sandbox:test".into(),
        spec: None,
        ready,
        created_at,
    };
    store
        .add_pool_member(&member("pool-py-old", 1_000, false))
        .unwrap();
    store
        .add_pool_member(&member("pool-py-a", 2_000, false))
        .unwrap();
    store
        .add_pool_member(&member("pool-py-b", 3_000, false))
        .unwrap();
    store
        .set_pool_member_ready("pool-py-old", "c-old", Some("http://127.0.0.1:1"), None)
        .unwrap();
    store
        .set_pool_member_ready("pool-py-a", "c-a", Some("http://127.0.0.1:2"), None)
        .unwrap();
    let as_sandbox = |name: &str| {
        let name = name.to_string();
        move |m: &cove_store::PoolMember| cove_store::ManagedSandbox {
            name: name.clone(),
            provider: m.provider.clone(),
            container_id: m.container_id.clone(),
            url: m.url.clone(),
            token: format!("own-token-of-{name}"),
            image: m.image.clone(),
            created_at: 9_000,
            spec: None,
            boot_token: Some(m.boot_token.clone()),
            made_as: Some(m.name.clone()),
        }
    };
    // Several controllers claim at once: each member goes to one of them, the one past its
    // age and the one not ready go to none.
    let start = std::sync::Barrier::new(4);
    let claimed: Vec<Option<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|n| {
                let (path, start, as_sandbox) = (&path, &start, &as_sandbox);
                s.spawn(move || {
                    let store = Store::open(path).unwrap();
                    start.wait();
                    store
                        .claim_pool_member("py", 1_500, as_sandbox(&format!("t{n}")))
                        .unwrap()
                        .map(|(member, made)| {
                            assert_eq!(made.made_as.as_deref(), Some(member.name.as_str()));
                            assert_eq!(made.boot_token, Some(member.boot_token));
                            member.name
                        })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let taken: Vec<&String> = claimed.iter().flatten().collect();
    assert_eq!(taken, [&"pool-py-a".to_string()], "{claimed:?}");
    let made = store.sandboxes().unwrap();
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].resource_name(), "pool-py-a");
    assert_eq!(made[0].start_token(), "boot-of-pool-py-a");
    let left: Vec<String> = store
        .pool_members(Some("py"))
        .unwrap()
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(left, ["pool-py-old", "pool-py-b"]);
    // A name taken already: nothing is claimed, the member stays.
    store
        .set_pool_member_ready("pool-py-b", "c-b", None, None)
        .unwrap();
    let name = made[0].name.clone();
    assert!(store.claim_pool_member("py", 0, as_sandbox(&name)).is_err());
    assert_eq!(store.pool_members(Some("py")).unwrap().len(), 2);
    assert!(store.remove_pool_member("pool-py-old").unwrap());
    assert!(!store.remove_pool_member("pool-py-old").unwrap());
}
