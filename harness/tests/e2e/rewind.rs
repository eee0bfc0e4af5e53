//! Checkpoints, diff and rewind through `cove`, on both wires: a thread that changes its
//! workspace only through the shell (`sed -i`, `rm -rf`, `mv`, a Python script writing a
//! binary file, `chmod`, symlinks, an empty folder) is rewound to each of its checkpoints
//! and its whole tree compared with what it was then; the conversation goes back with it,
//! and the next reply's request holds the conversation as of the checkpoint.

use cove_harness::tree::tree;

use super::*;

const FIRST: &str = "mkdir -p src empty && printf 'one\\ntwo\\n' > src/a.txt && chmod 600 src/a.txt \
    && ln -s src/a.txt link && python3 -c 'open(\"blob.bin\",\"wb\").write(bytes(range(256)))'";

/// Ten turns of work through the shell alone.
const TURNS: [&str; 10] = [
    "mkdir -p src empty && printf 'one\\ntwo\\n' > src/a.txt && chmod 600 src/a.txt",
    "ln -s src/a.txt link && python3 -c 'open(\"blob.bin\",\"wb\").write(bytes(range(256)))'",
    "sed -i 's/two/TWO/' src/a.txt",
    "rm -rf empty",
    "mv src/a.txt src/b.txt && ln -sfn src/b.txt link",
    "chmod 755 src/b.txt",
    "python3 -c 'open(\"blob.bin\",\"wb\").write(bytes(range(255,-1,-1)))'",
    "mkdir -p new/deeper/emptier && echo x > new/x",
    "rm -rf new/deeper && ln -s /etc/hostname outside",
    "rm -rf src && mkdir src && echo fresh > src/c.txt && chmod 400 src/c.txt",
];

