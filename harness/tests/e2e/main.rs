//! End to end: the `cove` binary, a local `coved` with real Chromium, the fixture site and the
//! scripted model, in both wire formats and both tool modes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on the unexpected

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use base64::Engine;
use cove_harness::llm::Wire;
use cove_harness::{Fault, FixtureSite, ScriptedLlm, Turn, procs, workspace_binary};
use serde_json::{Value, json};

mod cost;
mod isolation;
mod kubernetes;
mod mcp;
mod model_server;
mod page;
mod page_edges;
mod project_trust;
mod real_docker;
mod serve;
mod serve_sandboxes;
mod skills;
mod static_coved;
mod terminal;
mod web;

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

struct Cove {
    bin: PathBuf,
    home: tempfile::TempDir,
    workspace: PathBuf,
    llm: ScriptedLlm,
    wire: Wire,
    /// Ports of this machine's loopback its local sandboxes reach (the fixture sites).
    host_ports: std::sync::Mutex<Vec<u16>>,
}

impl Cove {
    async fn new(wire: Wire) -> Cove {
        let home = tempfile::tempdir().unwrap();
        let workspace = home.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        Cove {
            bin: workspace_binary("cove").unwrap(),
            // The daemon is found beside cove; make sure it is built.
            workspace,
            home,
            llm: {
                workspace_binary("coved").unwrap();
                ScriptedLlm::start().await.unwrap()
            },
            wire,
            host_ports: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Lets its local sandboxes reach this machine's `port` (a fixture site), as a user
    /// shares a port with `COVE_HOST_PORTS`.
    fn share_port(&self, port: u16) {
        self.host_ports.lock().unwrap().push(port);
    }

    fn model(&self) -> &'static str {
        match self.wire {
            Wire::OpenAi => "openai/scripted",
            Wire::Anthropic => "anthropic/scripted",
        }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.bin);
        let home = self.home.path();
        cmd.args(args)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("COVE_DB", home.join("cove.db"))
            .env("OPENAI_BASE_URL", self.llm.openai_base_url())
            .env("OPENAI_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", self.llm.anthropic_base_url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("COVE_LOG", "warn")
            .env("COVE_VISION", "true")
            .env_remove("COVE_MODEL")
            .env_remove("COVE_SANDBOX_URL")
            .env_remove("COVE_SANDBOX_TOKEN")
            .env_remove("COVE_WORKSPACE")
            .env_remove("COVE_CONFIG")
            .env(
                "COVE_HOST_PORTS",
                self.host_ports
                    .lock()
                    .unwrap()
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    async fn run(&self, args: &[&str]) -> Output {
        tokio::time::timeout(Duration::from_secs(180), self.command(args).output())
            .await
            .expect("cove finished within 3 minutes")
            .unwrap()
    }

    async fn start_task(&self, task: &str, mode: &str) -> Output {
        self.start_task_with(task, mode, &[], &[]).await
    }

    /// `cove run TASK` with more flags and environment, as JSON events.
    async fn start_task_with(
        &self,
        task: &str,
        mode: &str,
        flags: &[&str],
        env: &[(&str, String)],
    ) -> Output {
        let ws = self.workspace.to_str().unwrap().to_string();
        let mut args = vec![
            "--json",
            "run",
            task,
            "--model",
            self.model(),
            "--tool-calls",
            mode,
            "--workspace",
            &ws,
            "--no-prompt",
        ];
        args.extend_from_slice(flags);
        let mut cmd = self.command(&args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        tokio::time::timeout(Duration::from_secs(180), cmd.output())
            .await
            .expect("cove finished within 3 minutes")
            .unwrap()
    }
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .filter(|t| t != "assistant_text")
        .collect()
}

fn thread_of(events: &[Value]) -> String {
    events[0]["thread_id"].as_str().unwrap().to_string()
}

fn explain(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The index of the element whose line contains `needle`, in the last message sent.
fn index_in_last_message(text: &str, needle: &str) -> u32 {
    cove_harness::browser_text::index_of(text, needle)
        .unwrap_or_else(|| panic!("no {needle:?} in the page state:\n{text}"))
}

fn stored(out: &Output) -> Vec<Value> {
    events(out)
}

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

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
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

#[tokio::test]
async fn operator_commands_reach_the_sandbox_without_a_model() {
    let cove = Cove::new(Wire::OpenAi).await;
    let site = FixtureSite::start().await.unwrap();
    cove.share_port(site.port());
    let ws = cove.workspace.to_str().unwrap().to_string();
    std::fs::write(cove.workspace.join("note.txt"), "hello operator").unwrap();
    let out = cove
        .run(&["exec", "echo from-exec && exit 3", "--workspace", &ws])
        .await;
    assert_eq!(
        out.status.code(),
        Some(3),
        "the command's exit code: {}",
        explain(&out)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from-exec\n");
    let out = cove.run(&["ls", "--workspace", &ws]).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("note.txt"),
        "{}",
        explain(&out)
    );
    let out = cove.run(&["cat", "note.txt", "--workspace", &ws]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello operator");
    let out = cove
        .run(&["browse", &site.url("counter.html"), "--workspace", &ws])
        .await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("<button>Increment"),
        "{}",
        explain(&out)
    );
    let shot = cove.home.path().join("shot.jpg");
    let out = cove
        .run(&[
            "screenshot",
            "-o",
            shot.to_str().unwrap(),
            "--url",
            &site.url("counter.html"),
            "--workspace",
            &ws,
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    assert_eq!(&std::fs::read(&shot).unwrap()[..3], b"\xff\xd8\xff");

    // With --json each command prints one JSON line on stdout and nothing else.
    let shot = shot.to_str().unwrap();
    let counter = site.url("counter.html");
    for (args, field, want) in [
        (vec!["exec", "echo hi"], "output", json!("hi\n")),
        (vec!["cat", "note.txt"], "content", json!("hello operator")),
        (vec!["browse", &counter], "url", json!(counter)),
        (vec!["screenshot", "-o", shot], "path", json!(shot)),
    ] {
        let out = cove
            .run(&[&["--json"][..], &args, &["--workspace", &ws]].concat())
            .await;
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", explain(&out));
        let lines = events(&out);
        assert_eq!(lines.len(), 1, "{args:?}: {}", explain(&out));
        assert_eq!(lines[0][field], want, "{args:?}");
    }
    let out = cove.run(&["--json", "ls", "--workspace", &ws]).await;
    let listed = &events(&out)[0]["entries"];
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == "note.txt"),
        "{listed}"
    );
    assert!(llm_unused(&cove.llm));
}

fn llm_unused(llm: &ScriptedLlm) -> bool {
    llm.received().is_empty()
}

#[tokio::test]
async fn knowledge_added_on_the_command_line_reaches_the_system_prompt() {
    let cove = Cove::new(Wire::Anthropic).await;
    // A file over 100 KB keeps its first 100 KB.
    let big = cove.home.path().join("handbook.md");
    let mut text = String::from("HANDBOOK-START\n");
    while text.len() < 150 * 1024 {
        text.push_str("Every report cites its sources. ");
    }
    text.push_str("HANDBOOK-END");
    std::fs::write(&big, &text).unwrap();
    let out = cove
        .run(&["knowledge", "add", "--file", big.to_str().unwrap()])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("only the first 100 KB"),
        "{}",
        explain(&out)
    );
    let out = cove
        .run(&[
            "knowledge",
            "add",
            "--text",
            "Always answer in French.",
            "--name",
            "language",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let binary = cove.home.path().join("blob.bin");
    std::fs::write(&binary, [0u8, 1, 2, 3]).unwrap();
    let out = cove
        .run(&["knowledge", "add", "--file", binary.to_str().unwrap()])
        .await;
    assert_eq!(out.status.code(), Some(2), "binary files are refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a text file"));
    let out = cove.run(&["--json", "knowledge", "ls"]).await;
    let listed: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(listed.len(), 2, "{}", explain(&out));
    assert!(listed[0]["content"].as_str().unwrap().len() <= 100 * 1024);

    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "Fini."})));
    let ws = cove.workspace.to_str().unwrap().to_string();
    let out = cove
        .run(&[
            "--json",
            "run",
            "Write a report.",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--workspace",
            &ws,
            "--no-prompt",
            "--context",
            "summarize",
            "--knowledge-budget",
            "2000",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let system = cove.llm.received()[0].system_text();
    let language = system
        .find("Always answer in French.")
        .expect("the newest entry");
    let handbook = system.find("HANDBOOK-START").expect("the older entry, cut");
    assert!(language < handbook, "newest first");
    assert!(!system.contains("HANDBOOK-END"), "cut to the budget");

    let id = listed[1]["id"].to_string();
    let out = cove.run(&["knowledge", "rm", &id]).await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let out = cove.run(&["knowledge", "rm", &id]).await;
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no knowledge entry"));
}

/// Reads a running cove's JSON events as they come.
struct EventReader {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    seen: Vec<Value>,
}

impl EventReader {
    fn new(child: &mut tokio::process::Child) -> EventReader {
        use tokio::io::AsyncBufReadExt;
        let stdout = child.stdout.take().unwrap();
        EventReader {
            lines: tokio::io::BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }

    /// Reads until an event of `kind`; returns it.
    async fn until(&mut self, kind: &str) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("no {kind} event; saw {:?}", kinds(&self.seen)))
                .unwrap()
                .unwrap_or_else(|| panic!("cove ended before {kind}; saw {:?}", kinds(&self.seen)));
            let event: Value = serde_json::from_str(&line).unwrap();
            self.seen.push(event.clone());
            if event["type"] == kind {
                return event;
            }
        }
    }

    /// Reads to the end.
    async fn rest(&mut self) -> Vec<Value> {
        while let Ok(Some(line)) =
            tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
                .await
                .unwrap()
        {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        self.seen.clone()
    }
}

/// The model browses to the fixture, asks for a takeover, then checks what it is told.
fn script_takeover(llm: &ScriptedLlm, site: &FixtureSite, expect: &'static str) {
    llm.push(Turn::text("").call(
        "browser_navigate_to",
        json!({"url": site.url("takeover.html")}),
    ));
    llm.push(Turn::text("I need a person here.").call(
        "web_browser_takeover",
        json!({"text": "Please click Bravo, then hand the browser back."}),
    ));
    llm.push_fn(move |request| {
        let text = request.all_text();
        let last = request.last_message_text();
        let verdict = if !text.contains(expect) {
            format!("MISSING {expect:?}")
        } else if !last.contains("Bravo") {
            "NO FRESH STATE".to_string()
        } else if text.contains("token=") {
            "TOKEN LEAKED".to_string()
        } else {
            "ok".to_string()
        };
        Turn::text("").call("complete", json!({"text": verdict}))
    });
}

#[tokio::test]
async fn a_person_takes_over_the_browser_then_hands_it_back_and_the_run_continues() {
    let site = FixtureSite::start().await.unwrap();
    let cove = Cove::new(Wire::Anthropic).await;
    cove.share_port(site.port());
    script_takeover(&cove.llm, &site, "Their note: clicked Bravo for you");
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut child = cove
        .command(&[
            "--json",
            "run",
            "Open the page",
            "--model",
            "anthropic/scripted",
            "--tool-calls",
            "xml",
            "--workspace",
            &ws,
            "--no-prompt",
        ])
        .spawn()
        .unwrap();
    let mut reader = EventReader::new(&mut child);
    let takeover = reader.until("takeover").await;
    let url = takeover["url"]
        .as_str()
        .expect("the event has the link")
        .to_string();
    let token = takeover["token"].as_str().unwrap().to_string();
    assert!(
        url.contains(&token) && url.contains("/takeover?token="),
        "{takeover}"
    );
    assert!(takeover["expires_at"].is_string());
    assert_eq!(
        takeover["text"],
        "Please click Bravo, then hand the browser back."
    );

    // The thread says it is waiting; a person opens the page, clicks Bravo and hands back.
    let threads = events(&cove.run(&["--json", "threads"]).await);
    assert_eq!(threads[0]["status"], "waiting");
    let mut live = cove_harness::LiveClient::connect(&url, &token)
        .await
        .unwrap();
    let view = live
        .expect_json("view", Duration::from_secs(15))
        .await
        .unwrap();
    assert_eq!(view["role"], "control");
    live.click(800.0, 350.0, 1280.0, 720.0).await.unwrap();
    site.wait_for_report(|r| r["click"] == "b")
        .await
        .expect("the person's click reached the page");
    live.send(json!({"t": "done", "note": "clicked Bravo for you"}))
        .await
        .unwrap();
    let ended = reader.until("takeover_ended").await;
    assert_eq!(ended["reason"], "handed_back");
    assert_eq!(ended["note"], "clicked Bravo for you");
    let all = reader.rest().await;
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{:?}", kinds(&all));
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(
        complete["text"], "ok",
        "what the model was told after the hand-back"
    );
    assert_eq!(cove.llm.request_count(), 3);

    // The stored events keep no link and no token.
    let thread = thread_of(&all);
    let shown = cove.run(&["--json", "show", &thread]).await;
    let stored = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(
        stored.contains("\"takeover\""),
        "the takeover event is stored"
    );
    assert!(!stored.contains(&token), "the token was stored");
    let threads = events(&cove.run(&["--json", "threads"]).await);
    assert_eq!(threads[0]["status"], "completed");
}

#[tokio::test]
async fn cove_reply_answers_a_takeover_from_another_terminal() {
    let site = FixtureSite::start().await.unwrap();
    let cove = Cove::new(Wire::OpenAi).await;
    cove.share_port(site.port());
    script_takeover(&cove.llm, &site, "I logged in myself");
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut child = cove
        .command(&[
            "--json",
            "run",
            "Open the page",
            "--model",
            "openai/scripted",
            "--workspace",
            &ws,
            "--no-prompt",
        ])
        .spawn()
        .unwrap();
    let mut reader = EventReader::new(&mut child);
    let takeover = reader.until("takeover").await;
    let thread = takeover["thread_id"].as_str().unwrap().to_string();

    // Resuming would start a second run: it is refused while this one waits.
    let resume = cove.run(&["resume", &thread]).await;
    assert!(!resume.status.success());
    assert!(
        String::from_utf8_lossy(&resume.stderr).contains("waiting for a person"),
        "{}",
        explain(&resume)
    );
    let reply = cove.run(&["reply", &thread, "I logged in myself"]).await;
    assert!(reply.status.success(), "{}", explain(&reply));
    assert!(String::from_utf8_lossy(&reply.stdout).contains("Delivered"));

    let ended = reader.until("takeover_ended").await;
    assert_eq!(ended["reason"], "replied");
    let all = reader.rest().await;
    assert!(child.wait().await.unwrap().success(), "{:?}", kinds(&all));
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(complete["text"], "ok");
}

#[tokio::test]
async fn the_agent_serves_a_site_and_exposes_it_for_the_user() {
    let cove = Cove::new(Wire::OpenAi).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let llm = &cove.llm;
    llm.push(Turn::text("").call(
        "create_file",
        json!({"file_path": "site/index.html", "file_contents": "<h1>Made by the agent</h1>"}),
    ));
    llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": format!("cd site && (python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &) && sleep 1")}),
    ));
    llm.push(Turn::text("").call("expose_port", json!({"port": port})));
    // The model keeps the sandbox busy while the user looks, then hands over the link.
    llm.push(Turn::text("").call("execute_command", json!({"command": "sleep 4"})));
    llm.push_fn(move |request| {
        let text = request.all_text();
        let link = text
            .split_whitespace()
            .find(|w| w.contains("cove_preview="))
            .unwrap_or("NO LINK")
            .to_string();
        Turn::text("").call("complete", json!({"text": link}))
    });
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut child = cove
        .command(&[
            "--json",
            "run",
            "Build a page",
            "--model",
            "openai/scripted",
            "--workspace",
            &ws,
            "--no-prompt",
        ])
        .spawn()
        .unwrap();
    let mut reader = EventReader::new(&mut child);
    let exposed = loop {
        let done = reader.until("tool_completed").await;
        if done["tool"] == "expose_port" {
            break done;
        }
    };
    let output = exposed["output"].as_str().unwrap();
    let link = output
        .split_whitespace()
        .find(|w| w.contains("cove_preview="))
        .unwrap_or_else(|| panic!("no link in {exposed}"))
        .to_string();
    assert!(
        link.starts_with(&format!("http://p{port}-")) && link.contains("/?cove_preview="),
        "{link}"
    );
    // The user opens the link while the sandbox still runs: the cookie, then the page.
    let page = reqwest_like_get(&link).await;
    assert!(page.contains("Made by the agent"), "{page}");
    let complete = reader.until("complete").await;
    assert_eq!(
        complete["text"],
        link.as_str(),
        "the model gave the user the link"
    );
    let all = reader.rest().await;
    assert!(child.wait().await.unwrap().success(), "{:?}", kinds(&all));
}

