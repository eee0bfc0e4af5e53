//! `cove` on a real terminal (a PTY), as a person runs it: prompts answered, and left with
//! Ctrl-C or Ctrl-D.

use std::time::Duration;

use cove_harness::Turn;
use cove_harness::llm::Wire;
use serde_json::json;

use super::Cove;

/// `cove` on a real terminal (a PTY), as a person runs it.
pub(crate) struct Terminal {
    screen: String,
    /// Where the next wait reads from: the end of the last text waited for, or of what was
    /// on the screen when the last key was pressed.
    read: usize,
    output: tokio::sync::mpsc::UnboundedReceiver<String>,
    keys: Box<dyn std::io::Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Terminal {
    fn spawn(cove: &Cove, args: &[&str], env: &[(&str, String)]) -> Terminal {
        Terminal::spawn_in(cove, None, args, env)
    }

    /// [`Terminal::spawn`], started in folder `dir`.
    fn spawn_in(
        cove: &Cove,
        dir: Option<&std::path::Path>,
        args: &[&str],
        env: &[(&str, String)],
    ) -> Terminal {
        use portable_pty::{CommandBuilder, PtySize, native_pty_system};
        use std::io::Read;
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 200,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let home = cove.home.path();
        let mut cmd = CommandBuilder::new(&cove.bin);
        cmd.args(args);
        for (key, value) in [
            ("HOME", home.to_path_buf()),
            ("XDG_DATA_HOME", home.join("data")),
            ("XDG_CONFIG_HOME", home.join("config")),
            ("COVE_DB", home.join("cove.db")),
        ] {
            cmd.env(key, value);
        }
        cmd.env("OPENAI_BASE_URL", cove.llm.openai_base_url());
        cmd.env("OPENAI_API_KEY", "test-key");
        cmd.env("ANTHROPIC_BASE_URL", cove.llm.anthropic_base_url());
        cmd.env("ANTHROPIC_API_KEY", "test-key");
        cmd.env("COVE_LOG", "warn");
        cmd.env_remove("COVE_CONFIG");
        for (key, value) in env {
            cmd.env(key, value);
        }
        if let Some(dir) = dir {
            cmd.cwd(dir);
        }
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let keys = pty.master.take_writer().unwrap();
        let (tx, output) = tokio::sync::mpsc::unbounded_channel::<String>();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0
                    || tx
                        .send(String::from_utf8_lossy(&buf[..n]).into_owned())
                        .is_err()
                {
                    break;
                }
            }
        });
        Terminal {
            screen: String::new(),
            read: 0,
            output,
            keys,
            child,
        }
    }

    /// Reads the terminal until `needle` shows after the text waited for before (it may
    /// have come in the same chunk as that text).
    async fn until(&mut self, needle: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(at) = self.screen[self.read..].find(needle) {
                self.read += at + needle.len();
                return;
            }
            match tokio::time::timeout_at(deadline, self.output.recv()).await {
                Ok(Some(chunk)) => self.screen.push_str(&chunk),
                _ => panic!("no {needle:?} on the terminal:\n{}", self.screen),
            }
        }
    }

    /// Presses a control key: `c` for Ctrl-C, `d` for Ctrl-D.
    fn control(&mut self, key: char) {
        let byte = (key.to_ascii_uppercase() as u8) - b'@';
        self.keys.write_all(&[byte]).unwrap();
        // What was on the screen before the key is not its answer.
        self.read = self.screen.len();
    }

    /// Types a line and presses Enter.
    fn type_line(&mut self, line: &str) {
        self.keys.write_all(format!("{line}\r").as_bytes()).unwrap();
        self.read = self.screen.len();
    }

    async fn wait(self) -> portable_pty::ExitStatus {
        let mut child = self.child;
        tokio::task::spawn_blocking(move || child.wait().unwrap())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn a_person_at_the_terminal_answers_a_permission_request_as_it_comes() {
    let cove = Cove::new(Wire::OpenAi).await;
    // Emptying the workspace crosses the sandbox's walls (the one place whose loss is the
    // user's): the default mode asks.
    let keep = cove.workspace.join("work.txt");
    std::fs::write(&keep, "a day's work").unwrap();
    cove.llm.push(Turn::text("Removing it.").call(
        "execute_command",
        json!({ "command": format!("rm -rf {}", cove.workspace.display()) }),
    ));
    cove.llm.push_fn(|request| {
        let verdict = if request.all_text().contains("Their reason: keep it please") {
            "kept"
        } else {
            "NO REASON"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut term = Terminal::spawn(
        &cove,
        &[
            "run",
            "Remove the folder",
            "--model",
            "openai/scripted",
            "--workspace",
            &ws,
        ],
        &[],
    );
    term.until("Allow request").await;
    assert!(
        term.screen.contains("Permission needed")
            && term.screen.contains("deletes the whole workspace"),
        "{}",
        term.screen
    );
    term.type_line("maybe");
    term.until("answer o (allow once)").await;
    term.type_line("d keep it please");
    term.until("Done.").await;
    let screen = term.screen.clone();
    assert!(screen.contains("denied: keep it please"), "{screen}");
    assert!(screen.contains("kept"), "{screen}");
    assert!(term.wait().await.success(), "{screen}");
    assert!(keep.exists(), "the denied deletion did not run");
}

#[tokio::test]
async fn a_person_at_the_terminal_edits_the_plan_in_their_editor_and_approves_it() {
    let cove = Cove::new(Wire::Anthropic).await;
    cove.llm.push(Turn::text("My plan.").call(
        "create_plan",
        json!({"goal": "Greet", "steps": [{"description": "Say hello"}]}),
    ));
    cove.llm.push_fn(|request| {
        let verdict = if request.all_text().contains("Say hello in French") {
            "bonjour"
        } else {
            "EDIT NOT SEEN"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let ws = cove.workspace.to_str().unwrap().to_string();
    // The "editor" changes the step the way a person would, and saves.
    let editor = "sed -i 's/Say hello/Say hello in French/'".to_string();
    let mut term = Terminal::spawn(
        &cove,
        &[
            "run",
            "Greet me",
            "--plan",
            "--model",
            "anthropic/scripted",
            "--workspace",
            &ws,
        ],
        &[("EDITOR", editor), ("VISUAL", String::new())],
    );
    term.until("Approve the plan?").await;
    assert!(
        term.screen.contains("1. [ ] Say hello (step 1)"),
        "{}",
        term.screen
    );
    term.type_line("later");
    term.until("answer a (approve)").await;
    term.type_line("e");
    term.until("Done.").await;
    let screen = term.screen.clone();
    assert!(screen.contains("bonjour"), "{screen}");
    assert!(term.wait().await.success(), "{screen}");
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A run that stops at `prompt` on a terminal, left there with Ctrl-`key`: its exit code and
/// what the terminal showed.
async fn leave_prompt(
    cove: &Cove,
    args: &[&str],
    prompt: &str,
    key: char,
) -> (Option<u32>, String) {
    let mut term = Terminal::spawn(cove, args, &[]);
    term.until(prompt).await;
    term.control(key);
    term.until("workspace:").await;
    // The rest of the output, to the end.
    while let Ok(Some(chunk)) =
        tokio::time::timeout(Duration::from_secs(10), term.output.recv()).await
    {
        term.screen.push_str(&chunk);
    }
    let screen = term.screen.clone();
    let status = term.wait().await;
    (Some(status.exit_code()), screen)
}

#[tokio::test]
async fn ctrl_c_or_ctrl_d_at_any_prompt_pauses_the_run_and_says_how_to_go_on() {
    let cove = Cove::new(Wire::OpenAi).await;
    let ws = cove.workspace.to_str().unwrap().to_string();
    let run = |task: &'static str| {
        vec![
            "run".to_string(),
            task.to_string(),
            "--model".into(),
            "openai/scripted".into(),
            "--workspace".into(),
            ws.clone(),
        ]
    };

    // The agent's question.
    for key in ['c', 'd'] {
        cove.llm
            .push(Turn::text("").call("ask", json!({"text": "Which colour?"})));
        let argv = run("Pick a colour");
        let (code, screen) = leave_prompt(&cove, &strs(&argv), "Your answer", key).await;
        assert_eq!(code, Some(3), "Ctrl-{key}: {screen}");
        assert!(screen.contains("Answer with: cove reply"), "{screen}");
    }

    // The plan.
    for key in ['c', 'd'] {
        cove.llm.push(Turn::text("").call(
            "create_plan",
            json!({"goal": "Greet", "steps": [{"description": "Say hello"}]}),
        ));
        let mut argv = run("Greet me");
        argv.push("--plan".into());
        let (code, screen) = leave_prompt(&cove, &strs(&argv), "Approve the plan?", key).await;
        assert_eq!(code, Some(8), "Ctrl-{key}: {screen}");
        assert!(
            screen.contains("The plan waits for your approval: cove approve"),
            "{screen}"
        );
    }

    // A permission: emptying the workspace asks. Ctrl-D leaves the question open (9),
    // Ctrl-C interrupts (130); both say to answer with cove permit, then resume.
    std::fs::write(cove.workspace.join("work.txt"), "a day's work").unwrap();
    for (key, exit) in [('d', 9), ('c', 130)] {
        cove.llm.push(Turn::text("").call(
            "execute_command",
            json!({ "command": format!("rm -rf {}", cove.workspace.display()) }),
        ));
        let argv = run("Remove the folder");
        let (code, screen) = leave_prompt(&cove, &strs(&argv), "Allow request", key).await;
        assert_eq!(code, Some(exit), "Ctrl-{key}: {screen}");
        assert!(
            screen.contains("The run waits for your permission") && screen.contains("cove permit"),
            "{screen}"
        );
        assert!(cove.workspace.join("work.txt").exists());
    }
}

/// A folder with settings of its own (an MCP server's command, a skill) is asked about at
/// the terminal, showing what would run; refused, none of it is used; trusted, all of it.
#[tokio::test]
async fn a_folders_own_settings_are_shown_and_asked_about_before_use() {
    let cove = Cove::new(Wire::OpenAi).await;
    let folder = tempfile::tempdir().unwrap();
    let marker = folder.path().join("ran-on-host.txt");
    let settings = json!({"mcpServers": {
        "helper": {"command": "sh", "args": ["-c", format!("touch {}", marker.display())]},
    }});
    std::fs::write(folder.path().join(".mcp.json"), settings.to_string()).unwrap();
    let skill = folder.path().join(".cove/skills/release-notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes in the house style.\n---\n# Release notes\n",
    )
    .unwrap();
    let ws = cove.workspace.to_str().unwrap().to_string();
    let args = [
        "run",
        "Look around",
        "--model",
        "openai/scripted",
        "--workspace",
        &ws,
    ];
    for (answer, trusted) in [("n", false), ("y", true)] {
        cove.llm
            .push(Turn::text("").call("complete", json!({"text": "looked"})));
        let mut term = Terminal::spawn_in(&cove, Some(folder.path()), &args, &[]);
        term.until("Trust this folder? [y/N]").await;
        for shown in [
            "has settings of its own",
            &format!("MCP server helper: run `sh -c touch {}`", marker.display()),
            "give the agent the instructions in 1 file(s) under .cove/skills",
        ] {
            assert!(term.screen.contains(shown), "{shown}: {}", term.screen);
        }
        term.type_line(answer);
        term.until("looked").await;
        let screen = term.screen.clone();
        assert!(term.wait().await.success(), "{screen}");
        let asked = cove.llm.received().pop().unwrap();
        assert_eq!(
            asked
                .all_text()
                .contains("- release-notes: Write release notes in the house style."),
            trusted,
            "{answer}: the folder's skill"
        );
        // A server's command starts with the run; give it a moment when trusted.
        for _ in 0..50 {
            if marker.exists() || !trusted {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(marker.exists(), trusted, "{answer}: the folder's command");
    }
}

/// A wait for events at the terminal: what it waits for, the time counting, what woke it;
/// Ctrl-C while it waits stops the run, and the resumed run is told the wait was cut short.
#[tokio::test]
async fn the_terminal_shows_a_wait_for_events_and_ctrl_c_ends_it() {
    let cove = Cove::new(Wire::OpenAi).await;
    let ws = cove.workspace.to_str().unwrap().to_string();
    let args = |task: &'static str| {
        vec![
            "run".to_string(),
            task.to_string(),
            "--model".into(),
            "openai/scripted".into(),
            "--workspace".into(),
            ws.clone(),
        ]
    };
    let llm = &cove.llm;
    llm.push(Turn::text("").call(
        "watch",
        json!({"on": "after", "seconds": 3, "label": "a short pause"}),
    ));
    llm.push(Turn::text("").call("wait_for_events", json!({"timeout": 60})));
    llm.push(Turn::text("").call("complete", json!({"text": "rested"})));
    let argv = args("Rest a moment");
    let mut term = Terminal::spawn(&cove, &strs(&argv), &[]);
    term.until("waiting for: a short pause (at most 1 min)")
        .await;
    // The spinner counts the wait.
    term.until("waiting for: a short pause · 2 s").await;
    term.until("(a short pause): 3 s have passed").await;
    assert!(term.screen.contains("⇦ woke"), "{}", term.screen);
    term.until("rested").await;
    assert!(term.wait().await.success());

    // Stopped mid-wait: the call is answered as interrupted when the thread goes on.
    llm.push(Turn::text("").call(
        "watch",
        json!({"on": "after", "seconds": 300, "label": "a long pause"}),
    ));
    llm.push(Turn::text("").call("wait_for_events", json!({"timeout": 600})));
    let argv = args("Rest a long while");
    let mut term = Terminal::spawn(&cove, &strs(&argv), &[]);
    term.until("waiting for: a long pause").await;
    term.control('c');
    let status = term.wait().await;
    assert_eq!(status.exit_code(), 130);
    let threads = super::events(&cove.run(&["--json", "threads"]).await);
    let thread = threads[0]["id"].as_str().unwrap().to_string();
    assert_ne!(threads[0]["status"], "waiting", "{threads:?}");
    llm.push_fn(|request| {
        // (The last message is the note of the watch still pending.)
        let text = request.all_text();
        let interrupted = text.contains("interrupted") && text.contains("a long pause");
        Turn::text("").call(
            "complete",
            json!({"text": if interrupted { "told" } else { "NOT TOLD" }}),
        )
    });
    let out = cove.run(&["--json", "resume", &thread]).await;
    assert_eq!(out.status.code(), Some(0), "{}", super::explain(&out));
    let done = super::events(&out);
    let said = done.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(said["text"], "told");
}

/// A sub-agent's permission request is asked at the parent's terminal, answered once there,
/// and the sub-agent goes on.
#[tokio::test]
async fn a_sub_agents_permission_request_is_answered_at_the_parents_terminal() {
    let cove = Cove::new(Wire::OpenAi).await;
    for _ in 0..4 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            if text.contains("Your task:\n[[helper]]") {
                return if text.contains("exit code 0") {
                    Turn::text("").call("complete", json!({"text": "helper wrote it"}))
                } else {
                    Turn::text("").call(
                        "execute_command",
                        json!({"command": "echo from the helper > helper.txt"}),
                    )
                };
            }
            if text.contains("Agent 1 (thread") {
                let said = if text.contains("helper wrote it") {
                    "done"
                } else {
                    "NO ANSWER"
                };
                Turn::text("").call("complete", json!({ "text": said }))
            } else {
                Turn::text("").call(
                    "spawn_agents",
                    json!({"agents": [{"task": "[[helper]] Write helper.txt."}]}),
                )
            }
        });
    }
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut term = Terminal::spawn(
        &cove,
        &[
            "run",
            "Have a helper write a file",
            "--model",
            "openai/scripted",
            "--workspace",
            &ws,
            "--permissions",
            "ask",
        ],
        &[],
    );
    term.until("Allow request").await;
    assert!(
        term.screen.contains("echo from the helper > helper.txt"),
        "the helper's command is asked about: {}",
        term.screen
    );
    term.type_line("o");
    term.until("Done.").await;
    let screen = term.screen.clone();
    assert_eq!(screen.matches("Allow request").count(), 1, "{screen}");
    assert!(screen.contains("↳ agent 1 completed"), "{screen}");
    assert!(term.wait().await.success(), "{screen}");
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("helper.txt")).unwrap(),
        "from the helper\n"
    );
}

#[tokio::test]
async fn a_sub_agents_question_is_answered_at_the_parents_terminal() {
    let cove = Cove::new(Wire::Anthropic).await;
    for _ in 0..4 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            if text.contains("Your task:\n[[helper]]") {
                return if text.contains("Use 8080.") {
                    Turn::text("").call("complete", json!({"text": "helper chose 8080"}))
                } else {
                    Turn::text("").call("ask", json!({"text": "Which port should I use?"}))
                };
            }
            if text.contains("Agent 1 (thread") {
                let said = if text.contains("helper chose 8080") && !text.contains("Use 8080.") {
                    "The helper has its port."
                } else {
                    "NOT ROUTED"
                };
                Turn::text("").call("complete", json!({ "text": said }))
            } else {
                Turn::text("").call(
                    "spawn_agents",
                    json!({"agents": [{"task": "[[helper]] Pick the port."}]}),
                )
            }
        });
    }
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut term = Terminal::spawn(
        &cove,
        &[
            "run",
            "Have a helper pick a port",
            "--model",
            "anthropic/scripted",
            "--workspace",
            &ws,
        ],
        &[],
    );
    term.until("Sub-agent 1 ([[helper]] Pick the port.) asks: Which port should I use?")
        .await;
    term.until("Your answer").await;
    term.type_line("Use 8080.");
    term.until("The helper has its port.").await;
    let screen = term.screen.clone();
    assert!(
        screen.contains("↳ agent 1: asks: Which port should I use?")
            && !screen.contains("↳ agent 1: ask "),
        "the question shows once as the sub-agent's doing: {screen}"
    );
    assert!(screen.contains("↳ agent 1 asks"), "{screen}");
    assert!(screen.contains("↳ agent 1 completed"), "{screen}");
    assert_eq!(screen.matches("Your answer").count(), 1, "{screen}");
    assert!(term.wait().await.success(), "{screen}");
}
