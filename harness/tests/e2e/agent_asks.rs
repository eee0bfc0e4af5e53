//! A sub-agent's question reaches the person through its parent's thread: the parent pauses
//! with it, the person answers there once, and the answer goes to the sub-agent that asked
//! (never into the parent's conversation); two questions are put one at a time; the
//! sub-agent's own thread refuses a reply of its own (in the terminal and over HTTP); on
//! the page the question is answered in the parent's dialog.

use super::agents::agent_of;
use super::*;

const PORT: &str = "Port 8080, please.";
const NAME: &str = "Name it cove-demo.";

/// The model: the parent splits the work in three; sub-agents 1 and 2 each ask a question
/// and complete once their own answer is in their conversation; sub-agent 3 just works;
/// the parent completes saying whether every report came back, its conversation free of
/// the answers.
fn script_questions(llm: &ScriptedLlm) {
    for _ in 0..12 {
        llm.push_fn(|request| {
            let text = request.all_text();
            match agent_of(&text) {
                0 if !text.contains("Agent 1 (thread") => {
                    let agents: Vec<Value> = (1..=3)
                        .map(|n| json!({"task": format!("[[agent {n}]] Set up part {n}.")}))
                        .collect();
                    Turn::text("").call("spawn_agents", json!({ "agents": agents }))
                }
                0 => {
                    let all = (1..=3).all(|n| text.contains(&format!("part {n} set up")));
                    let clean = !text.contains(PORT) && !text.contains(NAME);
                    Turn::text("").call(
                        "complete",
                        json!({"text": format!("all reported: {all}; answers kept apart: {clean}")}),
                    )
                }
                3 => Turn::text("").call("complete", json!({"text": "part 3 set up"})),
                n => {
                    let (mine, theirs, question) = if n == 1 {
                        (PORT, NAME, "Which port should the server listen on?")
                    } else {
                        (NAME, PORT, "What should the service be called?")
                    };
                    if text.contains(theirs) {
                        Turn::text("").call("complete", json!({"text": "GOT ANOTHER'S ANSWER"}))
                    } else if text.contains(mine) {
                        Turn::text("")
                            .call("complete", json!({"text": format!("part {n} set up")}))
                    } else {
                        Turn::text("").call("ask", json!({"text": question}))
                    }
                }
            }
        });
    }
}

