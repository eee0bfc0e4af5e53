//! The trust boundaries of SECURITY.md, tried as an attacker would against a real `coved`
//! (the findings of the November 2026 review, by their numbers). Each test makes the attack
//! and its obvious variants, and checks a control that shows the test can see success.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on the unexpected

use std::collections::HashSet;
use std::time::{Duration, Instant};

use cove_protocol::browser::{NavigateTo, StateQuery};
use cove_protocol::client::CovedClient;
use cove_protocol::takeover::StartTakeover;
use cove_tests::viewer::chromium_path;
use cove_tests::{DaemonBuilder, DaemonProcess, FixtureSite, LiveClient, procs};
use serde_json::json;

const LEAN: StateQuery = StateQuery {
    screenshot: false,
    content: false,
};
const WAIT: Duration = Duration::from_secs(15);

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

async fn open(c: &CovedClient, url: &str) -> cove_protocol::browser::BrowserState {
    c.browser(&NavigateTo { url: url.into() }, LEAN)
        .await
        .unwrap_or_else(|e| panic!("{url} loads: {e}"))
}

/// Pids listening on TCP, as `ss` (iproute2) reports them.
fn listening_pids() -> Vec<(String, HashSet<i32>)> {
    let out = std::process::Command::new("ss")
        .args(["-Hltnp"])
        .output()
        .expect("ss (iproute2) is installed: the security tests read listening sockets with it");
    assert!(out.status.success(), "ss failed: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let local = line.split_whitespace().nth(3).unwrap_or("").to_string();
            let pids = line
                .split("pid=")
                .skip(1)
                .filter_map(|p| p.split(',').next()?.parse().ok())
                .collect();
            (local, pids)
        })
        .collect()
}

/// C1, H1: Chromium is driven over a pipe, so no process of its tree listens on any port,
/// and coved listens on its API port alone (the pipe's one-shot bridge is closed).
#[tokio::test]
async fn the_browser_has_no_debugging_port_for_anyone_to_reach() {
    chromium_path();
    let d = daemon().await;
    let site = FixtureSite::start().await.unwrap();
    open(&d.client, &site.url("counter.html")).await;

    let browser: Vec<_> = procs::descendants(d.pid())
        .into_iter()
        .filter(|p| p.cmdline.contains("chromium") || p.cmdline.contains("chrome"))
        .collect();
    assert!(!browser.is_empty(), "the browser runs under coved");
    let main = browser
        .iter()
        .find(|p| p.ppid == d.pid())
        .expect("Chromium's main process");
    assert!(
        main.cmdline.contains("--remote-debugging-pipe")
            && !main.cmdline.contains("--remote-debugging-port"),
        "{}",
        main.cmdline
    );
    let browser_pids: HashSet<i32> = browser.iter().map(|p| p.pid).collect();
    let listening = listening_pids();
    let api_port = d.url.rsplit(':').next().unwrap();
    let mine: Vec<_> = listening
        .iter()
        .filter(|(_, pids)| pids.contains(&d.pid()))
        .map(|(local, _)| local.clone())
        .collect();
    assert_eq!(
        mine,
        vec![format!("127.0.0.1:{api_port}")],
        "coved listens on its API port only"
    );
    let theirs: Vec<_> = listening
        .iter()
        .filter(|(_, pids)| !pids.is_disjoint(&browser_pids))
        .collect();
    assert!(theirs.is_empty(), "the browser listens: {theirs:?}");
}

