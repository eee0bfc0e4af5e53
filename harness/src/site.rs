//! The fixture web site: pages for the browser tests, served from localhost.
//!
//! Pages record what they see (clicks, values, scroll offsets, drops) by POSTing JSON to
//! `/report`; tests read those reports back, so a test checks the page's own state rather
//! than what the daemon says about it.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use serde_json::Value;

/// The static pages, by file name.
const PAGES: &[(&str, &str)] = &[
    ("admin.html", include_str!("../fixtures/site/admin.html")),
    ("late.html", include_str!("../fixtures/site/late.html")),
    (
        "dialogs.html",
        include_str!("../fixtures/site/dialogs.html"),
    ),
    (
        "counter.html",
        include_str!("../fixtures/site/counter.html"),
    ),
    (
        "dragdrop.html",
        include_str!("../fixtures/site/dragdrop.html"),
    ),
    ("fetch.html", include_str!("../fixtures/site/fetch.html")),
    ("form.html", include_str!("../fixtures/site/form.html")),
    (
        "frame-inner.html",
        include_str!("../fixtures/site/frame-inner.html"),
    ),
    ("iframe.html", include_str!("../fixtures/site/iframe.html")),
    ("keys.html", include_str!("../fixtures/site/keys.html")),
    ("long.html", include_str!("../fixtures/site/long.html")),
    (
        "far-listeners.html",
        include_str!("../fixtures/site/far-listeners.html"),
    ),
    ("modal.html", include_str!("../fixtures/site/modal.html")),
    ("nav-a.html", include_str!("../fixtures/site/nav-a.html")),
    ("nav-b.html", include_str!("../fixtures/site/nav-b.html")),
    ("select.html", include_str!("../fixtures/site/select.html")),
    ("shadow.html", include_str!("../fixtures/site/shadow.html")),
    ("stale.html", include_str!("../fixtures/site/stale.html")),
    (
        "tab-target.html",
        include_str!("../fixtures/site/tab-target.html"),
    ),
    ("tabs.html", include_str!("../fixtures/site/tabs.html")),
    (
        "widgets.html",
        include_str!("../fixtures/site/widgets.html"),
    ),
    (
        "takeover.html",
        include_str!("../fixtures/site/takeover.html"),
    ),
];

#[derive(Default)]
struct Shared {
    reports: Mutex<Vec<Value>>,
    files: Mutex<HashMap<String, (String, Vec<u8>)>>,
}

/// A running fixture site.
pub struct FixtureSite {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FixtureSite {
    /// Serves the site on a free localhost port.
    pub async fn start() -> Result<FixtureSite> {
        FixtureSite::start_on(IpAddr::from([127, 0, 0, 1])).await
    }

    /// Serves the site on this machine's address on its network, for pages that must not be
    /// on loopback (a person taking over may not open those).
    pub async fn start_on_network() -> Result<FixtureSite> {
        FixtureSite::start_on(network_address()?).await
    }

    /// Serves the site on a free port of `ip`.
    pub async fn start_on(ip: IpAddr) -> Result<FixtureSite> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/", get(|| async { Html(index()) }))
            .route("/huge.html", get(|| async { Html(huge_page(10_000)) }))
            .route("/hang", get(hang))
            .route("/slow/{ms}", get(slow))
            .route("/redirect", get(redirect))
            .route("/report", post(report))
            .route("/files/{name}", get(file))
            .route("/{page}", get(page))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, 0)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            // Streamed answers are many small writes: Nagle's algorithm would hold each one
            // back until the client's delayed ACK, 40 ms per exchange.
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).await;
        });
        Ok(FixtureSite { addr, shared, task })
    }

    /// The port it serves on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The URL of `path` on this site (`path` starts without a slash).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// Every report the pages sent so far, oldest first.
    pub fn reports(&self) -> Vec<Value> {
        self.shared
            .reports
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Waits up to 10 s for a report matching `pred`; returns the newest one that does.
    pub async fn wait_for_report(&self, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        for _ in 0..200 {
            if let Some(found) = self.reports().into_iter().rev().find(|r| pred(r)) {
                return Some(found);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Serves `bytes` at `/files/{name}` with the given content type.
    pub fn put_file(&self, name: &str, content_type: &str, bytes: Vec<u8>) {
        if let Ok(mut files) = self.shared.files.lock() {
            files.insert(name.to_string(), (content_type.to_string(), bytes));
        }
    }
}

impl Drop for FixtureSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// This machine's address on its network: the source address of its route to a TEST-NET
/// address (no packet is sent).
pub fn network_address() -> Result<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0")?;
    socket
        .connect("192.0.2.1:9")
        .context("this test needs a network interface besides loopback (a route to 192.0.2.1)")?;
    let ip = socket.local_addr()?.ip();
    if ip.is_loopback() || ip.is_unspecified() {
        bail!("this test needs a network interface besides loopback; found only {ip}");
    }
    Ok(ip)
}

fn index() -> String {
    let links: String = PAGES
        .iter()
        .map(|(name, _)| format!("<li><a href=\"/{name}\">{name}</a></li>"))
        .collect();
    format!("<!doctype html><title>Fixtures</title><ul>{links}</ul>")
}

/// A page of `n` interactive elements (buttons, links, inputs in turn).
pub fn huge_page(n: usize) -> String {
    let mut body = String::with_capacity(n * 60);
    for i in 0..n {
        match i % 3 {
            0 => body.push_str(&format!("<button id=b{i}>Button {i}</button>\n")),
            1 => body.push_str(&format!("<a href=\"#l{i}\">Link {i}</a>\n")),
            _ => body.push_str(&format!("<input name=i{i} placeholder=\"Input {i}\">\n")),
        }
    }
    format!("<!doctype html><title>Huge</title><h1>Ten thousand elements</h1>\n{body}")
}

async fn page(Path(name): Path<String>) -> Response {
    match PAGES.iter().find(|(n, _)| *n == name) {
        Some((_, html)) => Html(*html).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Html("<title>Not found</title>no such page"),
        )
            .into_response(),
    }
}

/// `/redirect?to=URL`: a 302 to wherever the query says.
async fn redirect(axum::extract::RawQuery(query): axum::extract::RawQuery) -> Response {
    let to = query
        .as_deref()
        .and_then(|q| q.strip_prefix("to="))
        .map(percent_decode)
        .unwrap_or_default();
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// `%XX` escapes decoded (enough for the URLs the tests send).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Answers `{"answer": 42}` after `ms` milliseconds (at most 5 s), as a slow API would.
async fn slow(Path(ms): Path<u64>) -> Response {
    tokio::time::sleep(Duration::from_millis(ms.min(5_000))).await;
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"answer": 42}"#,
    )
        .into_response()
}

async fn hang() -> Response {
    // Never answers: the page stays loading for as long as the client waits.
    std::future::pending::<()>().await;
    StatusCode::OK.into_response()
}

async fn report(State(shared): State<Arc<Shared>>, body: Bytes) -> StatusCode {
    match serde_json::from_slice::<Value>(&body) {
        Ok(value) => {
            if let Ok(mut reports) = shared.reports.lock() {
                reports.push(value);
            }
            StatusCode::NO_CONTENT
        }
        Err(_) => StatusCode::BAD_REQUEST,
    }
}

async fn file(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    let found = shared.files.lock().ok().and_then(|f| f.get(&name).cloned());
    match found {
        Some((content_type, bytes)) => {
            ([(header::CONTENT_TYPE, content_type)], bytes).into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
