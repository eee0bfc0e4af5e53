//! A person takes over the agent's browser and hands it back; the agent serves a site and shows it.

use super::*;

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
