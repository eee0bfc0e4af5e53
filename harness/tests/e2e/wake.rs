//! Work that outlives a turn: the agent starts a build in the background, watches its
//! output and its exit, and ends its turn with `wait_for_events`; the run waits (recorded,
//! the thread `waiting`) and wakes with the matched line and the exit code. Killed during
//! the wait and resumed after the build ended, it gets what fired once. A port watch on a
//! server the agent starts, and a timer, on the other wire.

use cove_harness::DaemonBuilder;

use super::*;

/// A build that takes a while, says how it went and fails with 3.
fn build_script(secs: f32) -> String {
    format!("sleep {secs}\necho compiling\necho 'BUILD OK'\necho done\nexit 3\n")
}

const VERDICT: &str = "line 2: BUILD OK";
const EXIT: &str = "exited with code 3";

/// Starts the build, watches it, waits; then completes once the conversation holds both the
/// verdict and the exit code (waiting again if they came apart), saying how many times each
/// reached the model.
fn script_build(llm: &ScriptedLlm) {
    llm.push(Turn::text("Starting the build.").call(
        "execute_command",
        json!({"command": "bash build.sh", "session_name": "build", "background": true}),
    ));
    llm.push(
        Turn::text("")
            .call(
                "watch",
                json!({"on": "output", "session_name": "build", "pattern": "BUILD (OK|FAILED)", "label": "the build's verdict"}),
            )
            .call(
                "watch",
                json!({"on": "exit", "session_name": "build", "label": "the build to finish"}),
            ),
    );
    llm.push(Turn::text("Waiting for the build.").call("wait_for_events", json!({"timeout": 120})));
    for _ in 0..3 {
        llm.push_fn(|request| {
            let text = request.all_text();
            if text.contains(VERDICT) && text.contains(EXIT) {
                let verdict = format!(
                    "verdict seen {} times, exit seen {} times",
                    text.matches(VERDICT).count(),
                    text.matches(EXIT).count()
                );
                Turn::text("").call("complete", json!({ "text": verdict }))
            } else {
                Turn::text("").call("wait_for_events", json!({"timeout": 120}))
            }
        });
    }
}

fn completed_text(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "complete")
        .and_then(|e| e["text"].as_str())
        .unwrap_or_else(|| panic!("no complete event: {:?}", kinds(events)))
        .to_string()
}

#[tokio::test]
async fn a_background_build_wakes_the_run_with_its_verdict_and_exit_code() {
    for (wire, mode) in [(Wire::OpenAi, "native"), (Wire::Anthropic, "xml")] {
        let cove = Cove::new(wire).await;
        std::fs::write(cove.workspace.join("build.sh"), build_script(1.5)).unwrap();
        script_build(&cove.llm);
        let out = cove.start_task("Build the project.", mode).await;
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let seen = events(&out);
        let waiting = seen
            .iter()
            .find(|e| e["type"] == "waiting_for_events")
            .unwrap_or_else(|| panic!("{wire:?}: no wait: {:?}", kinds(&seen)));
        // The two watches were set by calls that ran side by side: either order.
        let waits_for = waiting["waits_for"].as_str().unwrap();
        assert!(
            waits_for.contains("the build's verdict") && waits_for.contains("the build to finish"),
            "{waiting}"
        );
        assert!(waiting["until"].as_i64() > waiting["since"].as_i64());
        let woke = seen.iter().find(|e| e["type"] == "wait_ended").unwrap();
        assert_eq!(woke["timed_out"], false, "{woke}");
        assert_eq!(
            completed_text(&seen),
            "verdict seen 1 times, exit seen 1 times",
            "{wire:?}"
        );
        // The wait's call has its result, and every call has exactly one (the model
        // server checks that pairing on every request).
        let last = cove.llm.received().last().unwrap().all_text();
        assert!(
            last.contains("command 1 of session build (`bash build.sh`)"),
            "{last}"
        );
    }
}

#[tokio::test]
async fn a_controller_killed_while_it_waits_gets_what_fired_meanwhile_once_on_resume() {
    for (wire, mode) in [(Wire::Anthropic, "native"), (Wire::OpenAi, "xml")] {
        let daemon = DaemonBuilder::new(workspace_binary("coved").unwrap())
            .spawn()
            .await
            .unwrap();
        std::fs::write(daemon.path("build.sh"), build_script(3.0)).unwrap();
        let cove = Cove::new(wire).await;
        script_build(&cove.llm);
        let mut child = cove
            .on_daemon(
                &daemon,
                &[
                    "--json",
                    "run",
                    "Build the project.",
                    "--model",
                    cove.model(),
                    "--tool-calls",
                    mode,
                    "--no-prompt",
                ],
            )
            .spawn()
            .unwrap();
        let mut reader = EventReader::new(&mut child);
        let waiting = reader.until("waiting_for_events").await;
        let thread = waiting["thread_id"].as_str().unwrap().to_string();
        let threads = events(&cove.run(&["--json", "threads"]).await);
        assert_eq!(threads[0]["status"], "waiting", "{threads:?}");
        // Killed outright (SIGKILL): nothing of it gets to tidy up.
        child.start_kill().unwrap();
        let _ = child.wait().await;
        // The build goes on in the sandbox and ends; both watches fire with no one waiting.
        let mut fired = 0;
        for _ in 0..20 {
            fired = daemon.client.events(0, 5).await.unwrap().events.len();
            if fired == 2 {
                break;
            }
        }
        assert_eq!(fired, 2, "{wire:?}: both watches fired in the sandbox");
        let requests_before = cove.llm.request_count();
        let out = cove
            .on_daemon(&daemon, &["--json", "resume", &thread])
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let seen = events(&out);
        assert_eq!(
            completed_text(&seen),
            "verdict seen 1 times, exit seen 1 times",
            "{wire:?}: {:?}",
            kinds(&seen)
        );
        // The wait was taken up, not answered as interrupted; the model was asked once.
        assert_eq!(cove.llm.request_count(), requests_before + 1);
        let last = cove.llm.received().last().unwrap().all_text();
        assert!(!last.contains("interrupted"), "{last}");
        assert!(
            kinds(&seen).contains(&"wait_ended".to_string()),
            "{:?}",
            kinds(&seen)
        );
    }
}

