//! A run from the task to its end: tools, the browser, asking, retries, malformed answers, Ctrl-C, a killed controller, and errors a user can act on.

use super::*;

#[tokio::test]
async fn a_task_plans_acts_browses_looks_asks_and_completes() {
    let site = FixtureSite::start().await.unwrap();
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        for mode in ["native", "xml"] {
            let cove = Cove::new(wire).await;
            cove.share_port(site.port());
            std::fs::write(
                cove.workspace.join("pic.png"),
                base64::engine::general_purpose::STANDARD
                    .decode(PNG)
                    .unwrap(),
            )
            .unwrap();
            let llm = &cove.llm;
            llm.push(Turn::text("Planning first.").call(
                "create_file",
                json!({"file_path": "todo.md", "file_contents": "- [ ] greet\n- [ ] click\n"}),
            ));
            llm.push(Turn::text("").call(
                "execute_command",
                json!({"command": "echo hello > out.txt && cat out.txt"}),
            ));
            llm.push(Turn::text("").call(
                "browser_navigate_to",
                json!({"url": site.url("counter.html")}),
            ));
            llm.push_fn(|request| {
                let index = index_in_last_message(&request.last_message_text(), "Increment");
                Turn::text("").call("browser_click_element", json!({"index": index}))
            });
            llm.push(Turn::text("").call("see_image", json!({"file_path": "pic.png"})));
            llm.push(
                Turn::text("One thing to check.")
                    .call("ask", json!({"text": "Which colour do you prefer?"})),
            );

            let out = cove
                .start_task("Greet, click the counter, look at the picture.", mode)
                .await;
            assert_eq!(
                out.status.code(),
                Some(3),
                "the run pauses on ask: {}",
                explain(&out)
            );
            let first = events(&out);
            assert_eq!(
                kinds(&first),
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
                "{wire:?} {mode}: {}",
                explain(&out)
            );
            let seqs: Vec<u64> = first.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
            assert!(
                seqs.windows(2).all(|w| w[1] == w[0] + 1),
                "numbered without gaps"
            );
            assert_eq!(first.last().unwrap()["status"], "paused");
            let thread = thread_of(&first);

            // The workspace and the page hold what the agent did.
            let ws = &cove.workspace;
            assert_eq!(
                std::fs::read_to_string(ws.join("todo.md")).unwrap(),
                "- [ ] greet\n- [ ] click\n"
            );
            assert_eq!(
                std::fs::read_to_string(ws.join("out.txt")).unwrap(),
                "hello\n"
            );
            assert!(
                site.wait_for_report(|r| r["clicks"] == 1).await.is_some(),
                "the click reached the page"
            );
            // The model saw the page state once, then the image once: nothing accumulates.
            let requests = llm.received();
            assert_eq!(requests.len(), 6);
            assert!(requests[3].last_message_text().contains("Increment"));
            assert_eq!(
                requests[5].image_count(),
                1,
                "the see_image picture rides in the next call"
            );
            assert!(
                requests
                    .iter()
                    .all(|r| r.all_text().matches("[The browser as it is now").count() <= 1)
            );
            assert!(requests[2].all_text().contains("exit code 0\nhello"));
            assert_eq!(requests[0].native_tools(), mode == "native");

            // The thread says it waits for an answer, and resuming without one is refused.
            let threads = events(&cove.run(&["--json", "threads"]).await);
            assert_eq!(threads[0]["waiting_for"], "answer");
            let resume = cove.run(&["resume", &thread]).await;
            assert_eq!(resume.status.code(), Some(3), "{}", explain(&resume));

            // Answering resumes the run, which completes.
            llm.push(Turn::text("Thanks.").call(
                "complete",
                json!({"text": "All done.", "attachments": ["todo.md"]}),
            ));
            let out = cove
                .run(&["--json", "reply", &thread, "Blue, please."])
                .await;
            assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
            let second = events(&out);
            assert_eq!(
                kinds(&second),
                [
                    "thread_run_start",
                    "user_message",
                    "assistant_response_start",
                    "tool_started",
                    "tool_completed",
                    "finish",
                    "complete",
                    "thread_run_end"
                ]
            );
            assert!(llm.received()[6].all_text().contains("Blue, please."));
            assert_eq!(
                second[1]["text"], "Blue, please.",
                "the answer is an event too"
            );
            let threads = events(&cove.run(&["--json", "threads"]).await);
            assert_eq!(
                threads[0]["waiting_for"],
                Value::Null,
                "the answer closed the wait"
            );

            // The store holds every message, LLM and status, in order.
            let shown = stored(&cove.run(&["--json", "show", &thread]).await);
            let llm_kinds: Vec<&str> = shown
                .iter()
                .filter(|m| m["is_llm_message"] == true)
                .map(|m| m["kind"].as_str().unwrap())
                .collect();
            let result = if mode == "native" { "tool" } else { "user" };
            let mut expected = vec!["user"];
            for _ in 0..6 {
                expected.extend(["assistant", result]);
            }
            expected.push("user");
            expected.extend(["assistant", result]);
            assert_eq!(llm_kinds, expected, "{wire:?} {mode}");
            let statuses: Vec<&str> = shown
                .iter()
                .filter(|m| m["is_llm_message"] == false)
                .map(|m| m["content"]["type"].as_str().unwrap())
                .collect();
            let stored_kinds: Vec<String> = first
                .iter()
                .chain(second.iter())
                .map(|e| e["type"].as_str().unwrap().to_string())
                .filter(|t| t != "assistant_text")
                .collect();
            assert_eq!(
                statuses, stored_kinds,
                "status messages record the events in order"
            );
            let threads = events(&cove.run(&["--json", "threads"]).await);
            assert_eq!(threads[0]["status"], "completed");
        }
    }
}

