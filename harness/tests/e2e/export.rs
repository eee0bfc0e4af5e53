//! `cove export`: a thread that planned, asked for a permission, ran a command and browsed
//! is written as one HTML page that a browser with no network shows whole (every step, the
//! screenshot), as Markdown and as JSON; the key the task and a command repeated is in none.

use cove_harness::person::Person;

use super::*;

/// The model key of this test: the task and a command's output repeat it.
const KEY: &str = "sk-cove-export-0123456789abcdef";

#[tokio::test]
async fn a_thread_is_exported_whole_and_opens_with_no_network_and_no_secret() {
    let site = FixtureSite::start().await.unwrap();
    let cove = Cove::new(Wire::OpenAi).await;
    cove.share_port(site.port());
    let llm = &cove.llm;
    llm.push(Turn::text("A plan first.").call(
        "create_plan",
        json!({"goal": "Check the counter", "steps": [{"id": "1", "description": "Open it"}]}),
    ));
    llm.push(
        Turn::text("Writing the key down.")
            .call("execute_command", json!({"command": format!("echo {KEY}")})),
    );
    llm.push(Turn::text("").call(
        "browser_navigate_to",
        json!({"url": site.url("counter.html")}),
    ));
    llm.push(Turn::text("").call("complete", json!({"text": "The counter is there."})));

    let ws = cove.workspace.to_str().unwrap().to_string();
    let with_key = |args: &[&str]| {
        let mut cmd = cove.command(args);
        cmd.env("OPENAI_API_KEY", KEY);
        cmd
    };
    let task = format!("Open the counter (my key is {KEY}).");
    let out = with_key(&[
        "--json",
        "run",
        &task,
        "--plan",
        "--model",
        cove.model(),
        "--workspace",
        &ws,
        "--no-prompt",
        "--sandbox",
        "host",
    ])
    .output()
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(8), "{}", explain(&out));
    let thread = thread_of(&events(&out));
    let out = with_key(&["--json", "approve", &thread, "--no-prompt"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(9), "{}", explain(&out));
    let asked = events(&out)
        .into_iter()
        .find(|e| e["type"] == "permission_request")
        .unwrap();
    let request = asked["request_id"].as_str().unwrap();
    let out = with_key(&["permit", &thread, request, "allow_once"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", explain(&out));
    let out = with_key(&["--json", "resume", &thread, "--no-prompt"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", explain(&out));

    // JSON, to standard output.
    let out = with_key(&["export", &thread, "--format", "json", "-o", "-"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", explain(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains(KEY), "the key is in the JSON export");
    let json: Value = serde_json::from_str(&text).unwrap();
    let steps = json["steps"].as_array().unwrap();
    let of = |kind: &'static str| steps.iter().filter(move |s| s["type"] == kind);
    assert_eq!(
        of("user").next().unwrap()["text"],
        "Open the counter (my key is [redacted]).",
        "{json:#}"
    );
    assert_eq!(of("plan").next().unwrap()["version"], 1);
    let permission = of("permission").next().unwrap();
    assert_eq!(permission["decision"], "allow_once", "{permission}");
    assert_eq!(permission["tool"], "execute_command");
    let command = of("tool").find(|s| s["tool"] == "execute_command").unwrap();
    assert_eq!(command["ok"], true, "{command}");
    assert!(
        command["output"].as_str().unwrap().contains("[redacted]"),
        "{command}"
    );
    let browsed = of("tool")
        .find(|s| s["tool"] == "browser_navigate_to")
        .unwrap();
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(browsed["screenshot"].as_str().expect("a screenshot kept"))
        .unwrap();
    assert_eq!(&jpeg[..2], [0xFF, 0xD8], "a JPEG");
    assert_eq!(
        of("complete").next().unwrap()["text"],
        "The counter is there."
    );
    assert!(
        json["usage"]["calls"].as_u64().unwrap() >= 4,
        "{}",
        json["usage"]
    );
    assert_eq!(json["plans"][0]["status"], "approved", "{}", json["plans"]);

    // Markdown, its name saying so.
    let md = cove.home.path().join("thread.md");
    let out = with_key(&["--json", "export", &thread, "-o", md.to_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", explain(&out));
    let written: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(written["format"], "md");
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(!text.contains(KEY));
    assert!(text.starts_with("# Open the counter"), "{text}");
    for part in [
        "**Permission asked for execute_command:**",
        "Answer: **allow_once**",
        "✓ **browser_navigate_to**",
        "**Done:** The counter is there.",
    ] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }

    // HTML, by default, opened by a browser with no network.
    let out = with_key(&["export", &thread])
        .current_dir(cove.home.path())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", explain(&out));
    let page = cove.home.path().join(format!("{thread}.html"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(KEY), "the key is in the page");
    assert!(!html.contains("<script"), "the page runs nothing");
    let mut person = Person::launch().await.unwrap();
    person.offline().await.unwrap();
    person
        .goto(&format!("file://{}", page.display()))
        .await
        .unwrap();
    let seen = person
        .eval(
            "JSON.stringify({
                steps: document.querySelectorAll('.step').length,
                text: document.body.innerText,
                pictures: [...document.images].map((i) => i.complete && i.naturalWidth > 0),
            })",
        )
        .await
        .unwrap();
    let seen: Value = serde_json::from_str(seen.as_str().unwrap()).unwrap();
    let shown = seen["text"].as_str().unwrap();
    assert!(
        seen["steps"].as_u64().unwrap() >= steps.len() as u64,
        "{} of {} steps shown",
        seen["steps"],
        steps.len()
    );
    for part in [
        "Open the counter (my key is [redacted]).",
        "Plan proposed (version 1)",
        "Permission asked for execute_command",
        "allow_once",
        "browser_navigate_to",
        "The counter is there.",
    ] {
        assert!(shown.contains(part), "{part} not shown:\n{shown}");
    }
    assert_eq!(seen["pictures"], json!([true]), "the screenshot shows");
    let requested = person.requests().await.unwrap();
    assert!(
        requested
            .iter()
            .all(|url| url.starts_with("file:") || url.starts_with("data:")),
        "the page fetched {requested:?}"
    );
    person.close().await;
}
