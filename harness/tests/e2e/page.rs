//! `cove serve`'s page in a real headless Chromium, driven as a person would (mouse, keys,
//! the file picker), against the scripted model: a task typed and started, its text seen
//! streaming in, tool cards with their results and the browser's picture, a question
//! answered in its dialog, files previewed, the conversation continued; a plan approved and
//! a permission answered with two tabs open (answered once); a reload mid-run that shows
//! every message once; a narrow window; no request to any other host.
//!
//! With `COVE_SCREENSHOTS=DIR` the tests save the README's pictures of the main views there.

use std::time::Duration;

use cove_harness::llm::Wire;
use cove_harness::person::Person;
use cove_harness::{Chunking, FixtureSite, Turn};
use serde_json::{Value, json};

use super::Cove;
use super::serve::Server;

const WAIT: Duration = Duration::from_secs(60);

/// A browser logged in to `server` through its login link, on the page.
pub(super) async fn open_page(server: &Server) -> Person {
    let mut tab = Person::launch().await.unwrap();
    tab.resize(1400, 900).await.unwrap();
    tab.watch_requests().await.unwrap();
    tab.goto(&server.login).await.unwrap();
    tab.wait_until(
        "!!document.getElementById('composer-text') && !!window.fetch",
        WAIT,
    )
    .await
    .unwrap();
    tab
}

/// A second browser, logged in as a person does without the (one-time) login link: the
/// token typed into the login page.
pub(super) async fn log_in_with_token(server: &Server) -> Person {
    let mut tab = Person::launch().await.unwrap();
    tab.resize(1400, 900).await.unwrap();
    tab.goto(&server.base).await.unwrap();
    wait(&mut tab, "!!document.getElementById('token')").await;
    tab.click("#token").await.unwrap();
    tab.type_text(&server.token).await.unwrap();
    tab.press("Enter", false).await.unwrap();
    wait(&mut tab, "!!document.getElementById('composer-text')").await;
    tab
}

/// `expression` as JS text.
pub(super) fn js(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

pub(super) async fn wait(tab: &mut Person, expression: &str) {
    if let Err(e) = tab.wait_until(expression, WAIT).await {
        let body = tab
            .eval("document.body.innerText.slice(0, 3000)")
            .await
            .unwrap_or(Value::Null);
        panic!(
            "{e}\nthe page shows:\n{}",
            body.as_str().unwrap_or_default()
        );
    }
}

/// Text of the elements `selector` matches, joined.
pub(super) async fn text_of(tab: &mut Person, selector: &str) -> String {
    tab.eval(&format!(
        "Array.from(document.querySelectorAll({})).map(e => e.textContent).join('\\n')",
        js(selector)
    ))
    .await
    .unwrap()
    .as_str()
    .unwrap_or_default()
    .to_string()
}

pub(super) async fn count(tab: &mut Person, selector: &str) -> u64 {
    tab.eval(&format!(
        "document.querySelectorAll({}).length",
        js(selector)
    ))
    .await
    .unwrap()
    .as_u64()
    .unwrap()
}

/// Types `text` into the message box and sends it with Enter.
pub(super) async fn send_message(tab: &mut Person, text: &str) {
    tab.click("#composer-text").await.unwrap();
    tab.type_text(text).await.unwrap();
    tab.press("Enter", false).await.unwrap();
}

/// Saves what the tab shows as `name` when COVE_SCREENSHOTS names a folder.
pub(super) async fn picture(tab: &mut Person, name: &str) {
    if let Some(dir) = std::env::var_os("COVE_SCREENSHOTS") {
        let png = tab.screenshot().await.unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join(name), png).unwrap();
    }
}

/// Every request the page made went to the server.
async fn only_the_server(tab: &mut Person, server: &Server) {
    let requests = tab.requests().await.unwrap();
    assert!(!requests.is_empty());
    let elsewhere: Vec<&String> = requests
        .iter()
        .filter(|u| !u.starts_with(&format!("{}/", server.base)) && !u.starts_with("data:"))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "requests to other hosts: {elsewhere:?}"
    );
}