#[tokio::test]
async fn rate_limits_and_cut_streams_are_retried_and_never_half_saved() {
    let cove = Cove::new(Wire::OpenAi).await;
    let llm = &cove.llm;
    llm.push(
        Turn::text("A complete first answer that must be stored whole.")
            .call(
                "create_file",
                json!({"file_path": "a.txt", "file_contents": "a"}),
            )
            .failing(Fault::RateLimited {
                retry_after_secs: 1,
            })
            .failing(Fault::CutAfter(150)),
    );
    llm.push(Turn::text("Finished.").call("complete", json!({"text": "ok"})));
    let out = cove.start_task("Write a.txt", "native").await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let evs = events(&out);
    let retries: Vec<&Value> = evs.iter().filter(|e| e["type"] == "llm_retry").collect();
    assert_eq!(retries.len(), 2, "{}", explain(&out));
    assert!(retries[0]["reason"].as_str().unwrap().contains("429"));
    assert!(
        retries[0]["delay_ms"].as_u64().unwrap() >= 1000,
        "retry-after is honoured"
    );
    assert_eq!(llm.received().len(), 4);
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("a.txt")).unwrap(),
        "a"
    );
    let thread = thread_of(&evs);
    let shown = stored(&cove.run(&["--json", "show", &thread]).await);
    let assistant: Vec<String> = shown
        .iter()
        .filter(|m| m["kind"] == "assistant")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(assistant.len(), 2);
    assert!(assistant[0].contains("must be stored whole"));
    assert!(
        !shown
            .iter()
            .any(|m| m["content"].to_string().contains("partial answer")),
        "the cut attempt left nothing"
    );
}

#[tokio::test]
async fn malformed_xml_and_a_failing_tool_in_a_batch_go_back_to_the_model() {
    let cove = Cove::new(Wire::Anthropic).await;
    let llm = &cove.llm;
    llm.push(
        Turn::text("Three things at once.")
            .call("read_file", json!({"file_path": "missing.txt"}))
            .call("create_file", json!({"file_path": "made.txt", "file_contents": "made"}))
            .raw_xml("\n<function_calls>\n<invoke name=\"create_file\">\n<parameter>no name</parameter>\n</invoke>\n</function_calls>"),
    );
    llm.push(Turn::text("Noted the failures.").call("complete", json!({})));
    let out = cove.start_task("Do three things", "xml").await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let evs = events(&out);
    let failed: Vec<&Value> = evs.iter().filter(|e| e["type"] == "tool_failed").collect();
    let completed: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "tool_completed" && e["tool"] == "create_file")
        .collect();
    assert_eq!(failed.len(), 2, "{}", explain(&out));
    assert_eq!(completed.len(), 1, "the good call of the batch ran");
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("made.txt")).unwrap(),
        "made"
    );
    let next = &llm.received()[1];
    let text = next.all_text();
    assert!(text.contains("malformed tool call"), "{text}");
    assert!(text.contains("missing.txt") && text.contains("not_found"));
}

#[tokio::test]
async fn ctrl_c_stops_the_run_at_once_and_resume_continues_it() {
    let cove = Cove::new(Wire::OpenAi).await;
    let llm = &cove.llm;
    llm.push(Turn::text("This takes a while.").call(
        "execute_command",
        json!({"command": "sleep 300", "timeout": 600}),
    ));
    llm.push(Turn::text("").call("complete", json!({"text": "picked up"})));
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut child = cove
        .command(&[
            "--json",
            "run",
            "Wait for it",
            "--model",
            "openai/scripted",
            "--workspace",
            &ws,
            "--no-prompt",
        ])
        .stderr(std::fs::File::create(cove.workspace.with_extension("stderr")).unwrap())
        .spawn()
        .unwrap();
    let mut reader = EventReader::new(&mut child);
    reader.until("tool_started").await;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap()).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    // The command's 300 s are not waited for: the run ends, reports it, and cove exits.
    let end = reader.until("thread_run_end").await;
    assert_eq!(end["status"], "stopped");
    let stderr_path = cove.workspace.with_extension("stderr");
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait()).await;
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let Ok(status) = status else {
        let _ = child.start_kill();
        panic!("cove did not exit after Ctrl-C; it said:\n{stderr}");
    };
    let status = status.unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    let thread = end["thread_id"].as_str().unwrap().to_string();
    assert!(
        stderr.contains(&format!("interrupted; continue with: cove resume {thread}")),
        "{stderr}"
    );
    let threads = events(&cove.run(&["--json", "threads"]).await);
    assert_eq!(threads[0]["status"], "stopped");

    let out = cove.run(&["--json", "resume", &thread]).await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let resumed = llm.received().last().unwrap().all_text();
    assert!(
        resumed.contains("interrupted when Cove stopped"),
        "{resumed}"
    );
}

