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
    // Whether the sign of life showed before any word of the agent's, however briefly.
    tab.eval(
        "window.sawThinking = false; new MutationObserver(() => { if (document.getElementById('thinking') && !document.querySelector('.msg.assistant')) window.sawThinking = true; }).observe(document.getElementById('transcript'), {subtree: true, childList: true}); true",
    )
    .await
    .unwrap();
    send_message(&mut tab, "Count the files").await;
    wait(&mut tab, "document.getElementById('dialog').open").await;
    assert_eq!(
        tab.eval("window.sawThinking").await.unwrap(),
        json!(true),
        "Thinking… showed before the first word"
    );
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

#[tokio::test]
async fn a_thread_is_deleted_from_the_page_and_leaves_every_tab() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "first"})));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "second"})));
    let server = Server::start(&cove, &[]).await;
    let keep = server.create(json!({"task": "Keep this one"})).await;
    let mut tab = open_page(&server).await;
    send_message(&mut tab, "Delete this one").await;
    wait(&mut tab, "!!document.querySelector('.card.final')").await;
    let gone = tab
        .eval("decodeURIComponent(location.hash.replace('#thread=', ''))")
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    // A second browser, logged in with the token, shows the same thread.
    let mut other = super::page::log_in_with_token(&server).await;
    other
        .goto(&format!("{}/#thread={gone}", server.base))
        .await
        .unwrap();
    other.reload().await.unwrap();
    wait(&mut other, "!!document.querySelector('.card.final')").await;

    wait(&mut tab, "!document.getElementById('delete-thread').hidden").await;
    tab.click("#delete-thread").await.unwrap();
    wait(
        &mut tab,
        "document.getElementById('dialog').open && document.getElementById('dialog-title').textContent === 'Delete this thread?'",
    )
    .await;
    tab.eval("Array.from(document.querySelectorAll('#dialog-actions button')).find(b => b.textContent === 'Delete').click()")
        .await
        .unwrap();
    wait(
        &mut tab,
        &format!(
            "!document.querySelector('#threads button[data-id=\"{gone}\"]') && document.getElementById('thread-title').textContent === 'New task'"
        ),
    )
    .await;
    let (status, _) = server.get(&format!("/v1/threads/{gone}")).await;
    assert_eq!(status, 404);
    let (status, _) = server.get(&format!("/v1/threads/{keep}")).await;
    assert_eq!(status, 200, "the other thread stays");
    // The other tab lets it go within its next look at the list.
    wait(
        &mut other,
        "document.getElementById('thread-title').textContent === 'New task' && document.getElementById('banner').textContent.includes('deleted')",
    )
    .await;
    assert_eq!(
        count(&mut other, &format!("#threads button[data-id=\"{gone}\"]")).await,
        0
    );
    tab.close().await;
    other.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_workspace_page_is_previewed_with_its_style_sheet_and_pictures_but_no_scripts() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm.push(Turn::text("").call(
        "complete",
        json!({"text": "made", "attachments": ["site/index.html"]}),
    ));
    let site = cove.workspace.join("site");
    std::fs::create_dir_all(site.join("img")).unwrap();
    std::fs::write(
        site.join("index.html"),
        "<!doctype html><html><head><link rel=\"stylesheet\" href=\"style.css\"></head><body><h1>Fence report</h1><img src=\"img/dot.svg\" width=\"40\" height=\"40\"><script>document.body.style.background = 'rgb(255, 0, 0)';</script></body></html>",
    )
    .unwrap();
    // A page whose look is all in its style sheet: a green page, white words.
    std::fs::write(
        site.join("style.css"),
        "html, body { background: rgb(0, 128, 0); color: white; margin: 0; height: 100%; }",
    )
    .unwrap();
    std::fs::write(
        site.join("img/dot.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"40\"><rect width=\"40\" height=\"40\" fill=\"rgb(0,0,255)\"/></svg>",
    )
    .unwrap();
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    send_message(&mut tab, "Make a page").await;
    wait(&mut tab, "!!document.querySelector('.card.final')").await;
    tab.eval("document.querySelector('.card.final .chips button').click()")
        .await
        .unwrap();
    wait(&mut tab, "!!document.querySelector('#file-preview iframe')").await;
    // Pixels, as the person sees them: the sheet's green, not the script's red.
    let frame = rect(&mut tab, "#file-preview iframe").await;
    let (x, y) = ((frame[0] + frame[2]) / 2.0, frame[3] - 10.0);
    let mut seen = (0, 0, 0);
    for _ in 0..50 {
        let png = tab.screenshot().await.unwrap();
        let picture = image::load_from_memory(&png).unwrap().to_rgb8();
        let p = picture.get_pixel(x as u32, y as u32);
        seen = (p[0], p[1], p[2]);
        if seen == (0, 128, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    picture(&mut tab, "serve-preview.png").await;
    assert_eq!(seen, (0, 128, 0), "the preview's background at ({x}, {y})");
    // The picture beside it shows too: blue, somewhere in the frame.
    let png = tab.screenshot().await.unwrap();
    let shot = image::load_from_memory(&png).unwrap().to_rgb8();
    let blue = (frame[1] as u32..frame[3] as u32).any(|y| {
        (frame[0] as u32..frame[2] as u32).any(|x| {
            let p = shot.get_pixel(x, y);
            p[0] < 30 && p[1] < 30 && p[2] > 220
        })
    });
    assert!(blue, "the page's picture loads beside it");
    tab.close().await;
    server.kill().await;
}

/// A server the agent runs on another port of the host the page is on (a sandbox on the
/// machine's network, `--sandbox host`) is opened by the person in the same browser: it is
/// sent no cookie of the page's, whatever path it is opened at, since the session cookie
/// goes only under the page's secret path.
#[tokio::test]
async fn the_pages_session_cookie_never_reaches_another_port_of_its_host() {
    let cove = Cove::new(Wire::OpenAi).await;
    let server = Server::start(&cove, &[]).await;
    let mut tab = open_page(&server).await;
    let key = tab
        .eval("localStorage.getItem('cove.key')")
        .await
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(key.len() >= 32, "the page holds its key");
    let address = tab
        .eval("location.href + ' ' + document.cookie")
        .await
        .unwrap();
    assert!(
        !address.as_str().unwrap().contains(&key)
            && !address.as_str().unwrap().contains("cove_session"),
        "the key left the address bar, and the cookie is HttpOnly: {address}"
    );
    // The page works through its cookie: the thread list answered.
    let requests = tab.requests().await.unwrap();
    assert!(
        requests
            .iter()
            .any(|r| r.contains(&format!("/k/{key}/v1/threads"))),
        "{requests:?}"
    );
    let agents = cove_harness::recorder::Recorder::start().unwrap();
    let host = server
        .base
        .split("://")
        .nth(1)
        .unwrap()
        .split(':')
        .next()
        .unwrap();
    for path in ["/dashboard", "/v1/threads", "/k/"] {
        tab.goto(&format!("http://{host}:{}{path}", agents.port))
            .await
            .unwrap();
    }
    let heads = agents.heads();
    for path in ["/dashboard", "/v1/threads", "/k/"] {
        assert!(
            heads.iter().any(|h| h.starts_with(&format!("GET {path} "))),
            "the agent's server was opened at {path}: {heads:?}"
        );
    }
    for head in &heads {
        assert!(!head.to_ascii_lowercase().contains("\ncookie:"), "{head}");
    }
    // Back on the page, the person is still logged in: the thread list loads, no banner.
    tab.goto(&server.base).await.unwrap();
    wait(&mut tab, "!!document.getElementById('composer-text')").await;
    tab.wait_until(
        "document.getElementById('banner').textContent === '' && !location.pathname.startsWith('/login')",
        Duration::from_secs(10),
    )
    .await
    .unwrap();
}

/// A call with several reasons to ask shows every one, each a line of the dialog's list,
/// beside the whole command; denied from the page, it does not run.
#[tokio::test]
async fn a_permission_dialog_lists_every_reason_beside_the_whole_command() {
    let cove = Cove::new(Wire::OpenAi).await;
    let outside = tempfile::tempdir().unwrap();
    let kept = outside.path().join("kept");
    std::fs::create_dir_all(&kept).unwrap();
    let command = format!("rm -rf {} && sh -c 'echo done'", kept.display());
    cove.llm.push(
        Turn::text("Tidying.").call("execute_command", json!({ "command": command.clone() })),
    );
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "finished"})));
    let server = Server::start(&cove, &["--sandbox", "host"]).await;
    let mut tab = open_page(&server).await;
    send_message(&mut tab, "Tidy up").await;
    wait(
        &mut tab,
        "document.getElementById('dialog').open && document.getElementById('dialog-title').textContent.startsWith('Allow execute_command')",
    )
    .await;
    assert_eq!(
        text_of(&mut tab, "#dialog-body code.whole").await,
        format!("run `{command}`")
    );
    let reasons = tab
        .eval("Array.from(document.querySelectorAll('#dialog-body ul.reasons li')).map(li => li.textContent)")
        .await
        .unwrap();
    let reasons: Vec<&str> = reasons
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[0].contains("no walls"), "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| r.contains(&kept.display().to_string())),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("sh -c")), "{reasons:?}");
    tab.eval("Array.from(document.querySelectorAll('#dialog-actions button')).find(b => b.textContent === 'Deny').click()")
        .await
        .unwrap();
    wait(
        &mut tab,
        "(document.querySelector('.card.final') || {}).textContent?.includes('finished')",
    )
    .await;
    assert!(kept.exists(), "denied, it did not run");
}