/// Follows a preview link as a browser would: the token traded for the cookie, then the page.
async fn reqwest_like_get(link: &str) -> String {
    let http = cove_harness::preview::client(&[link]);
    let (cookie, location) = cove_harness::preview::trade_link(&http, link)
        .await
        .unwrap();
    let origin = cove_harness::preview::origin(link);
    http.get(format!("{origin}{location}"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn named_sandboxes_are_listed_with_their_health_and_used_by_name() {
    let cove = Cove::new(Wire::OpenAi).await;
    let daemon = cove_harness::DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let url = daemon
        .client
        .base_url()
        .as_str()
        .trim_end_matches('/')
        .to_string();
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        format!(
            "[sandboxes.build-1]\nurl = \"{url}\"\ntoken = \"{}\"\n\n[sandboxes.gone]\nurl = \"http://127.0.0.1:9\"\ntoken = \"x\"\n",
            daemon.client.token()
        ),
    )
    .unwrap();

    let out = cove.run(&["--json", "sandbox", "ls"]).await;
    assert_eq!(out.status.code(), Some(1), "one is down: {}", explain(&out));
    let rows = events(&out);
    assert_eq!(rows.len(), 2, "{}", explain(&out));
    let up = rows.iter().find(|r| r["name"] == "build-1").unwrap();
    assert_eq!(up["healthy"], true);
    assert!(up["version"].is_string() && up["capabilities"].to_string().contains("preview"));
    let down = rows.iter().find(|r| r["name"] == "gone").unwrap();
    assert_eq!(down["healthy"], false);
    assert!(down["error"].is_string());

    let text = cove.run(&["sandbox", "ls"]).await;
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains("build-1") && shown.contains(" up ") && shown.contains("DOWN"),
        "{shown}"
    );

    // The name stands for the URL and its token.
    let exec = cove
        .run(&["exec", "echo named", "--sandbox", "build-1"])
        .await;
    assert!(exec.status.success(), "{}", explain(&exec));
    assert_eq!(String::from_utf8_lossy(&exec.stdout).trim(), "named");
    let bad = cove.run(&["exec", "true", "--sandbox", "nope"]).await;
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("build-1, gone"),
        "{}",
        explain(&bad)
    );
}

