//! `cove serve`'s page at its edges, in a real headless Chromium driven as a person would:
//! what carries over from one task to the next, what a refused call shows, buttons that
//! still looked pressable once their moment had passed, what the page says while the model
//! has not answered yet, a thread opened the moment it starts, and errors in the API's words.

use std::time::Duration;

use cove_harness::Turn;
use cove_harness::llm::{Chunking, Wire};
use serde_json::json;

use super::Cove;
use super::page::{count, open_page, picture, send_message, text_of, wait};
use super::serve::Server;

/// Where an element is on the page: `[left, top, right, bottom]`.
async fn rect(tab: &mut cove_harness::person::Person, selector: &str) -> Vec<f64> {
    let found = tab
        .eval(&format!(
            "(() => {{ const r = document.querySelector({}).getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }})()",
            super::page::js(selector)
        ))
        .await
        .unwrap();
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

#[tokio::test]
async fn options_stay_in_sight_and_plan_first_is_asked_each_time() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "one"})));
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    let send_before = rect(&mut tab, "#send").await;
    tab.click("#options-toggle").await.unwrap();
    wait(&mut tab, "!document.getElementById('task-options').hidden").await;
    // Opening the options moves none of the composer's buttons: they keep one line.
    let send_after = rect(&mut tab, "#send").await;
    assert_eq!(send_before, send_after, "the Start button moved");
    let row: Vec<f64> = {
        let mut tops = Vec::new();
        for part in ["#options-toggle", "#plan-option", ".file-button", "#send"] {
            let r = rect(&mut tab, part).await;
            tops.push((r[1] + r[3]) / 2.0);
        }
        tops
    };
    assert!(
        row.iter().all(|m| (m - row[0]).abs() < 6.0),
        "the composer's buttons are on one line: {row:?}"
    );
    let panel = rect(&mut tab, "#task-options").await;
    assert!(
        panel[3] <= send_after[1],
        "the options sit above the buttons"
    );
    tab.click("#task-model").await.unwrap();
    tab.type_text("openai/scripted").await.unwrap();
    tab.click("#plan-first").await.unwrap();
    picture(&mut tab, "serve-options.png").await;
    send_message(&mut tab, "First task").await;
    wait(&mut tab, "!!document.querySelector('.card.final')").await;

    // The next task: planning first is asked again, the chosen model stays and says so.
    tab.click("#new-thread").await.unwrap();
    wait(
        &mut tab,
        "document.getElementById('thread-title').textContent === 'New task'",
    )
    .await;
    assert_eq!(
        tab.eval("document.getElementById('plan-first').checked")
            .await
            .unwrap(),
        json!(false)
    );
    tab.click("#options-toggle").await.unwrap();
    wait(&mut tab, "document.getElementById('task-options').hidden").await;
    assert_eq!(
        text_of(&mut tab, "#options-toggle").await,
        "Options · openai/scripted"
    );
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_refused_call_an_approval_and_an_answered_question_read_as_what_happened() {
    let cove = Cove::new(Wire::OpenAi).await;
    // A model that takes its time: the page shows it is at work before the first word.
    cove.llm
        .set_chunking(Chunking::Paced(Duration::from_millis(150)));
    cove.llm.push(Turn::text("Here is my plan.").call(
        "create_plan",
        json!({"goal": "Count the files", "steps": [{"id": "1", "description": "Run ls"}]}),
    ));
    cove.llm.push_fn(|request| {
        if !request.all_text().contains("I approve the plan") {
            return Turn::text("").call("complete", json!({"text": "NOT APPROVED"}));
        }
        Turn::text("Running it.").call(
            "execute_command",
            json!({"command": "ls -la /refused-directory-xyz"}),
        )
    });
    cove.llm
        .push(Turn::text("").call("ask", json!({"text": "May I look elsewhere?"})));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "done"})));
    let server = Server::start(&cove, &["--permissions", "ask"]).await;
    let mut tab = open_page(&server).await;
    tab.click("#plan-first").await.unwrap();
    send_message(&mut tab, "Count the files").await;
    wait(
        &mut tab,
        "!!document.getElementById('thinking') && !document.querySelector('.msg.assistant')",
    )
    .await;
    wait(&mut tab, "document.getElementById('dialog').open").await;
    assert!(
        !text_of(&mut tab, "#transcript").await.contains("Thinking"),
        "the sign of life goes once the model has spoken"
    );
    tab.click("#dialog-actions .primary").await.unwrap();

    // The approval reads as what the person did, not as the words the model was given.
    wait(
        &mut tab,
        "Array.from(document.querySelectorAll('.note.decision')).some(n => n.textContent === 'You approved the plan (version 1).')",
    )
    .await;
    assert!(
        !text_of(&mut tab, ".msg.user").await.contains("I approve"),
        "{}",
        text_of(&mut tab, ".msg.user").await
    );

    // The command needs permission: denied, its card still shows what it was.
    wait(
        &mut tab,
        "document.getElementById('dialog').open && document.getElementById('dialog-title').textContent.startsWith('Allow')",
    )
    .await;
    tab.eval("Array.from(document.querySelectorAll('#dialog-actions button')).find(b => b.textContent === 'Deny').click()")
        .await
        .unwrap();
    wait(
        &mut tab,
        "!!document.querySelector('details.card.tool.failed[data-tool=\"execute_command\"]')",
    )
    .await;
    let card = "details.card.tool.failed[data-tool=\"execute_command\"]";
    assert!(
        text_of(&mut tab, &format!("{card} summary .key"))
            .await
            .contains("ls -la /refused-directory-xyz")
    );
    let body = text_of(&mut tab, &format!("{card} .body")).await;
    assert!(
        body.contains("Arguments")
            && body.contains("/refused-directory-xyz")
            && body.contains("Not run"),
        "{body}"
    );

    // The question, answered in its dialog: its card's button no longer offers to answer.
    wait(
        &mut tab,
        "document.getElementById('dialog').open && document.getElementById('dialog-title').textContent === 'The agent asks'",
    )
    .await;
    tab.click("#dialog-answer").await.unwrap();
    tab.type_text("Yes").await.unwrap();
    tab.click("#dialog-actions .primary").await.unwrap();
    wait(&mut tab, "!!document.querySelector('.card.final')").await;
    wait(
        &mut tab,
        "(() => { const b = document.querySelector('.card.ask .buttons button'); return !!b && b.disabled && b.textContent === 'Answered'; })()",
    )
    .await;
    // A finished thread's browser cannot be taken over: the button says why it is off.
    tab.click("#tab-browser").await.unwrap();
    wait(
        &mut tab,
        "document.getElementById('takeover').disabled && !document.getElementById('takeover-why').hidden",
    )
    .await;
    assert_eq!(count(&mut tab, "#thinking").await, 0);
    picture(&mut tab, "serve-refused.png").await;
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_thread_opened_the_moment_it_starts_shows_each_event_once() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .set_chunking(Chunking::Paced(Duration::from_millis(20)));
    cove.llm
        .push(Turn::text("Working on it, step by step.").call("complete", json!({"text": "done"})));
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    // Another client starts the thread; this page opens it at once.
    let id = server.create(json!({"task": "Start and show"})).await;
    tab.goto(&format!("{}/#thread={id}", server.base))
        .await
        .unwrap();
    // Only the address's fragment changed: load the page afresh, as a link opened would.
    tab.reload().await.unwrap();
    wait(&mut tab, "!!document.querySelector('.card.final')").await;
    assert_eq!(
        text_of(&mut tab, ".divider")
            .await
            .matches("run started")
            .count(),
        1,
        "{}",
        text_of(&mut tab, ".divider").await
    );
    assert_eq!(count(&mut tab, ".msg.user").await, 1);
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn an_error_about_a_choice_is_said_in_the_pages_words() {
    let cove = Cove::new(Wire::OpenAi).await;
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        "[serve]\nsandboxes = [\"dev-*\"]\n",
    )
    .unwrap();
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    tab.click("#options-toggle").await.unwrap();
    tab.click("#task-sandbox").await.unwrap();
    tab.type_text("dev-9").await.unwrap();
    send_message(&mut tab, "Anything").await;
    wait(&mut tab, "!document.getElementById('banner').hidden").await;
    let said = text_of(&mut tab, "#banner").await;
    assert!(
        said.contains("sandbox must be") && !said.contains("--"),
        "{said}"
    );
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_terminal_thread_continued_on_the_server_shows_the_new_run_once() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "listed"})));
    let out = cove.start_task("List what is there", "native").await;
    assert_eq!(out.status.code(), Some(0), "{}", super::explain(&out));
    let thread = super::thread_of(&super::events(&out));
    cove.llm
        .set_chunking(Chunking::Paced(Duration::from_millis(20)));
    cove.llm
        .push(Turn::text("Once more, slowly.").call("complete", json!({"text": "again"})));
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    // The person answers from another client; this page opens the thread at once, before
    // the new run has said anything.
    let (status, said) = server
        .post(
            &format!("/v1/threads/{thread}/reply"),
            json!({"text": "Once more"}),
        )
        .await;
    assert!(status < 300, "{said}");
    tab.goto(&format!("{}/#thread={thread}", server.base))
        .await
        .unwrap();
    tab.reload().await.unwrap();
    wait(
        &mut tab,
        "(document.querySelector('.card.final:last-of-type') || {}).textContent?.includes('again')",
    )
    .await;
    let dividers = text_of(&mut tab, ".divider").await;
    assert_eq!(dividers.matches("run started").count(), 1, "{dividers}");
    assert_eq!(
        text_of(&mut tab, ".msg.user")
            .await
            .matches("Once more")
            .count(),
        1
    );
    tab.close().await;
    server.kill().await;
}
