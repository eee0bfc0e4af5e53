//! Permission requests answered from another terminal, read-only mode, and decisions applied on resume.

use super::*;

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
