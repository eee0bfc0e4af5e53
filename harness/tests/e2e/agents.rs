//! Sub-agents (`spawn_agents`) in the shared workspace: three work at once (their commands
//! overlap in time, measured in the sandbox), each a thread of its own listed under its
//! parent, and the parent reads what each did; a cost limit stops the whole family;
//! stopping the parent stops its sub-agents.

use super::*;

/// The sub-agent number a request is for (`[[agent N]]` opening the task of its brief), or
/// 0 for the parent (whose own calls name the tasks too).
pub(super) fn agent_of(text: &str) -> u32 {
    text.split("Your task:\n[[agent ")
        .nth(1)
        .and_then(|rest| rest.split("]]").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// The model: the parent spawns three sub-agents; each writes when it starts and ends a
/// second-long command, then completes; the parent then completes with what it read.
fn script_family(llm: &ScriptedLlm, tasks: usize) {
    for _ in 0..(tasks * 2 + 2) {
        llm.push_fn(move |request| {
            let text = request.all_text();
            let n = agent_of(&text);
            if n == 0 {
                if !text.contains("Agent 1 (thread") {
                    let agents: Vec<Value> = (1..=tasks)
                        .map(|n| json!({"task": format!("[[agent {n}]] Time a second of work.")}))
                        .collect();
                    return Turn::text("Splitting the work.")
                        .call("spawn_agents", json!({ "agents": agents }));
                }
                let done = (1..=tasks)
                    .filter(|n| {
                        text.contains(&format!("Agent {n} (thread"))
                            && text.contains(&format!("agent {n} done"))
                    })
                    .count();
                return Turn::text("").call(
                    "complete",
                    json!({"text": format!("{done} agents reported")}),
                );
            }
            if text.contains("exit code 0") {
                Turn::text("").call("complete", json!({"text": format!("agent {n} done")}))
            } else {
                Turn::text("").call(
                    "execute_command",
                    json!({
                        "command": format!("date +%s%N > start-{n}; sleep 1; date +%s%N > end-{n}"),
                        "session_name": format!("agent-{n}"),
                    }),
                )
            }
        });
    }
}

/// Whether the `n` sub-agents' timed work overlapped: each started (`start-N`, written in
/// the sandbox) before any ended (`end-N`).
fn all_at_once(ws: &std::path::Path, n: u32) -> bool {
    let last_start = (1..=n).map(|i| stamp(ws, &format!("start-{i}"))).max();
    let first_end = (1..=n).map(|i| stamp(ws, &format!("end-{i}"))).min();
    last_start < first_end
}

fn stamp(ws: &std::path::Path, name: &str) -> u128 {
    std::fs::read_to_string(ws.join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn three_sub_agents_work_at_once_in_threads_of_their_own() {
    for (wire, mode) in [(Wire::OpenAi, "native"), (Wire::Anthropic, "xml")] {
        let cove = Cove::new(wire).await;
        script_family(&cove.llm, 3);
        let out = cove.start_task("Do three things.", mode).await;
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", explain(&out));
        let seen = events(&out);
        let spawned: Vec<&Value> = seen
            .iter()
            .filter(|e| e["type"] == "agent_spawned")
            .collect();
        let finished: Vec<&Value> = seen
            .iter()
            .filter(|e| e["type"] == "agent_finished")
            .collect();
        assert_eq!(
            (spawned.len(), finished.len()),
            (3, 3),
            "{:?}",
            kinds(&seen)
        );
        assert!(
            finished
                .iter()
                .all(|e| e["status"] == "completed" && e["tokens"].as_u64() > Some(0)),
            "{finished:?}"
        );
        assert!(seen.iter().any(|e| e["type"] == "agent_progress"
            && e["doing"].as_str().unwrap().starts_with("execute_command")));
        let complete = seen.iter().find(|e| e["type"] == "complete").unwrap();
        assert_eq!(complete["text"], "3 agents reported", "{wire:?}");

        // All three ran at once: each started before any had ended.
        let ws = &cove.workspace;
        assert!(
            all_at_once(ws, 3),
            "{wire:?}: the sub-agents' seconds of work did not overlap"
        );

        // Each is a thread of its own, listed under its parent, its transcript readable.
        let parent = thread_of(&seen);
        let listed = events(&cove.run(&["--json", "threads"]).await);
        assert_eq!(listed.len(), 4);
        assert_eq!(
            listed[0]["id"],
            parent.as_str(),
            "the parent first: {listed:?}"
        );
        for row in &listed[1..] {
            assert_eq!(row["parent_id"], parent.as_str(), "{row}");
        }
        let text = String::from_utf8_lossy(&cove.run(&["threads"]).await.stdout).into_owned();
        assert_eq!(text.matches("└ ").count(), 3, "{text}");
        let child = spawned[1]["thread"].as_str().unwrap();
        let shown = cove.run(&["show", child]).await;
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.contains("[[agent 2]] Time a second of work.") && shown.contains("agent 2 done"),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn a_cost_limit_stops_the_whole_family() {
    let cove = Cove::new(Wire::OpenAi).await;
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    // $100 per million tokens: a call of some 5,000 prompt tokens costs about half a dollar.
    std::fs::write(
        config.join("cove.toml"),
        "[prices.scripted]\ninput = 100.0\noutput = 100.0\n",
    )
    .unwrap();
    // Sub-agents that never finish on their own: each call runs another command.
    for _ in 0..40 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            if agent_of(&text) == 0 {
                let agents: Vec<Value> = (1..=2)
                    .map(|n| json!({"task": format!("[[agent {n}]] Keep counting.")}))
                    .collect();
                Turn::text("").call("spawn_agents", json!({ "agents": agents }))
            } else {
                Turn::text("").call("execute_command", json!({"command": "echo counting"}))
            }
        });
    }
    let out = cove
        .start_task_with(
            "Count forever.",
            "native",
            &["--max-cost", "5", "--max-tokens", "1000"],
            &[],
        )
        .await;
    let seen = events(&out);
    assert_eq!(
        out.status.code(),
        Some(4),
        "the parent stops: {}",
        explain(&out)
    );
    let finished: Vec<&Value> = seen
        .iter()
        .filter(|e| e["type"] == "agent_finished")
        .collect();
    assert_eq!(finished.len(), 2, "{:?}", kinds(&seen));
    assert!(
        finished.iter().all(|e| e["status"] == "stopped"),
        "{finished:?}"
    );
    // What the family spent stayed within the limit.
    let threads = events(&cove.run(&["--json", "threads"]).await);
    let spent: f64 = threads
        .iter()
        .flat_map(|t| t["runs"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["cost"].as_f64())
        .sum();
    assert!(
        spent > 1.0 && spent <= 5.0,
        "the family spent ${spent}: {threads:?}"
    );
}

#[tokio::test]
async fn stopping_the_parent_stops_its_sub_agents() {
    let cove = Cove::new(Wire::Anthropic).await;
    for _ in 0..4 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            if agent_of(&text) == 0 {
                let agents: Vec<Value> = (1..=2)
                    .map(|n| json!({"task": format!("[[agent {n}]] Wait a long time.")}))
                    .collect();
                Turn::text("").call("spawn_agents", json!({ "agents": agents }))
            } else {
                Turn::text("").call(
                    "execute_command",
                    json!({"command": "sleep 60", "timeout": 120}),
                )
            }
        });
    }
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut child = cove
        .command(&[
            "--json",
            "run",
            "Wait.",
            "--model",
            "anthropic/scripted",
            "--workspace",
            &ws,
            "--no-prompt",
        ])
        .spawn()
        .unwrap();
    let mut reader = EventReader::new(&mut child);
    reader.until("agent_progress").await;
    reader.until("agent_progress").await;
    // Ctrl-C, as a person stops a run.
    let pid = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("cove stopped")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let threads = events(&cove.run(&["--json", "threads"]).await);
    assert_eq!(threads.len(), 3, "{threads:?}");
    for thread in &threads {
        assert_eq!(thread["status"], "stopped", "{thread}");
    }
}

#[tokio::test]
async fn the_page_lists_sub_agents_under_their_parent_and_opens_their_transcripts() {
    use super::page::{open_page, picture, text_of, wait};
    use super::serve::Server;

    let cove = Cove::new(Wire::OpenAi).await;
    script_family(&cove.llm, 2);
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    server.create(json!({"task": "Do two things."})).await;
    wait(
        &mut tab,
        "document.querySelectorAll('#threads button').length === 3",
    )
    .await;
    tab.click("#threads button").await.unwrap();
    // The parent's transcript names each sub-agent and how it ended.
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('2 agents reported')",
    )
    .await;
    wait(
        &mut tab,
        "Array.from(document.querySelectorAll('.note.agent')).filter(n => n.textContent.includes('completed')).length === 2",
    )
    .await;
    let notes = text_of(&mut tab, ".note.agent").await;
    assert!(
        notes.contains("Sub-agent 1: [[agent 1]] Time a second of work.")
            && notes.contains("agent 1 done"),
        "{notes}"
    );
    // The list: the parent first, its two sub-agents under it.
    let order = tab
        .eval("Array.from(document.querySelectorAll('#threads li')).map(li => (li.classList.contains('child') ? 'child:' : '') + li.querySelector('.title').textContent)")
        .await
        .unwrap();
    assert_eq!(
        order,
        json!([
            "Do two things.",
            "child:[[agent 1]] Time a second of work.",
            "child:[[agent 2]] Time a second of work."
        ]),
    );
    picture(&mut tab, "sub-agents.png").await;
    // A person opens the second sub-agent's thread: its own transcript.
    tab.click(".note.agent:nth-of-type(2) button, .note.agent ~ .note.agent button")
        .await
        .unwrap();
    wait(
        &mut tab,
        "document.getElementById('thread-title').textContent.includes('[[agent 2]]')",
    )
    .await;
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('agent 2 done')",
    )
    .await;
    let asked = text_of(&mut tab, ".msg.user").await;
    assert!(asked.contains("You are sub-agent 2 of 2"), "{asked}");
    tab.close().await;
    server.kill().await;
}