#[tokio::test]
async fn a_killed_controller_loses_nothing_and_resume_continues() {
    let cove = Cove::new(Wire::OpenAi).await;
    let llm = &cove.llm;
    llm.push(Turn::text("Step one.").call(
        "create_file",
        json!({"file_path": "one.txt", "file_contents": "1"}),
    ));
    llm.push(
        Turn::text("Step two.")
            .call(
                "create_file",
                json!({"file_path": "two.txt", "file_contents": "2"}),
            )
            .failing(Fault::Hang),
    );
    llm.push(Turn::text("Done.").call("complete", json!({"text": "both files"})));
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut child = cove
        .command(&[
            "--json",
            "run",
            "Write two files",
            "--model",
            "openai/scripted",
            "--workspace",
            &ws,
            "--no-prompt",
        ])
        .spawn()
        .unwrap();
    assert!(
        llm.wait_for_requests(2, Duration::from_secs(60)).await,
        "the run reached its second call"
    );
    let cove_pid = i32::try_from(child.id().unwrap()).unwrap();
    let daemons: Vec<i32> = procs::descendants(cove_pid)
        .iter()
        .filter(|p| {
            p.cmdline
                .split_whitespace()
                .next()
                .is_some_and(|exe| exe.ends_with("/coved"))
        })
        .map(|p| p.pid)
        .collect();
    assert_eq!(daemons.len(), 1, "cove runs one coved");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(cove_pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let _ = child.wait().await;
    // The daemon it started goes too.
    let mut alive = daemons.clone();
    for _ in 0..200 {
        alive.retain(|pid| procs::status_kib(*pid, "VmRSS").is_some());
        if alive.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(alive.is_empty(), "coved outlived its killed controller");

    let threads = events(&cove.run(&["--json", "threads"]).await);
    let thread = threads[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        threads[0]["status"], "running",
        "the killed run was mid-flight"
    );
    let before = stored(&cove.run(&["--json", "show", &thread]).await);
    let llm_before: Vec<&Value> = before
        .iter()
        .filter(|m| m["is_llm_message"] == true)
        .collect();
    assert_eq!(
        llm_before.len(),
        3,
        "task, first answer and its result were stored"
    );

    let out = cove.run(&["--json", "resume", &thread]).await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("one.txt")).unwrap(),
        "1"
    );
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("two.txt")).unwrap(),
        "2"
    );
    let after = stored(&cove.run(&["--json", "show", &thread]).await);
    let kinds: Vec<&str> = after
        .iter()
        .filter(|m| m["is_llm_message"] == true)
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool"
        ],
        "nothing lost, nothing doubled"
    );
    let received = llm.received();
    let resumed_request = &received.last().unwrap().body;
    assert_eq!(
        resumed_request["messages"][1]["content"], "Write two files",
        "the resumed call carries the whole history"
    );
}

#[tokio::test]
async fn errors_a_user_can_act_on_are_one_clear_line() {
    let cove = Cove::new(Wire::OpenAi).await;
    let no_key = cove
        .command(&["run", "hi", "--model", "anthropic/claude-x"])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .await
        .unwrap();
    assert_eq!(no_key.status.code(), Some(6), "set-up first");
    let err = String::from_utf8_lossy(&no_key.stderr);
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.lines().count() == 1,
        "{err}"
    );

    let port = cove_harness::ClosedPort::new().unwrap();
    let closed = port.addr();
    let url = format!("http://{closed}");
    let unreachable = cove
        .command(&["run", "hi", "--model", "openai/x", "--sandbox", &url])
        .env("COVE_SANDBOX_TOKEN", "t")
        .output()
        .await
        .unwrap();
    assert_eq!(unreachable.status.code(), Some(7), "try again later");
    let err = String::from_utf8_lossy(&unreachable.stderr);
    assert!(
        err.contains("unreachable") && err.lines().count() == 1,
        "{err}"
    );

    let missing = cove.run(&["show", "nosuchthread"]).await;
    assert_eq!(missing.status.code(), Some(5), "not found");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no thread"));
    assert!(!String::from_utf8_lossy(&missing.stderr).contains("panicked"));
}
