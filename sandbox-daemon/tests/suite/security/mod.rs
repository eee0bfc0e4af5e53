//! The trust boundaries of SECURITY.md, tried as an attacker would against a real `coved`
//! (the findings of the November 2026 review, by their numbers). Each test makes the attack
//! and its obvious variants, and checks a control that shows the test can see success.

mod browser;
mod preview;
mod resources;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use cove_harness::images::{blank_png, gif_bomb};
use cove_harness::person::Person;
use cove_harness::preview::{app_origin, free_port, origin, trade_link};
use cove_harness::viewer::chromium_path;
use cove_harness::{DaemonBuilder, DaemonProcess, FixtureSite, LiveClient, procs};
use cove_protocol::browser::{NavigateTo, StateQuery};
use cove_protocol::client::CovedClient;
use cove_protocol::files::CreateRequest;
use cove_protocol::shell::ExecRequest;
use cove_protocol::takeover::{StartTakeover, TakeoverGrant};
use serde_json::json;

const LEAN: StateQuery = StateQuery {
    screenshot: false,
    content: false,
    full: false,
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

/// Hands the browser to a person: the grant, and the person's socket once it shows the view.
async fn take_over(c: &CovedClient) -> (TakeoverGrant, LiveClient) {
    let grant = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: None,
        })
        .await
        .unwrap();
    let mut live = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    live.expect_json("view", WAIT).await.unwrap();
    (grant, live)
}

/// A person has the browser of a fresh daemon, showing a page of a site on the web; a site on
/// loopback stands for the sandbox's own services.
async fn person_on_the_web() -> (DaemonProcess, FixtureSite, FixtureSite, LiveClient) {
    chromium_path();
    let d = daemon().await;
    let web = FixtureSite::start_on_network().await.unwrap();
    let local = FixtureSite::start().await.unwrap();
    open(&d.client, &web.url("takeover.html")).await;
    let (_, live) = take_over(&d.client).await;
    (d, web, local, live)
}

/// Has the person open `url`, again while the page says it is still busy with the last one;
/// returns the first other answer the page got within a moment, if any.
async fn person_opens(live: &mut LiveClient, url: &str) -> Option<serde_json::Value> {
    loop {
        live.send(json!({"t": "navigate", "url": url}))
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut answer = None;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match live.next(left).await.unwrap() {
                Some(cove_harness::live::LiveEvent::Json(j)) if j["type"] == "error" => {
                    answer = Some(j);
                    break;
                }
                Some(_) => {}
                None => break,
            }
        }
        match answer {
            Some(j) if j["message"].as_str().is_some_and(|m| m.contains("busy")) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => return other,
        }
    }
}

/// Creates `path` in the workspace with `content`.
async fn put(c: &CovedClient, path: &str, content: &str) {
    c.create(&CreateRequest {
        path: path.into(),
        content: content.into(),
        mode: None,
    })
    .await
    .unwrap();
}

/// Waits until the browser shows a page whose URL ends with `suffix`.
async fn wait_for(c: &CovedClient, suffix: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let url = c.browser_state(LEAN).await.unwrap().url;
        if url.ends_with(suffix) {
            return;
        }
        assert!(Instant::now() < deadline, "the browser stayed on {url}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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

/// A server on loopback that keeps the head of every request it gets.
struct EchoServer {
    port: u16,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl EchoServer {
    async fn start() -> EchoServer {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    if head.starts_with("GET /unrelated") {
                        log.lock().unwrap().push(head);
                    }
                    let _ = stream
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                        )
                        .await;
                });
            }
        });
        EchoServer { port, seen, task }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
