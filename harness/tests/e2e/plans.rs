//! A plan proposed, rejected, edited, approved and carried out.

use super::*;

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