/// H1: a person taking over cannot point the browser at the sandbox itself (DevTools, coved,
/// the image's other servers, cloud metadata) or at pages that read files or run script.
#[tokio::test]
async fn a_person_cannot_steer_the_browser_to_the_sandbox_itself() {
    chromium_path();
    let d = daemon().await;
    let c = &d.client;
    let web = FixtureSite::start_on_network().await.unwrap();
    let local = FixtureSite::start().await.unwrap();
    open(c, &web.url("takeover.html")).await;
    let grant = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: None,
        })
        .await
        .unwrap();
    let mut live = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    live.expect_json("view", WAIT).await.unwrap();

    let port = local
        .url("")
        .rsplit(':')
        .next()
        .unwrap()
        .trim_matches('/')
        .to_string();
    let attempts = [
        local.url("counter.html"),
        format!("localhost:{port}/counter.html"),
        format!("http://p{port}.localhost:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0.0.0.0:{port}/"),
        format!("{}/v1/info", d.url),
        "http://169.254.169.254/latest/meta-data/".into(),
        format!("file://{}", d.path("").display()),
        "file:///etc/passwd".into(),
        "data:text/html,<script>window.open('http://127.0.0.1:9222/json')</script>".into(),
        "javascript:location='http://127.0.0.1'".into(),
        "view-source:http://127.0.0.1/".into(),
        "chrome://version".into(),
    ];
    for url in &attempts {
        live.send(json!({"t": "navigate", "url": url}))
            .await
            .unwrap();
        let error = live.expect_json("error", WAIT).await.unwrap();
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{url}: {error}"
        );
    }
    let state = c.browser_state(LEAN).await.unwrap();
    assert!(state.url.ends_with("/takeover.html"), "{}", state.url);
    assert_eq!(state.tabs.len(), 1, "{:?}", state.tabs);

    // The control: a page on the web opens.
    live.send(json!({"t": "navigate", "url": web.url("counter.html")}))
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let state = c.browser_state(LEAN).await.unwrap();
        if state.url.ends_with("/counter.html") {
            break;
        }
        assert!(Instant::now() < deadline, "the web page never opened");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    live.close().await;
}

/// H1: pages cannot open windows on their own (the popup blocker is on), so a page cannot
/// open a hundred tabs to scan for ports.
#[tokio::test]
async fn pages_cannot_open_windows_without_a_click() {
    chromium_path();
    let d = daemon().await;
    let page = "data:text/html,<title>opener</title><script>for (let i = 0; i < 50; i++) window.open('about:blank#' + i)</script>";
    let state = open(&d.client, page).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let state_after = d.client.browser_state(LEAN).await.unwrap();
    assert_eq!(state.tabs.len(), 1, "{:?}", state.tabs);
    assert_eq!(state_after.tabs.len(), 1, "{:?}", state_after.tabs);
    assert_eq!(state_after.title, "opener");
}

/// M3: a person's commands run one at a time and die with the takeover: a navigation still
/// waiting when they hand back never runs after the agent has the browser again.
#[tokio::test]
async fn a_persons_commands_end_with_the_takeover() {
    chromium_path();
    let d = daemon().await;
    let c = &d.client;
    let web = FixtureSite::start_on_network().await.unwrap();
    open(c, &web.url("takeover.html")).await;
    let grant = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: None,
        })
        .await
        .unwrap();
    let mut live = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    live.expect_json("view", WAIT).await.unwrap();

    // The first navigation hangs; the ones after it are refused while it lasts.
    live.send(json!({"t": "navigate", "url": web.url("hang")}))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for page in ["counter.html", "form.html", "keys.html"] {
        live.send(json!({"t": "navigate", "url": web.url(page)}))
            .await
            .unwrap();
        let error = live.expect_json("error", WAIT).await.unwrap();
        assert!(
            error["message"].as_str().unwrap().contains("busy"),
            "{error}"
        );
    }
    live.send(json!({"t": "done"})).await.unwrap();
    live.expect_json("ended", WAIT).await.unwrap();

    // The agent acts at once, and what the person queued never runs after it.
    let started = Instant::now();
    let state = open(c, &web.url("select.html")).await;
    assert!(state.url.ends_with("/select.html"), "{}", state.url);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the agent waited {:?} behind the person's navigation",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let state = c.browser_state(LEAN).await.unwrap();
    assert!(state.url.ends_with("/select.html"), "{}", state.url);
    assert_eq!(state.tabs.len(), 1);
}