#[tokio::test]
async fn a_thread_goes_back_to_any_checkpoint_with_its_files_and_conversation() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let cove = Cove::new(wire).await;
        let ws = cove.workspace.clone();
        let llm = &cove.llm;
        // trees[k]: the workspace after turn k (0: before the first).
        let mut trees = vec![tree(&ws)];
        let mut thread = String::new();
        for (k, command) in TURNS.iter().enumerate() {
            llm.push(Turn::text("Working.").call("execute_command", json!({"command": command})));
            llm.push(
                Turn::text("").call("complete", json!({"text": format!("turn {} done", k + 1)})),
            );
            let task = format!("Turn {}.", k + 1);
            let out = if k == 0 {
                cove.start_task(&task, "native").await
            } else {
                cove.run(&["--json", "reply", &thread, &task]).await
            };
            assert_eq!(
                out.status.code(),
                Some(0),
                "turn {}: {}",
                k + 1,
                explain(&out)
            );
            if k == 0 {
                thread = thread_of(&events(&out));
            }
            trees.push(tree(&ws));
        }

        // A checkpoint as each run started and after each command; none after `complete`.
        let listed = events(&cove.run(&["--json", "checkpoints", &thread]).await);
        assert_eq!(listed.len(), 20, "{wire:?}: {listed:?}");
        let mut expected = Vec::new();
        let mut turn = 0;
        for row in &listed {
            let reason = row["reason"].as_str().unwrap();
            if reason == "run start" {
                turn += 1;
                expected.push((row["checkpoint"].as_str().unwrap().to_string(), turn - 1));
            } else {
                assert_eq!(reason, "after execute_command");
                assert!(row["changed"].as_u64().unwrap() > 0, "{row}");
                expected.push((row["checkpoint"].as_str().unwrap().to_string(), turn));
            }
        }
        let id = |i: usize| expected[i].0.clone();

        // Every checkpoint gives back its whole tree, in any order.
        let mut order: Vec<usize> = (0..expected.len()).rev().collect();
        order.extend([3, 17, 0, 11]);
        for i in order {
            let (checkpoint, turn) = &expected[i];
            let back = cove
                .run(&["--json", "rewind", &thread, checkpoint, "--files-only"])
                .await;
            assert_eq!(back.status.code(), Some(0), "{}", explain(&back));
            assert_eq!(
                tree(&ws),
                trees[*turn],
                "{wire:?}: {checkpoint} is the workspace after turn {turn}"
            );
        }

        // What turn 5 changed.
        let diff = cove.run(&["diff", &thread, &id(8), &id(10)]).await;
        assert_eq!(diff.status.code(), Some(0), "{}", explain(&diff));
        let text = String::from_utf8_lossy(&diff.stdout);
        assert!(
            text.contains("+ src/b.txt") && text.contains("- src/a.txt") && text.contains("~ link"),
            "{text}"
        );

        // Back to where turn 9 began, files and conversation: the later turns are aside.
        let back = cove.run(&["--json", "rewind", &thread, &id(16)]).await;
        assert_eq!(back.status.code(), Some(0), "{}", explain(&back));
        assert_eq!(
            tree(&ws),
            trees[8],
            "{wire:?}: the files as turn 9 found them"
        );
        // (`show --json` prints the messages, then a line per run and per plan version.)
        let messages = |out: &Output| -> Vec<Value> {
            stored(out)
                .into_iter()
                .filter(|m| m.get("kind").is_some())
                .collect()
        };
        let shown = messages(&cove.run(&["--json", "show", &thread]).await);
        assert!(shown.iter().all(|m| m["branch"] == 0), "{shown:?}");
        assert!(!shown.iter().any(|m| m.to_string().contains("Turn 9.")));
        assert!(shown.iter().any(|m| m.to_string().contains("Turn 8.")));
        let all = messages(&cove.run(&["--json", "show", &thread, "--all"]).await);
        assert!(
            all.iter()
                .any(|m| m["branch"] == 1 && m.to_string().contains("Turn 10."))
        );

        // As a person reads them.
        let text = cove.run(&["checkpoints", &thread]).await;
        let text = String::from_utf8_lossy(&text.stdout).into_owned();
        assert!(text.lines().next().unwrap().contains("run start"), "{text}");
        assert!(text.contains("after execute_command"), "{text}");
        let show = cove.run(&["show", &thread]).await;
        let show = String::from_utf8_lossy(&show.stdout).into_owned();
        assert!(show.contains("left aside by a rewind: cove show"), "{show}");
        let all = cove.run(&["show", &thread, "--all"]).await;
        let all = String::from_utf8_lossy(&all.stdout).into_owned();
        assert!(all.contains("[left by rewind 1]"), "{all}");

        // The next reply goes on from there: the model never sees the turns left aside.
        llm.push(Turn::text("").call("complete", json!({"text": "other way"})));
        let out = cove
            .run(&["--json", "reply", &thread, "Try it another way."])
            .await;
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let request = llm.received().last().unwrap().all_text();
        assert!(request.contains("Turn 8.") && request.contains("turn 8 done"));
        assert!(request.contains("Try it another way."));
        assert!(
            !request.contains("Turn 9.") && !request.contains("turn 10 done"),
            "{request}"
        );

        // A checkpoint the thread does not have, and a thread that does not exist.
        let missing = cove.run(&["rewind", &thread, "c999"]).await;
        assert_eq!(missing.status.code(), Some(5), "{}", explain(&missing));
        let nothing = cove.run(&["checkpoints", "no-such-thread"]).await;
        assert_eq!(nothing.status.code(), Some(5), "{}", explain(&nothing));
    }
}