#[tokio::test]
async fn the_docker_provider_speaks_to_an_engine_over_tcp() {
    use cove_harness::docker::{IMAGE, ScriptedDocker};
    let cove = Cove::new(Wire::OpenAi).await;
    let engine = ScriptedDocker::start_tcp(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    assert!(engine.host().starts_with("tcp://127.0.0.1:"));
    let run = |args: &[&str]| {
        let mut cmd = cove.command(args);
        cmd.env("DOCKER_HOST", engine.host());
        async move {
            tokio::time::timeout(Duration::from_secs(120), cmd.output())
                .await
                .unwrap()
                .unwrap()
        }
    };
    let out = run(&["sandbox", "create", "t1", "--image", IMAGE]).await;
    assert!(out.status.success(), "{}", explain(&out));
    // A local engine publishes on loopback only.
    assert_eq!(
        engine.created()["cove-t1"]["HostConfig"]["PortBindings"]["7700/tcp"][0]["HostIp"],
        "127.0.0.1"
    );
    let exec = run(&["exec", "echo over tcp", "--sandbox", "t1"]).await;
    assert_eq!(
        String::from_utf8_lossy(&exec.stdout).trim(),
        "over tcp",
        "{}",
        explain(&exec)
    );
    // Without --memory and --cpus, the defaults hold.
    let host = &engine.created()["cove-t1"]["HostConfig"];
    assert_eq!(host["Memory"], 4_i64 << 30);
    assert_eq!(host["NanoCpus"], 2_000_000_000_i64);
    let rm = run(&["sandbox", "rm", "t1"]).await;
    assert!(rm.status.success(), "{}", explain(&rm));
    assert_eq!(engine.counts(), (0, 0));
    assert!(engine.networks().is_empty(), "its network went with it");
}

#[tokio::test]
async fn the_docker_provider_creates_starts_stops_and_removes_sandboxes() {
    use cove_harness::docker::{IMAGE, ScriptedDocker};
    let cove = Cove::new(Wire::OpenAi).await;
    let engine = ScriptedDocker::start(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = cove.command(args);
        cmd.env("DOCKER_HOST", engine.host());
        async move {
            tokio::time::timeout(Duration::from_secs(120), cmd.output())
                .await
                .unwrap()
                .unwrap()
        }
    };
    let out = run(&[
        "sandbox", "create", "b1", "--image", IMAGE, "--memory", "1g", "--cpus", "2",
    ])
    .await;
    assert!(out.status.success(), "{}", explain(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--sandbox b1"));
    let body = engine.created()["cove-b1"].clone();
    assert_eq!(body["Image"], IMAGE);
    assert_eq!(body["Labels"]["cove.sandbox"], "b1");
    let env = body["Env"][0].as_str().unwrap();
    assert!(env.starts_with("COVE_TOKEN=") && env.len() > 40, "{env}");
    let host = &body["HostConfig"];
    assert_eq!(host["Init"], true);
    assert_eq!(host["Memory"], 1024 * 1024 * 1024);
    assert_eq!(host["NanoCpus"], 2_000_000_000_i64);
    assert_eq!(host["PortBindings"]["7700/tcp"][0]["HostIp"], "127.0.0.1");
    assert!(host["ShmSize"].as_i64().unwrap() >= 256 * 1024 * 1024);
    // Hardened as the Kubernetes Pod is: no capability, no privilege gained, a ceiling on
    // processes, and a network of its own (sandboxes do not reach each other).
    assert_eq!(host["CapDrop"], json!(["ALL"]));
    assert_eq!(host["SecurityOpt"], json!(["no-new-privileges:true"]));
    assert_eq!(host["PidsLimit"], 4096);
    assert_eq!(host["NetworkMode"], "cove-b1");
    let network = &engine.networks()["cove-b1"];
    assert_eq!(network["Labels"]["cove.sandbox"], "b1");
    assert_eq!(
        network["Options"]["com.docker.network.bridge.enable_icc"],
        "false"
    );
    assert_eq!(engine.counts(), (1, 1));

    // Used by name; listed with its health.
    let exec = run(&["exec", "echo in the container", "--sandbox", "b1"]).await;
    assert!(exec.status.success(), "{}", explain(&exec));
    assert_eq!(
        String::from_utf8_lossy(&exec.stdout).trim(),
        "in the container"
    );
    let ls = run(&["--json", "sandbox", "ls"]).await;
    assert!(ls.status.success(), "{}", explain(&ls));
    let rows = events(&ls);
    assert_eq!(rows[0]["name"], "b1");
    assert_eq!(rows[0]["kind"], "docker");
    assert_eq!(rows[0]["healthy"], true);

    // A run on it: the thread remembers the name, not this start's URL.
    cove.llm.push(Turn::text("").call(
        "create_file",
        json!({"file_path": "made.txt", "file_contents": "in docker"}),
    ));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "done"})));
    let task = run(&[
        "--json",
        "run",
        "Make a file",
        "--model",
        "openai/scripted",
        "--sandbox",
        "b1",
        "--no-prompt",
    ])
    .await;
    assert!(task.status.success(), "{}", explain(&task));
    let threads = events(&run(&["--json", "threads"]).await);
    let thread = threads[0]["id"].as_str().unwrap().to_string();
    let shown = run(&["show", &thread]).await;
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("docker:b1"),
        "{}",
        explain(&shown)
    );

    // Stopped: ls says so; the next use starts it again.
    let stop = run(&["sandbox", "stop", "b1"]).await;
    assert!(stop.status.success(), "{}", explain(&stop));
    assert_eq!(engine.counts(), (1, 0));
    let ls = run(&["--json", "sandbox", "ls"]).await;
    assert_eq!(ls.status.code(), Some(1));
    assert_eq!(events(&ls)[0]["healthy"], false);
    let cat = run(&["cat", "made.txt", "--sandbox", "b1"]).await;
    assert!(cat.status.success(), "{}", explain(&cat));
    assert_eq!(String::from_utf8_lossy(&cat.stdout).trim(), "in docker");
    assert_eq!(engine.counts(), (1, 1), "the use started it again");

    // Mistakes are one clear line.
    // Each kind of mistake has its exit code: 2 fix the command, 6 set up first, 7 try later.
    let dup = run(&["sandbox", "create", "b1", "--image", IMAGE]).await;
    assert_eq!(dup.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&dup.stderr).contains("exists already"),
        "{}",
        explain(&dup)
    );
    let no_image = run(&["sandbox", "create", "b2", "--image", "nope:1"]).await;
    assert_eq!(no_image.status.code(), Some(6));
    assert!(
        String::from_utf8_lossy(&no_image.stderr).contains("docker build"),
        "{}",
        explain(&no_image)
    );
    let bad_name = run(&["sandbox", "create", "../x"]).await;
    assert!(String::from_utf8_lossy(&bad_name.stderr).contains("not a sandbox name"));
    assert_eq!(bad_name.status.code(), Some(2));
    let mut ssh = cove.command(&["sandbox", "create", "b3"]);
    ssh.env("DOCKER_HOST", "ssh://builder@10.0.0.1");
    let ssh = ssh.output().await.unwrap();
    assert_eq!(ssh.status.code(), Some(6));
    assert!(
        String::from_utf8_lossy(&ssh.stderr).contains("tcp://host:port"),
        "{}",
        explain(&ssh)
    );
    // TLS asked for, its files missing: said before anything is sent.
    let no_certs = cove.home.path().join("no-certs");
    let mut tls = cove.command(&["sandbox", "create", "b3"]);
    tls.env("DOCKER_HOST", "tcp://127.0.0.1:2376")
        .env("DOCKER_TLS_VERIFY", "1")
        .env("DOCKER_CERT_PATH", &no_certs);
    let tls = tls.output().await.unwrap();
    assert_eq!(tls.status.code(), Some(6), "{}", explain(&tls));
    assert!(
        String::from_utf8_lossy(&tls.stderr).contains("DOCKER_CERT_PATH"),
        "{}",
        explain(&tls)
    );
    // A remote engine in clear: refused before anything is sent (tokens would cross the
    // network readable).
    let mut clear = cove.command(&["sandbox", "create", "b3"]);
    clear
        .env("DOCKER_HOST", "tcp://10.0.0.1:2375")
        .env_remove("DOCKER_TLS_VERIFY");
    let clear = clear.output().await.unwrap();
    assert_eq!(clear.status.code(), Some(6), "{}", explain(&clear));
    assert!(
        String::from_utf8_lossy(&clear.stderr).contains("over TLS only"),
        "{}",
        explain(&clear)
    );
    let mut down = cove.command(&["sandbox", "create", "b4"]);
    down.env("DOCKER_HOST", "unix:///nonexistent/docker.sock");
    let down = down.output().await.unwrap();
    assert_eq!(down.status.code(), Some(7));
    assert!(
        String::from_utf8_lossy(&down.stderr).contains("is the Docker engine running"),
        "{}",
        explain(&down)
    );

    // Removed: the container goes, and so does the name.
    let rm = run(&["sandbox", "rm", "b1"]).await;
    assert!(rm.status.success(), "{}", explain(&rm));
    assert_eq!(engine.counts(), (0, 0));
    let ls = run(&["sandbox", "ls"]).await;
    assert!(String::from_utf8_lossy(&ls.stdout).contains("No sandboxes yet"));
    assert!(
        engine
            .calls()
            .iter()
            .any(|c| c.starts_with("DELETE /containers/"))
    );
}