fn of_type<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test]
async fn a_sub_agents_question_is_put_through_its_parent_and_answered_once() {
    for (wire, mode) in [(Wire::OpenAi, "native"), (Wire::Anthropic, "xml")] {
        let cove = Cove::new(wire).await;
        script_questions(&cove.llm);
        let out = cove.start_task("Set up three parts.", mode).await;
        assert_eq!(
            out.status.code(),
            Some(3),
            "{wire:?}: the parent pauses on the question: {}",
            explain(&out)
        );
        let seen = events(&out);
        let parent = thread_of(&seen);
        let asks = of_type(&seen, "ask");
        assert_eq!(asks.len(), 1, "{wire:?}: one question at a time");
        assert_eq!(
            asks[0]["text"],
            "Sub-agent 1 ([[agent 1]] Set up part 1.) asks: Which port should the server listen on?"
        );
        let finished = of_type(&seen, "agent_finished");
        let status: Vec<(u64, &str)> = finished
            .iter()
            .map(|e| (e["agent"].as_u64().unwrap(), e["status"].as_str().unwrap()))
            .collect();
        let mut sorted = status.clone();
        sorted.sort();
        assert_eq!(sorted, [(1, "asks"), (2, "asks"), (3, "completed")]);
        // The question showed as the sub-agent asked it, before the others had ended.
        assert!(
            of_type(&seen, "agent_progress")
                .iter()
                .any(|e| e["doing"] == "asks: Which port should the server listen on?"),
            "{:?}",
            kinds(&seen)
        );
        let spawned = of_type(&seen, "agent_spawned");
        let first = spawned[0]["thread"].as_str().unwrap().to_string();

        // The parent's thread waits for the answer; the sub-agent's own refuses one.
        let threads = events(&cove.run(&["--json", "threads"]).await);
        assert_eq!(threads[0]["waiting_for"], "answer", "{threads:?}");
        let calls = cove.llm.received().len();
        let refused = cove.run(&["reply", &first, PORT]).await;
        assert_eq!(refused.status.code(), Some(3), "{}", explain(&refused));
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains(&format!("sub-agent of thread {parent}")),
            "{said}"
        );
        assert_eq!(
            cove.llm.received().len(),
            calls,
            "the refused reply ran nothing"
        );

        // The first answer goes to sub-agent 1; then sub-agent 2's question is put.
        let out = cove.run(&["--json", "reply", &parent, PORT]).await;
        assert_eq!(out.status.code(), Some(3), "{wire:?}: {}", explain(&out));
        let seen = events(&out);
        let asks = of_type(&seen, "ask");
        assert_eq!(
            asks.iter()
                .map(|e| e["text"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["Sub-agent 2 ([[agent 2]] Set up part 2.) asks: What should the service be called?"]
        );
        assert!(
            of_type(&seen, "user_message")
                .iter()
                .any(|e| e["text"] == PORT)
        );
        let finished = of_type(&seen, "agent_finished");
        assert!(
            finished
                .iter()
                .any(|e| e["agent"] == 1 && e["status"] == "completed"),
            "{finished:?}"
        );

        // The second answer goes to sub-agent 2, and the parent reads all three reports.
        let out = cove.run(&["--json", "reply", &parent, NAME]).await;
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", explain(&out));
        let seen = events(&out);
        let complete = of_type(&seen, "complete");
        assert_eq!(
            complete[0]["text"],
            "all reported: true; answers kept apart: true",
            "{wire:?}: {:?}",
            kinds(&seen)
        );

        // Each sub-agent heard its own answer only, and each question was asked once.
        let received = cove.llm.received();
        for (n, mine) in [(1, PORT), (2, NAME)] {
            let heard = received
                .iter()
                .filter(|r| agent_of(&r.all_text()) == n && r.all_text().contains(mine))
                .count();
            assert!(heard >= 1, "{wire:?}: sub-agent {n} never got its answer");
        }
        let asked = |n: u32| {
            received
                .iter()
                .filter(|r| agent_of(&r.all_text()) == n)
                .filter(|r| !r.all_text().contains(PORT) && !r.all_text().contains(NAME))
                .count()
        };
        assert_eq!(
            (asked(1), asked(2), asked(3)),
            (1, 1, 1),
            "{wire:?}: a sub-agent waiting for its answer was run again"
        );
        let threads = events(&cove.run(&["--json", "threads"]).await);
        assert!(
            threads.iter().all(|t| t["status"] == "completed"),
            "{threads:?}"
        );
        assert!(
            threads.iter().all(|t| t["waiting_for"].is_null()),
            "{threads:?}"
        );
    }
}

#[tokio::test]
async fn a_sub_agents_question_is_answered_in_the_parents_dialog_on_the_page() {
    use super::page::{open_page, picture, text_of, wait};
    use super::serve::Server;

    let cove = Cove::new(Wire::OpenAi).await;
    script_questions(&cove.llm);
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    let parent = server.create(json!({"task": "Set up three parts."})).await;
    wait(
        &mut tab,
        "document.querySelectorAll('#threads button').length === 4",
    )
    .await;
    tab.click("#threads button").await.unwrap();
    // The parent's dialog puts sub-agent 1's question; the person types the answer there.
    wait(
        &mut tab,
        "document.getElementById('dialog').open && document.getElementById('dialog-body').textContent.includes('Sub-agent 1')",
    )
    .await;
    assert_eq!(text_of(&mut tab, "#dialog-title").await, "A sub-agent asks");
    // In the list, the sub-agents that asked point to their parent, not to themselves.
    let badges = tab
        .eval("Array.from(document.querySelectorAll('#threads li.child .status')).map(b => b.textContent)")
        .await
        .unwrap();
    assert_eq!(
        badges,
        json!(["asks through its parent", "asks through its parent", "done"])
    );
    let body = text_of(&mut tab, "#dialog-body").await;
    assert!(
        body.contains("Which port should the server listen on?"),
        "{body}"
    );
    picture(&mut tab, "sub-agent-asks.png").await;
    // Its own thread does not take a reply while its parent runs it: 409 sub_agent, and
    // the dialog stays open for the answer.
    let child = events_of(&server, &parent)
        .await
        .iter()
        .find(|e| e["type"] == "agent_spawned" && e["agent"] == 1)
        .and_then(|e| e["thread"].as_str())
        .unwrap()
        .to_string();
    let (status, body) = server
        .post(&format!("/v1/threads/{child}/reply"), json!({"text": PORT}))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("sub_agent")),
        "{body}"
    );
    tab.type_text(PORT).await.unwrap();
    tab.click("#dialog-actions .primary").await.unwrap();
    // Then sub-agent 2's.
    wait(
        &mut tab,
        "document.getElementById('dialog').open && document.getElementById('dialog-body').textContent.includes('Sub-agent 2')",
    )
    .await;
    tab.type_text(NAME).await.unwrap();
    tab.click("#dialog-actions .primary").await.unwrap();
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('all reported: true; answers kept apart: true')",
    )
    .await;
    // The answers show in the parent's transcript, where the person gave them.
    let said = text_of(&mut tab, ".msg.user").await;
    assert!(said.contains(PORT) && said.contains(NAME), "{said}");
    // The whole family is done, the questions answered.
    wait(
        &mut tab,
        "Array.from(document.querySelectorAll('#threads .status')).every(b => b.textContent === 'done') && Array.from(document.querySelectorAll('.attention button.primary')).every(b => b.disabled)",
    )
    .await;
    picture(&mut tab, "sub-agent-answered.png").await;
    tab.close().await;
    server.kill().await;
}

