//! Commands that reach the sandbox without a model, and knowledge given on the command line.

use super::*;

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

/// `cove recording` saves a session of a sandbox that stays as an asciicast file: the
/// commands given to it and their output, in order.
#[tokio::test]
async fn a_sessions_recording_is_saved_from_a_sandbox_that_stays() {
    let cove = Cove::new(Wire::OpenAi).await;
    let daemon = cove_harness::DaemonBuilder::new(workspace_binary("coved").unwrap())
        .workspace(cove.workspace.clone())
        .spawn()
        .await
        .unwrap();
    for command in ["echo one", "echo two"] {
        let out = cove
            .on_daemon(&daemon, &["exec", command, "--session", "work"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{}", explain(&out));
    }
    let file = cove.home.path().join("work.cast");
    let out = cove
        .on_daemon(
            &daemon,
            &[
                "--json",
                "recording",
                "--session",
                "work",
                "-o",
                file.to_str().unwrap(),
            ],
        )
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", explain(&out));
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cast = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        said["events"].as_u64(),
        Some(cast.lines().count() as u64 - 1)
    );
    let texts: Vec<String> = cast
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()[2]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let joined = texts.concat();
    let order = ["$ echo one\r\n", "one\r\n", "$ echo two\r\n", "two\r\n"];
    let mut from = 0;
    for part in order {
        let at = joined[from..]
            .find(part)
            .unwrap_or_else(|| panic!("{part:?} not after {from} in {joined:?}"));
        from += at + part.len();
    }
    // A session that is not there says which sessions are.
    let out = cove
        .on_daemon(&daemon, &["recording", "--session", "nope", "-o", "-"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("nope") && said.contains("work"), "{said}");
}