#[tokio::test]
async fn a_task_streams_its_text_and_tool_cards_asks_in_a_dialog_and_shows_its_files() {
    let cove = Cove::new(Wire::OpenAi).await;
    let site = FixtureSite::start().await.unwrap();
    cove.share_port(site.port());
    // A model that takes its time, so the page can be seen filling in.
    cove.llm
        .set_chunking(Chunking::Paced(Duration::from_millis(25)));
    cove.llm.push(
        Turn::text("I will write the report first, then look at the page you named.")
            .call(
                "create_file",
                json!({"file_path": "report.md", "file_contents": "# Report\n\nThe fence is **blue**.\n"}),
            )
            .call("browser_navigate_to", json!({"url": site.url("form.html")})),
    );
    cove.llm.push(
        Turn::text("One question before the chart.")
            .call("ask", json!({"text": "Which colour should the chart be?"})),
    );
    cove.llm.push_fn(|request| {
        let verdict = if request.last_message_text().contains("green") {
            "The report is in report.md; the chart will be green."
        } else {
            "NO ANSWER"
        };
        Turn::text("Done.").call(
            "complete",
            json!({"text": verdict, "attachments": ["report.md"]}),
        )
    });
    cove.llm.push_fn(|request| {
        let verdict = if request.last_message_text().contains("summary") {
            "Summary added."
        } else {
            "NOT CONTINUED"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    // A model the price table knows, so the run's end can say what it cost (the one the
    // scripted server says it serves is priced by no one).
    let server = Server::start(&cove, &["--model", "openai/gpt-4o-mini"]).await;
    let mut tab = open_page(&server).await;

    // Every length the agent's text had as it grew.
    tab.eval(
        "window.lengths = []; new MutationObserver(() => { const m = document.querySelector('.msg.assistant'); if (m) window.lengths.push(m.textContent.length); }).observe(document.getElementById('transcript'), {subtree: true, childList: true, characterData: true}); true",
    )
    .await
    .unwrap();
    send_message(&mut tab, "Write a report about the fence").await;
    wait(
        &mut tab,
        "Array.from(document.querySelectorAll('.msg.user')).some(m => m.textContent === 'Write a report about the fence')",
    )
    .await;
    wait(
        &mut tab,
        "!!document.querySelector('details.card.tool.done[data-tool=\"create_file\"]')",
    )
    .await;
    let lengths: Vec<u64> = tab
        .eval("window.lengths")
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    let full = "I will write the report first, then look at the page you named.".len() as u64;
    let partial: std::collections::BTreeSet<u64> = lengths
        .iter()
        .copied()
        .filter(|l| *l > 0 && *l < full)
        .collect();
    assert!(
        partial.len() >= 2,
        "the text was seen growing, not all at once: {lengths:?}"
    );

    // The question, in a dialog; answered there.
    wait(
        &mut tab,
        "document.getElementById('dialog').open && document.getElementById('dialog-title').textContent === 'The agent asks'",
    )
    .await;
    assert!(
        text_of(&mut tab, "#dialog-body")
            .await
            .contains("Which colour should the chart be?")
    );
    picture(&mut tab, "serve-ask.png").await;
    tab.type_text("green, please").await.unwrap();
    tab.click("#dialog-actions .primary").await.unwrap();
    wait(&mut tab, "!document.getElementById('dialog').open").await;
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('the chart will be green')",
    )
    .await;
    // The run's end says what its model calls took and cost.
    wait(
        &mut tab,
        "Array.from(document.querySelectorAll('.divider')).some(d => /run ended · completed · \\d+ calls? · [\\d,]+ tokens in .* out · \\$\\d+\\.\\d{4} · /.test(d.textContent))",
    )
    .await;

    // The browser call's card shows the browser as the call left it.
    tab.click("details.card.tool[data-tool=\"browser_navigate_to\"] summary")
        .await
        .unwrap();
    wait(
        &mut tab,
        "(() => { const i = document.querySelector('details.card.tool[data-tool=\"browser_navigate_to\"] img.shot'); return !!i && i.complete && i.naturalWidth > 100; })()",
    )
    .await;
    // The card's result is the state the model read.
    assert!(
        text_of(
            &mut tab,
            "details.card.tool[data-tool=\"browser_navigate_to\"] .result"
        )
        .await
        .contains("form.html")
    );
    picture(&mut tab, "serve-run.png").await;

    // The workspace's files: listed, previewed, downloadable.
    tab.click("#tab-files").await.unwrap();
    wait(
        &mut tab,
        "Array.from(document.querySelectorAll('#file-list button')).some(b => b.textContent === 'report.md')",
    )
    .await;
    tab.eval("Array.from(document.querySelectorAll('#file-list button')).find(b => b.textContent === 'report.md').click()")
        .await
        .unwrap();
    wait(
        &mut tab,
        "(document.querySelector('#file-preview pre') || {}).textContent?.includes('The fence is **blue**')",
    )
    .await;
    let download = tab
        .eval("document.querySelector('#file-list a').getAttribute('href')")
        .await
        .unwrap();
    assert!(
        download.as_str().unwrap().ends_with("download=true"),
        "{download}"
    );
    picture(&mut tab, "serve-files.png").await;

    // The browser panel: the latest picture, and the takeover needs a running thread.
    tab.click("#tab-browser").await.unwrap();
    wait(
        &mut tab,
        "(() => { const i = document.getElementById('browser-shot'); return !i.hidden && i.naturalWidth > 100; })()",
    )
    .await;

    // The conversation goes on from the box once the run has ended.
    send_message(&mut tab, "Thanks; add a summary").await;
    wait(
        &mut tab,
        "Array.from(document.querySelectorAll('.card.final')).some(c => c.textContent.includes('Summary added.'))",
    )
    .await;
    assert_eq!(
        count(&mut tab, ".msg.user").await,
        3,
        "task, answer, message"
    );
    only_the_server(&mut tab, &server).await;
    assert!(
        cove.llm.violations().is_empty(),
        "{:?}",
        cove.llm.violations()
    );
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn two_tabs_see_the_plan_and_a_permission_and_each_is_answered_once() {
    let cove = Cove::new(Wire::Anthropic).await;
    let marker = cove.workspace.join("hello.txt");
    cove.llm.push(Turn::text("Here is my plan.").call(
        "create_plan",
        json!({"goal": "Greet the world", "steps": [{"id": "1", "description": "Write hello.txt"}, {"id": "2", "description": "Say so"}]}),
    ));
    // Longer than a line: the person is shown all of it, never a prefix.
    let command = format!(
        "echo hi > {} && echo {} > /dev/null",
        marker.display(),
        "and-then-some-more ".repeat(12).trim_end()
    );
    let whole = command.clone();
    cove.llm.push_fn(move |request| {
        if !request.all_text().contains("I approve the plan") {
            return Turn::text("").call("complete", json!({"text": "NOT APPROVED"}));
        }
        Turn::text("Starting.")
            .call(
                "update_plan",
                json!({"step_id": "1", "status": "in_progress"}),
            )
            .call("execute_command", json!({ "command": command }))
    });
    cove.llm.push(
        Turn::text("")
            .call(
                "update_plan",
                json!({"step_id": "1", "status": "completed"}),
            )
            .call(
                "update_plan",
                json!({"step_id": "2", "status": "completed"}),
            ),
    );
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "greeted"})));
    let server = Server::start(&cove, &["--permissions", "ask"]).await;
    let mut a = open_page(&server).await;

    // The second tab logs in with the API token on the login page.
    let mut b = log_in_with_token(&server).await;

    a.click("#plan-first").await.unwrap();
    send_message(&mut a, "Greet the world").await;
    wait(
        &mut a,
        "document.querySelectorAll('#threads button').length === 1",
    )
    .await;
    wait(
        &mut b,
        "document.querySelectorAll('#threads button').length === 1",
    )
    .await;
    b.click("#threads button").await.unwrap();

    // Both tabs show the plan for approval; one approves, the other's dialog goes away.
    for tab in [&mut a, &mut b] {
        wait(
            tab,
            "document.getElementById('dialog').open && document.getElementById('dialog-title').textContent === 'Approve the plan?'",
        )
        .await;
        assert!(
            text_of(tab, "#dialog-body")
                .await
                .contains("Write hello.txt")
        );
    }
    picture(&mut a, "serve-plan.png").await;
    a.click("#dialog-actions .primary").await.unwrap();

    // The permission the command needs reaches both tabs; the first answer counts.
    for tab in [&mut a, &mut b] {
        wait(
            tab,
            "document.getElementById('dialog').open && document.getElementById('dialog-title').textContent.startsWith('Allow execute_command')",
        )
        .await;
    }
    for tab in [&mut a, &mut b] {
        let shown = text_of(tab, "#dialog-body code.whole").await;
        assert_eq!(shown, format!("run `{whole}`"), "the whole command");
        assert!(
            text_of(tab, "#dialog-body ul.reasons li")
                .await
                .contains("asks before every change"),
            "the reason"
        );
    }
    picture(&mut b, "serve-permission.png").await;
    a.eval("Array.from(document.querySelectorAll('#dialog-actions button')).find(b => b.textContent === 'Allow once').click()")
        .await
        .unwrap();
    wait(&mut a, "!document.getElementById('dialog').open").await;
    // The other tab answers too, if its dialog is still open: refused, and it closes.
    b.eval("document.getElementById('dialog').open && Array.from(document.querySelectorAll('#dialog-actions button')).find(b => b.textContent === 'Deny').click(); true")
        .await
        .unwrap();
    wait(&mut b, "!document.getElementById('dialog').open").await;

    for tab in [&mut a, &mut b] {
        wait(
            tab,
            "(document.querySelector('.card.final') || {}).textContent?.includes('greeted')",
        )
        .await;
        assert!(
            text_of(tab, ".card.permission")
                .await
                .contains("Allow once"),
            "{}",
            text_of(tab, ".card.permission").await
        );
    }
    // The plan panel follows the steps.
    wait(
        &mut a,
        "document.querySelectorAll('#plan li.completed').length === 2",
    )
    .await;
    assert!(marker.exists(), "the allowed command ran");

    // Exactly one decision was taken.
    let (_, threads) = server.get("/v1/threads").await;
    let thread = threads["threads"][0]["id"].as_str().unwrap().to_string();
    let mut sse = server.stream(&thread, None).await;
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    let last = view["last_event"].as_u64().unwrap();
    let mut decided = Vec::new();
    for _ in 0..last {
        let (_, event) = sse.next().await;
        if event["type"] == "permission_decided" {
            decided.push(event["decision"].clone());
        }
    }
    assert_eq!(decided, vec![json!("allow_once")]);
    only_the_server(&mut a, &server).await;
    a.close().await;
    b.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_reload_mid_run_shows_every_message_once_and_files_attach_from_the_picker() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push(
        Turn::text("Reading your file.")
            .call("read_file", json!({"file_path": "uploads/data.csv"})),
    );
    cove.llm.push(Turn::text("Now the long part.").call(
        "execute_command",
        json!({"command": "sleep 3 && echo slept", "timeout": 60}),
    ));
    cove.llm.push_fn(|request| {
        let verdict = if request.all_text().contains("1,2") && request.all_text().contains("slept")
        {
            "read and slept"
        } else {
            "MISSING"
        };
        Turn::text("Still here.").call("complete", json!({ "text": verdict }))
    });
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;

    let file = cove.home.path().join("data.csv");
    std::fs::write(&file, "a,b\n1,2\n").unwrap();
    tab.choose_files("#attach", &[&file]).await.unwrap();
    // The model and the sandbox, chosen under Options.
    tab.click("#options-toggle").await.unwrap();
    tab.click("#task-model").await.unwrap();
    tab.type_text("openai/scripted").await.unwrap();
    tab.click("#task-sandbox").await.unwrap();
    tab.type_text("local").await.unwrap();
    wait(
        &mut tab,
        "document.querySelector('#attached').textContent.includes('data.csv')",
    )
    .await;
    send_message(&mut tab, "Sum the columns of the file").await;
    wait(
        &mut tab,
        "!!document.querySelector('details.card.tool.running[data-tool=\"execute_command\"]')",
    )
    .await;
    // The task's message names where the file landed.
    assert!(
        text_of(&mut tab, ".msg.user")
            .await
            .contains("uploads/data.csv")
    );

    // Reloaded while the command runs: the run goes on, and the page shows it all once.
    tab.reload().await.unwrap();
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('read and slept')",
    )
    .await;
    assert_eq!(count(&mut tab, ".msg.user").await, 1);
    assert!(
        text_of(&mut tab, ".divider")
            .await
            .contains("openai/scripted")
    );
    assert_eq!(
        count(&mut tab, "details.card.tool").await,
        2,
        "{}",
        text_of(&mut tab, "details.card.tool summary").await
    );
    assert_eq!(count(&mut tab, ".card.final").await, 1);
    let said = text_of(&mut tab, ".msg.assistant").await;
    for line in ["Reading your file.", "Now the long part.", "Still here."] {
        assert_eq!(said.matches(line).count(), 1, "{line} in {said}");
    }
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("uploads/data.csv")).unwrap(),
        "a,b\n1,2\n"
    );

    // The panels by keyboard: the tab list moves with the arrow keys.
    tab.eval("document.getElementById('tab-plan').focus()")
        .await
        .unwrap();
    tab.press("ArrowRight", false).await.unwrap();
    wait(&mut tab, "!document.getElementById('panel-files').hidden && document.activeElement.id === 'tab-files'").await;
    wait(
        &mut tab,
        "document.querySelector('#file-list').textContent.includes('uploads/data.csv')",
    )
    .await;

    // A narrow window: one column, the threads behind a button.
    tab.resize(420, 820).await.unwrap();
    wait(
        &mut tab,
        "getComputedStyle(document.getElementById('sidebar')).display === 'none'",
    )
    .await;
    picture(&mut tab, "serve-narrow.png").await;
    tab.click("#toggle-threads").await.unwrap();
    wait(
        &mut tab,
        "getComputedStyle(document.getElementById('sidebar')).display !== 'none'",
    )
    .await;
    only_the_server(&mut tab, &server).await;
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn without_a_session_the_page_says_how_to_log_in() {
    let cove = Cove::new(Wire::OpenAi).await;
    let server = Server::start(&cove, &[]).await;
    let mut tab = Person::launch().await.unwrap();
    tab.goto(&server.base).await.unwrap();
    wait(&mut tab, "!!document.getElementById('why')").await;
    let shown = text_of(&mut tab, "body").await;
    assert!(shown.contains("login?token="), "{shown}");
    assert!(shown.contains("API token"), "{shown}");
    // A wrong token is refused, and the page says so.
    tab.click("#token").await.unwrap();
    tab.type_text("not-the-token").await.unwrap();
    tab.press("Enter", false).await.unwrap();
    wait(
        &mut tab,
        "(document.getElementById('why') || {}).textContent === \"That is not this server's API token.\"",
    )
    .await;
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_thread_run_in_the_terminal_shows_its_stored_conversation() {
    let cove = Cove::new(Wire::Anthropic).await;
    cove.llm
        .push(Turn::text("Listing the workspace.").call("list_files", json!({})));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "listed"})));
    let out = cove.start_task("List what is there", "xml").await;
    assert_eq!(out.status.code(), Some(0), "{}", super::explain(&out));

    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    wait(
        &mut tab,
        "document.querySelectorAll('#threads button').length === 1",
    )
    .await;
    tab.click("#threads button").await.unwrap();
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('listed')",
    )
    .await;
    assert_eq!(text_of(&mut tab, ".msg.user").await, "List what is there");
    let said = text_of(&mut tab, ".msg.assistant").await;
    assert!(said.contains("Listing the workspace."), "{said}");
    assert!(!said.contains("function_calls"), "no XML shown: {said}");
    // The agent's text comes before the call it made.
    let order = tab
        .eval("(() => { const t = Array.from(document.querySelectorAll('.msg.assistant')).find(m => m.textContent.includes('Listing')); const c = document.querySelector('details.card.tool.done[data-tool=\"list_files\"]'); return !!t && !!c && !!(t.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING); })()")
        .await
        .unwrap();
    assert_eq!(order, Value::Bool(true));
    tab.close().await;
    server.kill().await;
}