#[tokio::test]
async fn parallel_runs_on_their_own_sandboxes_do_not_interfere() {
    let cove = Cove::new(Wire::OpenAi).await;
    const RUNS: usize = 4;
    // Answers follow what each request holds, so arrival order does not matter.
    for _ in 0..RUNS * 2 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            let n: u32 = text
                .split("Task ")
                .nth(1)
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            if text.contains("file_contents") {
                Turn::text("").call("complete", json!({"text": format!("task {n} done")}))
            } else {
                Turn::text("").call(
                    "create_file",
                    json!({"file_path": "mine.txt", "file_contents": format!("task {n}")}),
                )
            }
        });
    }
    let mut children = Vec::new();
    for n in 1..=RUNS {
        let ws = cove.home.path().join(format!("ws-{n}"));
        let ws = ws.to_str().unwrap().to_string();
        let task = format!("Task {n}: write your file");
        let child = cove
            .command(&[
                "--json",
                "run",
                &task,
                "--model",
                "openai/scripted",
                "--workspace",
                &ws,
                "--no-prompt",
            ])
            .spawn()
            .unwrap();
        children.push((n, ws, child));
    }
    for (n, ws, child) in children {
        let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(out.status.success(), "run {n}: {}", explain(&out));
        let complete = events(&out)
            .into_iter()
            .find(|e| e["type"] == "complete")
            .unwrap();
        assert_eq!(complete["text"], format!("task {n} done"));
        assert_eq!(
            std::fs::read_to_string(PathBuf::from(&ws).join("mine.txt")).unwrap(),
            format!("task {n}")
        );
    }
    let threads = events(&cove.run(&["--json", "threads"]).await);
    assert_eq!(threads.len(), RUNS);
    assert!(
        threads.iter().all(|t| t["status"] == "completed"),
        "{threads:?}"
    );
}

