//! Skills through the `cove` binary: listed in the prompt, loaded by the agent, their files
//! copied into the sandbox and their script run there.

use std::os::unix::fs::PermissionsExt;

use cove_harness::Turn;
use cove_harness::llm::Wire;
use serde_json::json;

use super::{Cove, events, explain};

const SKILL_MD: &str = "---
name: csv-stats
description: >
  Count the rows of CSV files
  with the bundled script.
license: Apache-2.0
metadata:
  author: cove-tests
---
# CSV stats

Run `./scripts/stats.sh FILE` from this folder's parent workspace path; it prints the rows.
See references/notes.md for the format.
";

fn write_skills(cove: &Cove) {
    let skills = cove.home.path().join("config/cove/skills");
    let skill = skills.join("csv-stats");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(skill.join("SKILL.md"), SKILL_MD).unwrap();
    let script = skill.join("scripts/stats.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"$(wc -l < \"$1\") rows in $1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(skill.join("references/notes.md"), "One row per line.\n").unwrap();
    std::fs::create_dir_all(skills.join("broken")).unwrap();
    std::fs::write(skills.join("broken/SKILL.md"), "# Just a heading\n").unwrap();
}

#[tokio::test]
async fn a_skill_is_listed_loaded_into_the_sandbox_and_its_script_run() {
    for (wire, mode) in [(Wire::Anthropic, "native"), (Wire::OpenAi, "xml")] {
        let cove = Cove::new(wire).await;
        write_skills(&cove);

        let out = cove.run(&["--json", "skills", "ls"]).await;
        assert_eq!(
            out.status.code(),
            Some(1),
            "a broken skill: {}",
            explain(&out)
        );
        let rows = events(&out);
        assert_eq!(rows.len(), 2, "{}", explain(&out));
        assert_eq!(rows[0]["name"], "csv-stats");
        assert_eq!(
            rows[0]["description"],
            "Count the rows of CSV files with the bundled script."
        );
        assert!(
            rows[1]["path"]
                .as_str()
                .unwrap()
                .ends_with("broken/SKILL.md"),
            "{}",
            rows[1]
        );
        assert!(rows[1]["problem"].as_str().unwrap().contains("frontmatter"));

        cove.llm.push_fn(|request| {
            let text = request.all_text();
            if !text.contains("- csv-stats: Count the rows of CSV files with the bundled script.") {
                return Turn::text("").call("complete", json!({"text": "NOT LISTED"}));
            }
            if text.contains("broken") {
                return Turn::text("").call("complete", json!({"text": "BROKEN LISTED"}));
            }
            Turn::text("").call("load_skill", json!({"name": "csv-stats"}))
        });
        cove.llm.push_fn(|request| {
            let text = request.last_message_text();
            if !text.contains("Run `./scripts/stats.sh FILE`") || !text.contains(".skills/csv-stats/") {
                return Turn::text("").call("complete", json!({"text": format!("NO INSTRUCTIONS: {text}")}));
            }
            Turn::text("").call(
                "execute_command",
                json!({"command": "printf 'a\\nb\\nc\\n' > data.csv && .skills/csv-stats/scripts/stats.sh data.csv"}),
            )
        });
        cove.llm.push_fn(|request| {
            let verdict = if request.last_message_text().contains("3 rows in data.csv") {
                "ran".to_string()
            } else {
                format!("NOT RUN: {}", request.last_message_text())
            };
            Turn::text("").call("complete", json!({ "text": verdict }))
        });
        let out = cove.start_task("Count the rows", mode).await;
        assert!(out.status.success(), "{}", explain(&out));
        let all = events(&out);
        let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
        assert_eq!(complete["text"], "ran", "{mode}: {}", explain(&out));
        let loaded = all.iter().find(|e| e["type"] == "skill_loaded").unwrap();
        assert_eq!(loaded["name"], "csv-stats");
        assert_eq!(loaded["path"], ".skills/csv-stats");
        assert_eq!(loaded["files"], 3);
        let copied = cove.workspace.join(".skills/csv-stats");
        assert_eq!(
            std::fs::read_to_string(copied.join("references/notes.md")).unwrap(),
            "One row per line.\n"
        );
        assert_eq!(
            std::fs::read_to_string(copied.join("SKILL.md")).unwrap(),
            SKILL_MD
        );
    }
}

#[tokio::test]
async fn without_skills_there_is_no_load_skill_tool() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push_fn(|request| {
        let tools = request.body["tools"].to_string();
        let verdict = if tools.contains("load_skill") || request.all_text().contains("## Skills") {
            "OFFERED"
        } else {
            "absent"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let out = cove.start_task("Anything", "native").await;
    assert!(out.status.success(), "{}", explain(&out));
    let all = events(&out);
    let complete = all.iter().find(|e| e["type"] == "complete").unwrap();
    assert_eq!(complete["text"], "absent");
}