#[tokio::test]
async fn a_fork_goes_on_from_a_checkpoint_apart_from_its_original() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let cove = Cove::new(wire).await;
        let ws = cove.workspace.clone();
        let llm = &cove.llm;
        llm.push(Turn::text("Writing.").call("execute_command", json!({"command": FIRST})));
        llm.push(Turn::text("").call("complete", json!({"text": "first done"})));
        let out = cove.start_task("Make the first version.", "native").await;
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let thread = thread_of(&events(&out));
        let t1 = tree(&ws);
        let listed = events(&cove.run(&["--json", "checkpoints", &thread]).await);
        let after_command = listed[1]["checkpoint"].as_str().unwrap().to_string();

        let out = cove.run(&["--json", "fork", &thread, &after_command]).await;
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let forked = &events(&out)[0];
        let fork = forked["thread_id"].as_str().unwrap().to_string();
        let label = forked["sandbox"].as_str().unwrap();
        let fork_ws = PathBuf::from(label.strip_prefix("local:").unwrap());
        assert_ne!(fork_ws, ws);
        assert_eq!(
            tree(&fork_ws),
            t1,
            "{wire:?}: the fork's workspace is the checkpoint's"
        );

        // The fork goes on with the conversation up to the command's result, not what came
        // after it; its changes stay in its own workspace.
        llm.push(Turn::text("").call(
            "execute_command",
            json!({"command": "echo fork > only-in-fork"}),
        ));
        llm.push(Turn::text("").call("complete", json!({"text": "fork done"})));
        let out = cove
            .run(&["--json", "reply", &fork, "Go on in the fork."])
            .await;
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let first_call = &llm.received()[llm.received().len() - 2];
        let text = first_call.all_text();
        assert!(text.contains("Make the first version.") && text.contains("Go on in the fork."));
        assert!(!text.contains("first done"), "{text}");
        assert!(fork_ws.join("only-in-fork").exists());
        assert!(!ws.join("only-in-fork").exists());
        assert_eq!(tree(&ws), t1, "the original is untouched");

        // A fork into the original's own workspace is refused.
        let own = ws.to_str().unwrap();
        let refused = cove.run(&["fork", &thread, "--workspace", own]).await;
        assert_eq!(refused.status.code(), Some(2), "{}", explain(&refused));
    }
}

