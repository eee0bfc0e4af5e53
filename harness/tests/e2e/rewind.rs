//! Checkpoints, diff and rewind through `cove`, on both wires: a thread that changes its
//! workspace only through the shell (`sed -i`, `rm -rf`, `mv`, a Python script writing a
//! binary file, `chmod`, symlinks, an empty folder) is rewound to each of its checkpoints
//! and its whole tree compared with what it was then; the conversation goes back with it,
//! and the next reply's request holds the conversation as of the checkpoint.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::*;

/// Every path under `root` as (kind, mode, content or link target), links not followed.
fn tree(root: &Path) -> BTreeMap<String, (char, u32, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (char, u32, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.mode() & 0o7777;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, ('l', 0, target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                out.insert(rel, ('d', mode, Vec::new()));
                walk(root, &path, out);
            } else {
                out.insert(rel, ('f', mode, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

const FIRST: &str = "mkdir -p src empty && printf 'one\\ntwo\\n' > src/a.txt && chmod 600 src/a.txt \
    && ln -s src/a.txt link && python3 -c 'open(\"blob.bin\",\"wb\").write(bytes(range(256)))'";
const SECOND: &str = "sed -i 's/two/TWO/' src/a.txt && rm -rf empty && mv src/a.txt src/b.txt \
    && chmod 755 src/b.txt && ln -sfn src/b.txt link && python3 -c 'open(\"blob.bin\",\"wb\").write(bytes(range(255,-1,-1)))' \
    && mkdir -p new/deeper";

#[tokio::test]
async fn a_thread_goes_back_to_any_checkpoint_with_its_files_and_conversation() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let cove = Cove::new(wire).await;
        let ws = cove.workspace.clone();
        let llm = &cove.llm;
        let t0 = tree(&ws);
        llm.push(Turn::text("Writing.").call("execute_command", json!({"command": FIRST})));
        llm.push(Turn::text("").call("complete", json!({"text": "first done"})));
        let out = cove.start_task("Make the first version.", "native").await;
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let thread = thread_of(&events(&out));
        let t1 = tree(&ws);

        llm.push(Turn::text("Changing.").call("execute_command", json!({"command": SECOND})));
        llm.push(Turn::text("").call("complete", json!({"text": "second done"})));
        let out = cove
            .run(&["--json", "reply", &thread, "Now the second version."])
            .await;
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let t2 = tree(&ws);
        assert_ne!(t1, t2);

        // A checkpoint as each run started, and after each command; none after `complete`.
        let listed = events(&cove.run(&["--json", "checkpoints", &thread]).await);
        let reasons: Vec<&str> = listed
            .iter()
            .map(|c| c["reason"].as_str().unwrap())
            .collect();
        assert_eq!(
            reasons,
            [
                "run start",
                "after execute_command",
                "run start",
                "after execute_command"
            ],
            "{wire:?}"
        );
        let id = |i: usize| listed[i]["checkpoint"].as_str().unwrap().to_string();
        assert_eq!(
            listed[1]["changed"], 3,
            "a file, a link and a binary: {}",
            listed[1]
        );

        // What the second run changed.
        let diff = cove.run(&["diff", &thread, &id(2)]).await;
        assert_eq!(diff.status.code(), Some(0), "{}", explain(&diff));
        let text = String::from_utf8_lossy(&diff.stdout);
        assert!(
            text.contains("+ src/b.txt")
                && text.contains("- src/a.txt")
                && text.contains("- empty"),
            "{text}"
        );

        // Back to where the second run began: the files of the first, the conversation too.
        let back = cove.run(&["--json", "rewind", &thread, &id(2)]).await;
        assert_eq!(back.status.code(), Some(0), "{}", explain(&back));
        assert_eq!(
            tree(&ws),
            t1,
            "{wire:?}: the files as the second run found them"
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
        assert!(
            !shown
                .iter()
                .any(|m| m.to_string().contains("Now the second version."))
        );
        let all = messages(&cove.run(&["--json", "show", &thread, "--all"]).await);
        assert!(
            all.iter()
                .any(|m| m["branch"] == 1 && m.to_string().contains("Now the second version."))
        );

        // The next reply goes on from there: the model never sees the branch left aside.
        llm.push(Turn::text("").call("complete", json!({"text": "other way"})));
        let out = cove
            .run(&["--json", "reply", &thread, "Try it another way."])
            .await;
        assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
        let request = llm.received().last().unwrap().all_text();
        assert!(request.contains("Make the first version.") && request.contains("first done"));
        assert!(request.contains("Try it another way."));
        assert!(
            !request.contains("Now the second version.") && !request.contains("second done"),
            "{request}"
        );

        // As a person reads them.
        let text = cove.run(&["checkpoints", &thread]).await;
        let text = String::from_utf8_lossy(&text.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[0].starts_with(&id(0)) && lines[0].contains("run start"),
            "{text}"
        );
        assert!(
            lines[1].contains("after execute_command") && lines[1].contains("3 changed"),
            "{text}"
        );
        let shown = cove.run(&["show", &thread]).await;
        let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
        assert!(
            shown.contains("left aside by a rewind: cove show"),
            "{shown}"
        );
        assert!(!shown.contains("Now the second version."), "{shown}");
        let all = cove.run(&["show", &thread, "--all"]).await;
        let all = String::from_utf8_lossy(&all.stdout).into_owned();
        assert!(all.contains("[left by rewind 1]"), "{all}");

        // Each checkpoint gives back its tree: the end of the second run, the start.
        let files = cove
            .run(&["--json", "rewind", &thread, &id(3), "--files-only"])
            .await;
        assert_eq!(files.status.code(), Some(0), "{}", explain(&files));
        assert_eq!(
            tree(&ws),
            t2,
            "{wire:?}: the files after the second command"
        );
        let first = cove
            .run(&["--json", "rewind", &thread, &id(0), "--files-only"])
            .await;
        assert_eq!(first.status.code(), Some(0), "{}", explain(&first));
        assert_eq!(tree(&ws), t0, "{wire:?}: the workspace before anything");

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