/// A finished thread is replayed step by step, as a person does it: Replay, then the
/// slider moved with the keys; each step shows the conversation up to it and the browser as
/// the agent left it by then. Download gives the thread as one page.
#[tokio::test]
async fn a_finished_thread_is_replayed_step_by_step_with_the_browser_of_each_step() {
    let site = cove_harness::FixtureSite::start().await.unwrap();
    let cove = Cove::new(Wire::OpenAi).await;
    cove.share_port(site.port());
    cove.llm.push(
        Turn::text("First a command.").call("execute_command", json!({"command": "echo step-one"})),
    );
    cove.llm.push(Turn::text("Now the page.").call(
        "browser_navigate_to",
        json!({"url": site.url("counter.html")}),
    ));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "All seen."})));
    let server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Look around", "model": cove.model()}))
        .await;
    server
        .stream(&thread, None)
        .await
        .until("thread_run_end")
        .await;

    let mut tab = open_page(&server).await;
    wait(
        &mut tab,
        "document.querySelectorAll('#threads button').length === 1",
    )
    .await;
    tab.click("#threads button").await.unwrap();
    wait(&mut tab, "!document.getElementById('replay').hidden").await;
    wait(
        &mut tab,
        "document.querySelectorAll('#transcript img.shot').length === 1",
    )
    .await;
    tab.click("#replay").await.unwrap();
    wait(&mut tab, "!document.getElementById('replay-bar').hidden").await;
    let steps = tab
        .eval("Number(document.getElementById('replay-step').max)")
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    assert!(steps >= 5, "{steps} steps");
    // The slider has the focus: Home goes to the first step.
    tab.press("Home", false).await.unwrap();
    wait(
        &mut tab,
        "document.getElementById('replay-step').value === '1'",
    )
    .await;
    let first = shown(&mut tab).await;
    assert!(!first.contains("step-one"), "{first}");
    assert!(
        tab.eval("document.getElementById('replay-shot').hidden")
            .await
            .unwrap()
            == json!(true),
        "no picture before the browser was used"
    );
    // Step by step with the arrow key until the command's result shows: still no picture.
    let mut k = 1;
    while !shown(&mut tab).await.contains("step-one") {
        tab.press("ArrowRight", false).await.unwrap();
        k += 1;
        wait(
            &mut tab,
            &format!("document.getElementById('replay-step').value === '{k}'"),
        )
        .await;
        assert!(k <= steps);
    }
    assert!(
        tab.eval("document.getElementById('replay-shot').hidden")
            .await
            .unwrap()
            == json!(true)
    );
    let where_text = text_of(&mut tab, "#replay-where").await;
    assert!(
        where_text.starts_with(&format!("Step {k} of {steps}")),
        "{where_text}"
    );
    // On to the page's visit: the browser's picture of that step shows.
    while !shown(&mut tab).await.contains("browser_navigate_to") {
        tab.press("ArrowRight", false).await.unwrap();
        k += 1;
        assert!(k <= steps);
    }
    wait(
        &mut tab,
        "(() => { const i = document.getElementById('replay-shot'); return !i.hidden && i.complete && i.naturalWidth > 0; })()",
    )
    .await;
    picture(&mut tab, "replay.png").await;
    assert!(!shown(&mut tab).await.contains("All seen."));
    // The end shows everything; closing shows it all again.
    tab.press("End", false).await.unwrap();
    wait(
        &mut tab,
        &format!("document.getElementById('replay-step').value === '{steps}'"),
    )
    .await;
    assert!(shown(&mut tab).await.contains("All seen."));
    tab.press("Home", false).await.unwrap();
    tab.click("#replay-close").await.unwrap();
    wait(&mut tab, "document.getElementById('replay-bar').hidden").await;
    assert_eq!(
        tab.eval("[...document.querySelectorAll('#transcript > [data-step]')].filter((n) => n.hidden).length")
            .await
            .unwrap(),
        json!(0)
    );
    // Download: the thread as one page, its screenshot inside, no token of the server's.
    let got = tab
        .eval("fetch(document.getElementById('download').href).then(async (r) => JSON.stringify({type: r.headers.get('content-type'), disposition: r.headers.get('content-disposition'), body: await r.text()}))")
        .await
        .unwrap();
    let got: serde_json::Value = serde_json::from_str(got.as_str().unwrap()).unwrap();
    assert!(
        got["type"].as_str().unwrap().starts_with("text/html"),
        "{}",
        got["type"]
    );
    assert_eq!(
        got["disposition"],
        format!("attachment; filename=\"{thread}.html\"")
    );
    let page = got["body"].as_str().unwrap();
    assert!(page.contains("<title>Look around · Cove</title>"));
    assert!(page.contains("src=\"data:image/jpeg;base64,"));
    assert!(
        !page.contains(&server.token),
        "the server's token is in the export"
    );
    let json = server
        .raw(
            reqwest::Method::GET,
            &format!("/v1/threads/{thread}/export?format=json"),
        )
        .await;
    assert_eq!(json.status(), 200);
    let json: serde_json::Value = json.json().await.unwrap();
    assert_eq!(json["thread"]["id"], thread.as_str());
    let bad = server
        .raw(
            reqwest::Method::GET,
            &format!("/v1/threads/{thread}/export?format=pdf"),
        )
        .await;
    assert_eq!(bad.status(), 400);
    // Without the token or the login cookie, nothing of the thread.
    let anonymous = reqwest::get(server.url(&format!("/v1/threads/{thread}/export")))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    tab.close().await;
    server.kill().await;
}

/// The transcript's items a replay shows now, their text joined.
async fn shown(tab: &mut cove_harness::person::Person) -> String {
    tab.eval("[...document.querySelectorAll('#transcript > [data-step]')].filter((n) => !n.hidden).map((n) => n.textContent).join(' | ')")
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}