/// The thread ids of the sub-agents a request's conversation reports, in their order.
pub(super) fn reported_threads(text: &str) -> Vec<String> {
    (1..=3)
        .filter_map(|n| {
            let at =
                text.find(&format!("Agent {n} (thread "))? + format!("Agent {n} (thread ").len();
            Some(text[at..].split(')').next()?.to_string())
        })
        .collect()
}

#[tokio::test]
async fn three_forked_sub_agents_edit_one_file_and_two_of_their_patches_apply() {
    for (wire, mode) in [(Wire::Anthropic, "native"), (Wire::OpenAi, "xml")] {
        let cove = Cove::new(wire).await;
        std::fs::write(
            cove.workspace.join("shared.txt"),
            "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
        )
        .unwrap();
        let edits = ["s/^1$/one/", "s/^9$/nine/", "s/^1$/uno/"];
        for _ in 0..12 {
            cove.llm.push_fn(move |request| {
                let text = request.all_text();
                let n = agent_of(&text);
                if n > 0 {
                    return if text.contains("exit code 0") {
                        Turn::text("").call("complete", json!({"text": format!("agent {n} edited")}))
                    } else {
                        let edit = edits[n as usize - 1];
                        Turn::text("").call(
                            "execute_command",
                            json!({"command": format!("date +%s%N > start-{n}; sleep 1; sed -i '{edit}' shared.txt; date +%s%N > end-{n}")}),
                        )
                    };
                }
                let threads = reported_threads(&text);
                if threads.is_empty() {
                    let agents: Vec<Value> = (1..=3)
                        .map(|n| json!({"task": format!("[[agent {n}]] Edit shared.txt."), "isolation": "fork"}))
                        .collect();
                    return Turn::text("Each in its own copy.").call("spawn_agents", json!({ "agents": agents }));
                }
                // Each apply's result opens with the sub-agent it merged.
                let done = text.matches("Changes of sub-agent ").count();
                if done < 3 {
                    Turn::text("").call("apply_changes", json!({"agent": threads[done]}))
                } else {
                    let told = text.contains("shared.txt: changed here and in the fork in the same lines");
                    Turn::text("").call("complete", json!({"text": if told { "two applied, one conflict" } else { "NOT TOLD" }}))
                }
            });
        }
        let out = cove.start_task("Edit the file three ways.", mode).await;
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", explain(&out));
        let seen = events(&out);
        let complete = seen
            .iter()
            .find(|e| e["type"] == "complete")
            .unwrap_or_else(|| panic!("{wire:?}: {}", explain(&out)));
        assert_eq!(
            complete["text"],
            "two applied, one conflict",
            "{wire:?}: {:?}",
            kinds(&seen)
        );
        let ws = &cove.workspace;
        assert_eq!(
            std::fs::read_to_string(ws.join("shared.txt")).unwrap(),
            "one\n2\n3\n4\n5\n6\n7\n8\nnine\n10\n",
            "{wire:?}: the first two merged, the third left out"
        );
        // They worked at once, each in its copy (their stamps came back with their changes).
        assert!(
            all_at_once(ws, 3),
            "{wire:?}: the forked sub-agents did not overlap"
        );
        // Once the parent completed, no copy is left, the one with conflicts included.
        assert_eq!(
            fork_folders(cove.home.path()),
            Vec::<String>::new(),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn sub_agents_left_working_by_a_killed_controller_are_taken_up_on_resume() {
    let daemon = cove_harness::DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let cove = Cove::new(Wire::OpenAi).await;
    for _ in 0..8 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            let n = agent_of(&text);
            if n > 0 {
                return if text.contains("interrupted") {
                    Turn::text("").call("complete", json!({"text": format!("agent {n} taken up")}))
                } else {
                    Turn::text("").call(
                        "execute_command",
                        json!({"command": format!("touch started-{n}; sleep 30"), "session_name": format!("agent-{n}"), "timeout": 60}),
                    )
                };
            }
            if text.contains("Agent 1 (thread") {
                let once = text.matches("Agent 1 (thread").count() == 1
                    && text.matches("Agent 2 (thread").count() == 1;
                Turn::text("").call("complete", json!({"text": if once { "both reported once" } else { "NOT ONCE" }}))
            } else {
                let agents: Vec<Value> = (1..=2)
                    .map(|n| json!({"task": format!("[[agent {n}]] Work a while.")}))
                    .collect();
                Turn::text("").call("spawn_agents", json!({ "agents": agents }))
            }
        });
    }
    let mut child = cove
        .on_daemon(
            &daemon,
            &[
                "--json",
                "run",
                "Split it.",
                "--model",
                "openai/scripted",
                "--no-prompt",
            ],
        )
        .spawn()
        .unwrap();
    let mut reader = EventReader::new(&mut child);
    let first = reader.until("agent_progress").await;
    let parent = first["thread_id"].as_str().unwrap().to_string();
    // Both commands run (a call seen starting may not be stored yet; one running is).
    until_files(&daemon, &["started-1", "started-2"]).await;
    // Killed outright while both work.
    child.start_kill().unwrap();
    let _ = child.wait().await;
    let out = cove
        .on_daemon(&daemon, &["--json", "resume", &parent])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let seen = events(&out);
    let complete = seen
        .iter()
        .find(|e| e["type"] == "complete")
        .unwrap_or_else(|| panic!("{}", explain(&out)));
    assert_eq!(complete["text"], "both reported once", "{:?}", kinds(&seen));
    let finished: Vec<&Value> = seen
        .iter()
        .filter(|e| e["type"] == "agent_finished")
        .collect();
    assert_eq!(finished.len(), 2, "{:?}", kinds(&seen));
    assert!(
        finished.iter().all(|e| e["status"] == "completed"),
        "{finished:?}"
    );
    let last = cove.llm.received().last().unwrap().all_text();
    assert!(
        last.contains("agent 1 taken up") && last.contains("agent 2 taken up"),
        "{last}"
    );
}

/// The forks' folders under `dir` (coved keeps them beside its checkpoint stores).
pub(super) fn fork_folders(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() || path.is_symlink() {
            continue;
        }
        if path.parent().and_then(|p| p.file_name()) == Some(std::ffi::OsStr::new("forks")) {
            found.push(path.display().to_string());
        } else {
            found.extend(fork_folders(&path));
        }
    }
    found
}

/// Waits (up to a minute) for these files to be in the daemon's workspace.
pub(super) async fn until_files(daemon: &cove_harness::DaemonProcess, names: &[&str]) {
    let started = std::time::Instant::now();
    while !names.iter().all(|n| daemon.path(n).exists()) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{names:?} never appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