#[tokio::test]
async fn a_permission_request_is_answered_from_another_terminal() {
    for (wire, mode) in [(Wire::OpenAi, "native"), (Wire::Anthropic, "xml")] {
        permission_answered_from_another_terminal(wire, mode).await;
    }
}

async fn permission_answered_from_another_terminal(wire: Wire, mode: &str) {
    let cove = Cove::new(wire).await;
    // With no walls (--sandbox host) every command asks in the default (auto) mode, and
    // one that deletes outside the workspace says so.
    let outside = tempfile::tempdir().unwrap();
    let keep = outside.path().join("keep");
    let gone = outside.path().join("gone");
    std::fs::create_dir_all(&keep).unwrap();
    std::fs::create_dir_all(&gone).unwrap();
    let rm = |dir: &std::path::Path| json!({ "command": format!("rm -rf {}", dir.display()) });
    cove.llm.push(
        Turn::text("Cleaning up.")
            .call("execute_command", rm(&keep))
            .call(
                "create_file",
                json!({"file_path": "ok.txt", "file_contents": "fine"}),
            ),
    );
    let (gone_rm, gone_rm2) = (rm(&gone), rm(&gone));
    cove.llm.push_fn(move |request| {
        let text = request.all_text();
        if !text.contains("Not run: the user denied this call. Their reason: keep that folder") {
            return Turn::text("").call("complete", json!({"text": "NO DENIAL"}));
        }
        Turn::text("The other one, twice.")
            .call("execute_command", gone_rm.clone())
            .call("execute_command", gone_rm2.clone())
    });
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "cleaned"})));
    let ws = cove.workspace.to_str().unwrap().to_string();
    // No terminal to ask at: the run pauses once the call that needs no permission is done,
    // and exits with 9.
    let out = cove
        .run(&[
            "--json",
            "run",
            "Clean up",
            "--model",
            cove.model(),
            "--tool-calls",
            mode,
            "--workspace",
            &ws,
            "--no-prompt",
            "--sandbox",
            "host",
        ])
        .await;
    assert_eq!(out.status.code(), Some(9), "{mode}: {}", explain(&out));
    let first_run = events(&out);
    let asked = first_run
        .iter()
        .find(|e| e["type"] == "permission_request")
        .unwrap_or_else(|| panic!("{mode}: {:?}", kinds(&first_run)));
    let thread = asked["thread_id"].as_str().unwrap().to_string();
    let first = asked["request_id"].as_str().unwrap().to_string();
    assert_eq!(
        asked["summary"],
        format!("run `rm -rf {}`", keep.display()),
        "{asked}"
    );
    let why = asked["why"].as_str().unwrap();
    assert!(
        why.contains(&format!(
            "deletes or overwrites outside the workspace: {}",
            keep.display()
        )),
        "{why}"
    );
    assert_eq!(
        asked["decisions"],
        json!(["allow_once", "allow_for_thread", "deny"])
    );
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("ok.txt")).unwrap(),
        "fine",
        "the call that needed no permission ran before the run paused"
    );
    let end = first_run.last().unwrap();
    assert_eq!(end["type"], "thread_run_end", "{:?}", kinds(&first_run));
    assert_eq!(end["status"], "paused", "{end}");
    assert!(keep.exists(), "nothing was allowed yet");

    let threads = events(&cove.run(&["--json", "threads"]).await);
    assert_eq!(threads[0]["waiting_for"], format!("permission {first}"));
    // A reply cannot come before the calls' results: refused, nothing sent.
    let reply = cove.run(&["reply", &thread, "hello?"]).await;
    assert_eq!(reply.status.code(), Some(9), "{}", explain(&reply));
    assert!(
        String::from_utf8_lossy(&reply.stderr).contains(&format!("cove permit {thread} {first}")),
        "{}",
        explain(&reply)
    );
    // Resumed with no decision yet: the same request, asked again, and a pause.
    let again = cove.run(&["--json", "resume", &thread]).await;
    assert_eq!(again.status.code(), Some(9), "{}", explain(&again));
    let asked_again: Vec<Value> = events(&again)
        .into_iter()
        .filter(|e| e["type"] == "permission_request")
        .collect();
    assert_eq!(asked_again.len(), 1, "{}", explain(&again));
    assert_eq!(asked_again[0]["request_id"], first.as_str());

    // Bad answers: one clear line, exit 1, nothing changed.
    for (args, says) in [
        (
            vec!["permit", &thread, &first, "maybe"],
            "is not a decision",
        ),
        (
            vec!["permit", &thread, "nope", "deny"],
            "has no request \"nope\"",
        ),
    ] {
        let out = cove.run(&args).await;
        assert_eq!(out.status.code(), Some(1), "{}", explain(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(says) && err.trim().lines().count() == 1,
            "{err}"
        );
    }
    let denied = cove
        .run(&[
            "--json",
            "permit",
            &thread,
            &first,
            "deny",
            "keep that folder",
        ])
        .await;
    assert!(denied.status.success(), "{}", explain(&denied));
    let again = cove.run(&["permit", &thread, &first, "allow_once"]).await;
    assert_eq!(again.status.code(), Some(1), "{}", explain(&again));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already answered"));

    // The denial reaches the model, whose next two calls wait in their turn (text mode says
    // how to go on).
    let out = cove.run(&["resume", &thread]).await;
    assert_eq!(out.status.code(), Some(9), "{}", explain(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("The run waits for your permission")
            && said.contains(&format!("cove resume {thread}")),
        "{said}"
    );
    let waiting = events(&cove.run(&["--json", "threads"]).await)[0]["waiting_for"]
        .as_str()
        .unwrap()
        .to_string();
    let ids: Vec<&str> = waiting
        .strip_prefix("permission ")
        .unwrap()
        .split(',')
        .collect();
    assert_eq!(ids.len(), 2, "{waiting}");
    for id in &ids {
        assert!(
            said.contains(&format!("cove permit {thread} {id} ")),
            "{said}"
        );
    }
    let allowed = cove
        .run(&["--json", "permit", &thread, ids[0], "allow_for_thread"])
        .await;
    assert!(allowed.status.success(), "{}", explain(&allowed));
    assert_eq!(
        events(&allowed)[0]["also"],
        json!([ids[1]]),
        "the identical request is answered with it"
    );
    let out = cove.run(&["--json", "resume", &thread]).await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    let all = events(&out);
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(complete["text"], "cleaned");
    assert!(keep.exists(), "the denied deletion did not run");
    assert!(!gone.exists(), "the allowed one did");
    let decided: Vec<&str> = all
        .iter()
        .filter(|e| e["type"] == "permission_decided")
        .map(|e| e["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decided, ["allow_for_thread", "allow_for_thread"]);
}

#[tokio::test]
async fn read_only_mode_refuses_changes_without_asking() {
    let cove = Cove::new(Wire::Anthropic).await;
    cove.llm.push(
        Turn::text("Writing.")
            .call(
                "create_file",
                json!({"file_path": "no.txt", "file_contents": "x"}),
            )
            .call("list_files", json!({})),
    );
    cove.llm.push_fn(|request| {
        let text = request.all_text();
        let verdict = if text.contains("read-only") {
            "refused"
        } else {
            "NOT REFUSED"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let ws = cove.workspace.to_str().unwrap().to_string();
    let out = cove
        .run(&[
            "--json",
            "run",
            "Write a file",
            "--model",
            "anthropic/scripted",
            "--tool-calls",
            "xml",
            "--workspace",
            &ws,
            "--no-prompt",
            "--permissions",
            "read-only",
        ])
        .await;
    assert!(out.status.success(), "{}", explain(&out));
    let all = events(&out);
    assert!(
        !kinds(&all).contains(&"permission_request".to_string()),
        "{:?}",
        kinds(&all)
    );
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(complete["text"], "refused");
    assert!(!cove.workspace.join("no.txt").exists());
}

#[tokio::test]
async fn a_permission_decided_while_no_process_runs_is_applied_on_resume() {
    for (wire, mode) in [(Wire::OpenAi, "native"), (Wire::Anthropic, "xml")] {
        let cove = Cove::new(wire).await;
        let outside = tempfile::tempdir().unwrap();
        let gone = outside.path().join("gone");
        std::fs::create_dir_all(&gone).unwrap();
        cove.llm.push(Turn::text("Removing it.").call(
            "execute_command",
            json!({ "command": format!("rm -rf {}", gone.display()) }),
        ));
        cove.llm.push_fn(|request| {
            // The call's result answers the last assistant message, before anything else.
            let verdict = if request.last_message_text().contains("Not run") {
                "DENIED"
            } else {
                "removed"
            };
            Turn::text("").call("complete", json!({ "text": verdict }))
        });
        let ws = cove.workspace.to_str().unwrap().to_string();
        let out = cove
            .run(&[
                "--json",
                "run",
                "Remove the folder",
                "--model",
                cove.model(),
                "--tool-calls",
                mode,
                "--workspace",
                &ws,
                "--no-prompt",
                "--sandbox",
                "host",
            ])
            .await;
        assert_eq!(out.status.code(), Some(9), "{mode}: {}", explain(&out));
        let all = events(&out);
        let asked = all
            .iter()
            .find(|e| e["type"] == "permission_request")
            .unwrap_or_else(|| panic!("{mode}: {:?}", kinds(&all)));
        let thread = asked["thread_id"].as_str().unwrap().to_string();
        let request = asked["request_id"].as_str().unwrap().to_string();
        assert!(gone.exists());

        // Resumed with no decision yet, the run asks the same request again and pauses.
        let out = cove
            .run(&["--json", "resume", &thread, "--no-prompt"])
            .await;
        assert_eq!(out.status.code(), Some(9), "{mode}: {}", explain(&out));
        let again = events(&out);
        let again = again
            .iter()
            .find(|e| e["type"] == "permission_request")
            .unwrap_or_else(|| panic!("{mode}: {:?}", kinds(&again)));
        assert_eq!(again["request_id"], request.as_str(), "{mode}");
        assert!(gone.exists());

        // Decided while nothing runs the thread, applied when it resumes.
        let permit = cove.run(&["permit", &thread, &request, "allow_once"]).await;
        assert!(permit.status.success(), "{}", explain(&permit));
        assert!(gone.exists(), "nothing ran yet");
        let out = cove.run(&["--json", "resume", &thread]).await;
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", explain(&out));
        let all = events(&out);
        assert!(!gone.exists(), "{mode}: the allowed call ran on resume");
        let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
        assert_eq!(complete["text"], "removed", "{mode}: {:?}", kinds(&all));
        let decided: Vec<&Value> = all
            .iter()
            .filter(|e| e["type"] == "permission_decided")
            .collect();
        assert_eq!(decided.len(), 1, "{mode}: {:?}", kinds(&all));
        assert_eq!(decided[0]["decision"], "allow_once");
        assert_eq!(
            cove.llm.received().len(),
            2,
            "{mode}: one call before, one after"
        );
    }
}

#[tokio::test]
async fn a_plan_is_proposed_rejected_edited_approved_and_carried_out() {
    for (wire, mode) in [(Wire::OpenAi, "native"), (Wire::Anthropic, "xml")] {
        let cove = Cove::new(wire).await;
        let llm = &cove.llm;
        // Before approval the agent may not change anything.
        llm.push(
            Turn::text("A plan first.")
                .call(
                    "create_plan",
                    json!({"goal": "Greet", "steps": [{"description": "Do it"}]}),
                )
                .call(
                    "create_file",
                    json!({"file_path": "early.txt", "file_contents": "too soon"}),
                ),
        );
        llm.push_fn(|request| {
            if !request
                .last_message_text()
                .contains("I reject this plan: too vague")
            {
                return Turn::text("").call("complete", json!({"text": "NO REASON SEEN"}));
            }
            Turn::text("A better plan.").call(
                "create_plan",
                json!({"goal": "Greet the user", "steps": [
                    {"id": "1", "description": "Write hello.txt"},
                    {"id": "2", "description": "Read it back"}
                ]}),
            )
        });
        llm.push_fn(|request| {
            let text = request.all_text();
            if !text.contains("The approved plan (version 3)")
                || !text.contains("Write hello.txt saying hi")
                || !text.contains("I edited your plan")
            {
                return Turn::text("").call("complete", json!({"text": "EDIT NOT SEEN"}));
            }
            Turn::text("Working.")
                .call(
                    "update_plan",
                    json!({"step_id": "1", "status": "in_progress"}),
                )
                .call(
                    "create_file",
                    json!({"file_path": "hello.txt", "file_contents": "hi"}),
                )
        });
        llm.push(
            Turn::text("Both done.")
                .call(
                    "update_plan",
                    json!({"step_id": "1", "status": "completed", "note": "written"}),
                )
                .call(
                    "update_plan",
                    json!({"step_id": "check", "status": "completed"}),
                ),
        );
        llm.push_fn(|request| {
            let verdict = if request
                .all_text()
                .contains("1. [x] Write hello.txt saying hi")
            {
                "greeted"
            } else {
                "PROGRESS NOT IN THE PROMPT"
            };
            Turn::text("").call("complete", json!({ "text": verdict }))
        });

        let ws = cove.workspace.to_str().unwrap().to_string();
        let out = cove
            .run(&[
                "--json",
                "run",
                "Greet me",
                "--plan",
                "--model",
                cove.model(),
                "--tool-calls",
                mode,
                "--workspace",
                &ws,
                "--no-prompt",
            ])
            .await;
        assert_eq!(out.status.code(), Some(8), "{mode}: {}", explain(&out));
        let first = events(&out);
        let thread = thread_of(&first);
        let proposed = first.iter().find(|e| e["type"] == "plan_proposed").unwrap();
        assert_eq!(proposed["plan"]["version"], 1);
        let refused = first
            .iter()
            .find(|e| e["type"] == "tool_failed" && e["tool"] == "create_file")
            .unwrap();
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("approve a plan"),
            "{refused}"
        );
        assert!(!cove.workspace.join("early.txt").exists());
        let threads = events(&cove.run(&["--json", "threads"]).await);
        assert_eq!(threads[0]["waiting_for"], "approval", "{mode}");

        let out = cove.run(&["--json", "reject", &thread, "too vague"]).await;
        assert_eq!(out.status.code(), Some(8), "{mode}: {}", explain(&out));
        let second = events(&out);
        let told = second.iter().find(|e| e["type"] == "plan_updated").unwrap();
        assert_eq!(
            (told["plan"]["status"].as_str(), told["note"].as_str()),
            (Some("rejected"), Some("rejected by the user: too vague")),
            "{mode}"
        );
        let proposed = second
            .iter()
            .find(|e| e["type"] == "plan_proposed")
            .unwrap();
        assert_eq!(proposed["plan"]["version"], 2, "{mode}");

        // A malformed edit changes nothing.
        let bad = cove.home.path().join("bad.md");
        std::fs::write(&bad, "just some words").unwrap();
        let out = cove
            .run(&["approve", &thread, "--edit", bad.to_str().unwrap()])
            .await;
        assert_eq!(out.status.code(), Some(1), "{mode}: {}", explain(&out));
        assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was changed"));

        let edit = cove.home.path().join("plan.md");
        std::fs::write(
            &edit,
            "# Greet the user warmly\n\n1. Write hello.txt saying hi\n2. Read it back (step check)\n",
        )
        .unwrap();
        let out = cove
            .run(&[
                "--json",
                "approve",
                &thread,
                "--edit",
                edit.to_str().unwrap(),
            ])
            .await;
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", explain(&out));
        let third = events(&out);
        let complete = third.iter().find(|e| e["type"] == "complete").unwrap();
        assert_eq!(complete["text"], "greeted", "{mode}: {:?}", kinds(&third));
        let updates: Vec<&Value> = third
            .iter()
            .filter(|e| e["type"] == "plan_updated")
            .collect();
        assert_eq!(updates.len(), 4, "{mode}");
        assert_eq!(
            (
                updates[0]["plan"]["version"].as_u64(),
                updates[0]["note"].as_str()
            ),
            (Some(3), Some("approved by the user")),
            "the approval is told first"
        );
        // The two updates of one answer run in parallel: either may be told first.
        assert!(
            updates[2..].iter().any(|u| u["note"] == "written"),
            "{updates:?}"
        );
        assert_eq!(
            std::fs::read_to_string(cove.workspace.join("hello.txt")).unwrap(),
            "hi"
        );

        let again = cove.run(&["approve", &thread]).await;
        assert_eq!(again.status.code(), Some(1), "{mode}: {}", explain(&again));
        assert!(String::from_utf8_lossy(&again.stderr).contains("no plan waiting"));

        let shown = events(&cove.run(&["--json", "show", &thread]).await);
        let versions: Vec<&Value> = shown
            .iter()
            .filter_map(|line| line.get("plan_version"))
            .collect();
        let summary: Vec<(u64, &str)> = versions
            .iter()
            .map(|p| {
                (
                    p["version"].as_u64().unwrap(),
                    p["status"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [(1, "rejected"), (2, "superseded"), (3, "approved")],
            "{mode}"
        );
        assert_eq!(versions[0]["reason"], "too vague");
        let steps: Vec<&str> = versions[2]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["status"].as_str().unwrap())
            .collect();
        assert_eq!(steps, ["completed", "completed"], "{mode}");
    }
}