#[tokio::test]
async fn the_page_shows_a_turns_changes_rewinds_to_it_and_forks_from_it() {
    use super::page::{count, js, log_in_with_token, open_page, picture, text_of, wait};
    use super::serve::Server;

    let cove = Cove::new(Wire::OpenAi).await;
    let llm = &cove.llm;
    llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": "printf 'one\\n' > a.txt"}),
    ));
    llm.push(Turn::text("").call("complete", json!({"text": "first done"})));
    let server = Server::start(&cove, &[]).await;
    let thread = server.create(json!({"task": "The first version."})).await;
    let mut events = server.stream(&thread, None).await;
    events.until("thread_run_end").await;
    llm.push(Turn::text("").call(
        "execute_command",
        json!({"command": "printf 'two\\n' > a.txt && echo b > b.txt"}),
    ));
    llm.push(Turn::text("").call("complete", json!({"text": "second done"})));
    let (status, said) = server
        .post(
            &format!("/v1/threads/{thread}/reply"),
            json!({"text": "The second version."}),
        )
        .await;
    assert_eq!(status, 202, "{said}");
    events.until("thread_run_end").await;
    let file = |thread: String, path: &'static str| {
        let server = &server;
        async move {
            let response = server
                .raw(
                    reqwest::Method::GET,
                    &format!("/v1/threads/{thread}/files/content?path={path}"),
                )
                .await;
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    assert_eq!(file(thread.clone(), "a.txt").await.1, "two\n");

    // Two tabs on the thread, as a person keeps them.
    let mut tab = open_page(&server).await;
    // (The login link is for one browser; the other logs in with the token.)
    let mut other = log_in_with_token(&server).await;
    for t in [&mut tab, &mut other] {
        wait(
            t,
            "document.querySelectorAll('#threads button').length === 1",
        )
        .await;
        t.click("#threads button").await.unwrap();
        wait(
            t,
            "document.querySelectorAll('#transcript .turn-actions').length === 2",
        )
        .await;
    }
    picture(&mut tab, "turns.png").await;

    // What the second turn changed, in a dialog.
    tab.eval("document.querySelectorAll('.turn-changes')[1].id = 'second-changes'")
        .await
        .unwrap();
    tab.click("#second-changes").await.unwrap();
    wait(&mut tab, "document.getElementById('dialog').open && document.getElementById('dialog-body').textContent.includes('b.txt')").await;
    let shown = text_of(&mut tab, "#dialog-body").await;
    assert!(
        shown.contains("~ a.txt") && shown.contains("+ b.txt"),
        "{shown}"
    );
    assert!(shown.contains("-one") && shown.contains("+two"), "{shown}");
    picture(&mut tab, "changes.png").await;
    tab.click("#dialog-actions button").await.unwrap();
    wait(&mut tab, "!document.getElementById('dialog').open").await;

    // A fork from where the second turn began: a thread of its own, with the first turn's files.
    tab.eval("document.querySelectorAll('.turn-fork')[1].id = 'second-fork'")
        .await
        .unwrap();
    tab.click("#second-fork").await.unwrap();
    wait(
        &mut tab,
        &format!("!location.hash.includes({})", js(&thread)),
    )
    .await;
    wait(
        &mut tab,
        "document.getElementById('thread-title').textContent.includes('(fork)')",
    )
    .await;
    let fork = tab
        .eval("decodeURIComponent(location.hash.replace('#thread=', ''))")
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(file(fork.clone(), "a.txt").await.1, "one\n");
    assert_eq!(file(fork.clone(), "b.txt").await.0, 404);

    // Back on the thread: rewind to where the second turn began, answering the dialog.
    tab.click(&format!("#threads button[data-id={}]", js(&thread)))
        .await
        .unwrap();
    wait(
        &mut tab,
        "document.querySelectorAll('#transcript .turn-actions').length === 2",
    )
    .await;
    tab.eval("document.querySelectorAll('.turn-rewind')[1].id = 'second-rewind'")
        .await
        .unwrap();
    tab.click("#second-rewind").await.unwrap();
    wait(&mut tab, "document.getElementById('dialog').open").await;
    tab.click("#dialog-actions button.danger").await.unwrap();
    for t in [&mut tab, &mut other] {
        // Both tabs show the thread from its start again: one turn, and the rewind.
        wait(t, "document.querySelectorAll('#transcript .divider[data-run]').length === 1 && document.getElementById('transcript').textContent.includes('Rewound to')").await;
        let transcript = text_of(t, "#transcript").await;
        assert!(!transcript.contains("The second version."), "{transcript}");
        assert!(transcript.contains("The first version."), "{transcript}");
    }
    picture(&mut tab, "rewound.png").await;
    assert_eq!(file(thread.clone(), "a.txt").await.1, "one\n");
    assert_eq!(file(thread.clone(), "b.txt").await.0, 404);
    assert_eq!(count(&mut tab, "#transcript .turn-actions").await, 1);

    // The thread goes on from there: the model is sent the first turn only.
    llm.push(Turn::text("").call("complete", json!({"text": "another way"})));
    let (status, said) = server
        .post(
            &format!("/v1/threads/{thread}/reply"),
            json!({"text": "Another way."}),
        )
        .await;
    assert_eq!(status, 202, "{said}");
    wait(
        &mut tab,
        "document.getElementById('transcript').textContent.includes('another way')",
    )
    .await;
    let request = llm.received().last().unwrap().all_text();
    assert!(request.contains("The first version.") && request.contains("Another way."));
    assert!(!request.contains("The second version."), "{request}");
    tab.close().await;
    other.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_running_thread_is_not_rewound_and_bad_checkpoints_are_refused() {
    use super::serve::Server;
    use cove_harness::llm::Chunking;

    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .set_chunking(Chunking::Paced(Duration::from_millis(20)));
    cove.llm.push(
        Turn::text("Thinking it over, slowly. ".repeat(20))
            .call("complete", json!({"text": "done"})),
    );
    let server = Server::start(&cove, &[]).await;
    let thread = server.create(json!({"task": "Take your time."})).await;
    let mut events = server.stream(&thread, None).await;
    events.until("assistant_response_start").await;
    let (status, listed) = server
        .get(&format!("/v1/threads/{thread}/checkpoints"))
        .await;
    assert_eq!(status, 200, "{listed}");
    let first = listed["checkpoints"][0]["checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, refused) = server
        .post(
            &format!("/v1/threads/{thread}/rewind"),
            json!({"checkpoint": first}),
        )
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("running")),
        "{refused}"
    );
    events.until("thread_run_end").await;
    for (body, code) in [
        (json!({"checkpoint": "c999"}), 404),
        (json!({"checkpoint": "nope"}), 404),
        (json!({"checkpoint": first, "scope": "sideways"}), 400),
    ] {
        let (status, said) = server
            .post(&format!("/v1/threads/{thread}/rewind"), body)
            .await;
        assert_eq!(status, code, "{said}");
    }
    let (status, said) = server
        .get(&format!("/v1/threads/{thread}/checkpoints/c999/diff"))
        .await;
    assert_eq!(status, 404, "{said}");
    server.kill().await;
}