/// The events a thread's runs stored, from its messages.
async fn events_of(server: &super::serve::Server, thread: &str) -> Vec<Value> {
    let (status, body) = server.get(&format!("/v1/threads/{thread}/messages")).await;
    assert_eq!(status, 200, "{body}");
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == "status")
        .map(|m| m["content"].clone())
        .collect()
}

#[tokio::test]
async fn a_question_asked_before_the_controller_was_killed_is_put_on_resume() {
    let daemon = cove_harness::DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let cove = Cove::new(Wire::Anthropic).await;
    for _ in 0..8 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            match agent_of(&text) {
                0 if !text.contains("Agent 1 (thread") => {
                    let agents: Vec<Value> = (1..=2)
                        .map(|n| json!({"task": format!("[[agent {n}]] Part {n}.")}))
                        .collect();
                    Turn::text("").call("spawn_agents", json!({ "agents": agents }))
                }
                0 => Turn::text("").call(
                    "complete",
                    json!({"text": format!("both: {}", text.contains("agent 1 answered") && text.contains("agent 2 taken up"))}),
                ),
                1 if text.contains(PORT) => {
                    Turn::text("").call("complete", json!({"text": "agent 1 answered"}))
                }
                1 => Turn::text("").call("ask", json!({"text": "Which port?"})),
                _ if text.contains("interrupted") => {
                    Turn::text("").call("complete", json!({"text": "agent 2 taken up"}))
                }
                _ => Turn::text("").call(
                    "execute_command",
                    json!({"command": "touch started-2; sleep 30", "session_name": "agent-2", "timeout": 60}),
                ),
            }
        });
    }
    let mut child = cove
        .on_daemon(
            &daemon,
            &[
                "--json",
                "run",
                "Two parts.",
                "--model",
                "anthropic/scripted",
                "--no-prompt",
            ],
        )
        .spawn()
        .unwrap();
    let mut reader = EventReader::new(&mut child);
    // Until sub-agent 1 has asked and sub-agent 2's command runs (a call seen starting may
    // not be stored yet; one running is).
    reader
        .until_seen(|seen| {
            seen.iter()
                .any(|e| e["type"] == "agent_finished" && e["agent"] == 1)
        })
        .await;
    super::agents::until_files(&daemon, &["started-2"]).await;
    let asked = reader
        .seen
        .iter()
        .find(|e| e["type"] == "agent_finished")
        .cloned();
    let asked = asked.unwrap();
    assert_eq!(asked["status"], "asks", "{asked}");
    let parent = asked["thread_id"].as_str().unwrap().to_string();
    // Killed outright while sub-agent 2 works and sub-agent 1 waits for its answer.
    child.start_kill().unwrap();
    let _ = child.wait().await;
    let calls = |n: u32| {
        cove.llm
            .received()
            .iter()
            .filter(|r| agent_of(&r.all_text()) == n)
            .count()
    };
    let before = calls(1);

    // Resumed: sub-agent 2 is taken up, sub-agent 1's question is put (it does not run).
    let out = cove
        .on_daemon(&daemon, &["--json", "resume", &parent, "--no-prompt"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", explain(&out));
    let seen = events(&out);
    let asks = of_type(&seen, "ask");
    assert_eq!(
        asks.iter()
            .map(|e| e["text"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["Sub-agent 1 ([[agent 1]] Part 1.) asks: Which port?"],
        "{:?}",
        kinds(&seen)
    );
    assert_eq!(
        calls(1),
        before,
        "the sub-agent waiting for its answer ran again"
    );

    let out = cove
        .on_daemon(&daemon, &["--json", "reply", &parent, PORT])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let complete = of_type(&events(&out), "complete")[0]["text"].clone();
    assert_eq!(complete, "both: true");
}

#[tokio::test]
async fn a_forked_sub_agent_that_asks_goes_on_in_its_copy_after_its_sandbox_restarts() {
    use super::agents::reported_threads;
    for (wire, mode) in [(Wire::OpenAi, "xml"), (Wire::Anthropic, "native")] {
        let cove = Cove::new(wire).await;
        for _ in 0..8 {
            cove.llm.push_fn(|request| {
                let text = request.all_text();
                if agent_of(&text) == 1 {
                    return if text.contains(PORT) {
                        Turn::text("").call("complete", json!({"text": "agent 1 wrote the plan"}))
                    } else if text.contains("exit code 0") {
                        Turn::text("").call("ask", json!({"text": "Which port?"}))
                    } else {
                        Turn::text("").call(
                            "execute_command",
                            json!({"command": "echo 'draft before asking' > plan.txt"}),
                        )
                    };
                }
                let threads = reported_threads(&text);
                if threads.is_empty() {
                    Turn::text("").call(
                        "spawn_agents",
                        json!({"agents": [{"task": "[[agent 1]] Write the plan.", "isolation": "fork"}]}),
                    )
                } else if !text.contains("Changes of sub-agent ") {
                    Turn::text("").call("apply_changes", json!({"agent": threads[0]}))
                } else {
                    Turn::text("").call("complete", json!({"text": "merged"}))
                }
            });
        }
        // A local sandbox: it stops when `cove` ends, paused on the question.
        let out = cove.start_task("Plan it.", mode).await;
        assert_eq!(out.status.code(), Some(3), "{wire:?}: {}", explain(&out));
        let parent = thread_of(&events(&out));
        assert!(
            !cove.workspace.join("plan.txt").exists(),
            "the fork's file leaked"
        );
        let out = cove.run(&["--json", "reply", &parent, PORT]).await;
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", explain(&out));
        let seen = events(&out);
        assert_eq!(
            of_type(&seen, "complete")[0]["text"],
            "merged",
            "{:?}",
            kinds(&seen)
        );
        // The file it wrote before asking came back from its copy, kept across the restart.
        assert_eq!(
            std::fs::read_to_string(cove.workspace.join("plan.txt")).unwrap(),
            "draft before asking\n",
            "{wire:?}"
        );
    }
}