#[tokio::test]
async fn a_port_watch_and_a_timer_wake_the_run() {
    let port = cove_harness::preview::free_port();
    let cove = Cove::new(Wire::Anthropic).await;
    let llm = &cove.llm;
    llm.push(Turn::text("").call(
        "watch",
        json!({"on": "port", "port": port, "label": "the server"}),
    ));
    llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": format!("python3 -m http.server {port} --bind 127.0.0.1"), "session_name": "server", "background": true}),
    ));
    llm.push(Turn::text("").call("wait_for_events", json!({"timeout": 60})));
    llm.push_fn(move |request| {
        let last = request.last_message_text();
        if last.contains(&format!("port {port} is listening")) {
            Turn::text("").call(
                "watch",
                json!({"on": "after", "seconds": 1, "label": "a pause"}),
            )
        } else {
            Turn::text("").call("complete", json!({"text": format!("NO PORT: {last}")}))
        }
    });
    llm.push_fn(|request| {
        // The pending watch is in the call's context until it fires.
        let note = request.all_text().contains("Watches pending");
        Turn::text("").call(
            "wait_for_events",
            json!({"timeout": if note { 30 } else { 1 }}),
        )
    });
    llm.push_fn(|request| {
        let last = request.last_message_text();
        let verdict = if last.contains("(a pause): 1 s have passed") {
            "ok".to_string()
        } else {
            format!("NO TIMER: {last}")
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let out = cove.start_task("Serve the folder.", "native").await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    assert_eq!(completed_text(&events(&out)), "ok");
}

#[tokio::test]
async fn the_page_shows_what_a_served_thread_waits_for_and_it_wakes_by_itself() {
    use super::page::{open_page, picture, text_of, wait};
    use super::serve::Server;

    let cove = Cove::new(Wire::OpenAi).await;
    let llm = &cove.llm;
    llm.push(Turn::text("Running the tests.").call(
        "execute_command",
        json!({"command": "sleep 4; echo 'TESTS PASSED'", "session_name": "tests", "background": true}),
    ));
    llm.push(Turn::text("").call(
        "watch",
        json!({"on": "output", "session_name": "tests", "pattern": "TESTS (PASSED|FAILED)", "label": "tests to finish"}),
    ));
    llm.push(Turn::text("").call("wait_for_events", json!({"timeout": 120})));
    llm.push_fn(|request| {
        let text = if request.last_message_text().contains("TESTS PASSED") {
            "The tests passed."
        } else {
            "NOT WOKEN BY THE TESTS"
        };
        Turn::text("").call("complete", json!({ "text": text }))
    });
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    let thread = server.create(json!({"task": "Run the tests."})).await;
    wait(
        &mut tab,
        "document.querySelectorAll('#threads button').length === 1",
    )
    .await;
    tab.click("#threads button").await.unwrap();
    // While it waits: what for, and for how long, beside a status that does not ask the
    // person for anything.
    wait(
        &mut tab,
        "!document.getElementById('thread-waiting-for').hidden",
    )
    .await;
    let line = text_of(&mut tab, "#thread-waiting-for").await;
    assert!(
        line.starts_with("waiting for: tests to finish (") && line.ends_with(" s)"),
        "{line}"
    );
    assert_eq!(text_of(&mut tab, "#thread-status").await, "waiting");
    assert!(
        !tab.eval("document.getElementById('dialog').open")
            .await
            .unwrap()
            .as_bool()
            .unwrap()
    );
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    assert_eq!(view["waiting_for"]["summary"], "tests to finish", "{view}");
    assert_eq!(view["status"], "waiting");
    picture(&mut tab, "waiting-for-events.png").await;
    // No one does anything: the tests end and the thread goes on by itself.
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('The tests passed.')",
    )
    .await;
    wait(
        &mut tab,
        "document.getElementById('thread-waiting-for').hidden",
    )
    .await;
    let notes = text_of(&mut tab, ".note").await;
    assert!(
        notes.contains("Waiting for: tests to finish.") && notes.contains("Woke: Watch"),
        "{notes}"
    );
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn max_wait_bounds_a_wait_whatever_the_model_asks() {
    let cove = Cove::new(Wire::OpenAi).await;
    let llm = &cove.llm;
    llm.push(Turn::text("").call(
        "watch",
        json!({"on": "after", "seconds": 600, "label": "a long pause"}),
    ));
    llm.push(Turn::text("").call("wait_for_events", json!({"timeout": 600})));
    llm.push_fn(|request| {
        // (The last message is the note of the watch still pending.)
        let text = request.all_text();
        let said = if text.contains("Nothing fired within 1 s.") && text.contains("Still pending") {
            "bounded"
        } else {
            "NOT BOUNDED"
        };
        Turn::text("").call("complete", json!({ "text": said }))
    });
    let started = std::time::Instant::now();
    let out = cove
        .start_task_with("Wait a long time.", "native", &["--max-wait", "1"], &[])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let seen = events(&out);
    assert_eq!(completed_text(&seen), "bounded");
    let ended = seen.iter().find(|e| e["type"] == "wait_ended").unwrap();
    assert_eq!(ended["timed_out"], true);
    assert!(started.elapsed() < Duration::from_secs(60));
}