#[tokio::test]
async fn the_agent_asks_for_its_browser_and_the_page_gives_the_takeover() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push(Turn::text("I need a hand.").call(
        "web_browser_takeover",
        json!({"text": "Please solve the captcha"}),
    ));
    cove.llm.push_fn(|request| {
        let verdict = if request.all_text().contains("Solved it") {
            "thanks for the help"
        } else {
            "NO NOTE"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    send_message(&mut tab, "Sign me up").await;
    wait(
        &mut tab,
        "document.getElementById('dialog').open && document.getElementById('dialog-title').textContent === 'The agent needs you in its browser'",
    )
    .await;
    assert!(
        text_of(&mut tab, "#dialog-body")
            .await
            .contains("Please solve the captcha")
    );
    tab.click("#dialog-actions .primary").await.unwrap();
    wait(
        &mut tab,
        "!!document.querySelector('#dialog-body a.takeover-link')",
    )
    .await;
    let link = tab
        .eval("document.querySelector('#dialog-body a.takeover-link').href")
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    assert!(link.contains("/takeover?token="), "{link}");
    let opened = reqwest::get(&link).await.unwrap();
    assert_eq!(opened.status(), 200, "the link opens the takeover page");

    // The browser panel's button gives the same takeover.
    tab.press("Escape", false).await.unwrap();
    wait(&mut tab, "!document.getElementById('dialog').open").await;
    tab.click("#tab-browser").await.unwrap();
    tab.click("#takeover").await.unwrap();
    wait(
        &mut tab,
        "!!document.querySelector('#takeover-link a.takeover-link')",
    )
    .await;
    let again = tab
        .eval("document.querySelector('#takeover-link a.takeover-link').href")
        .await
        .unwrap();
    assert_eq!(again.as_str().unwrap(), link);

    // Writing to the agent hands the browser back; the run goes on.
    assert!(
        text_of(&mut tab, "#composer-hint")
            .await
            .contains("hands the browser back")
    );
    send_message(&mut tab, "Solved it").await;
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('thanks for the help')",
    )
    .await;
    only_the_server(&mut tab, &server).await;
    tab.close().await;
    server.kill().await;
}
