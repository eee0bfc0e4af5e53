//! The web fixture: pages shaped like the ones an agent reads (an article inside navigation
//! and ads, a client-rendered app, a PDF made by Chromium, a redirect chain, pages in old
//! charsets, compressed pages, a page too big to read, a binary file, error statuses) and a
//! fake search engine whose results page has DuckDuckGo's HTML markup.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use tokio::sync::OnceCell;

/// The article page: its main text, and what stands around it.
pub const ARTICLE: &str = include_str!("../fixtures/web/article.html");
const APP_HTML: &str = include_str!("../fixtures/web/app.html");
const APP_JS: &str = include_str!("../fixtures/web/app.js");
const STORY: &str = include_str!("../fixtures/web/story.json");
const SEARCH: &str = include_str!("../fixtures/web/search.html");
const SEARCH_ANOMALY: &str = include_str!("../fixtures/web/search-anomaly.html");
const SEARCH_EMPTY: &str = include_str!("../fixtures/web/search-empty.html");
const SEARCH_CONSENT: &str = include_str!("../fixtures/web/search-consent.html");
/// The PDF's text, as Chromium prints it.
pub const PDF_SENTENCE: &str = "The survey counted 214 moorings in the inner harbour";
/// Bytes the huge page streams (over coved's 32 MB cap).
const HUGE_BYTES: usize = 40 * 1024 * 1024;

/// A running web fixture.
pub struct WebSite {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl WebSite {
    /// Serves the fixture on a free localhost port (the PDF is printed by Chromium once per
    /// test process).
    pub async fn start() -> Result<WebSite> {
        let pdf = pdf().await?.clone();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let article_url = format!("http://{addr}/article.html");
        let app = Router::new()
            .route("/article.html", get(|| async { html(ARTICLE) }))
            .route("/app.html", get(|| async { html(APP_HTML) }))
            .route(
                "/app.js",
                get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], APP_JS) }),
            )
            .route(
                "/api/story.json",
                get(|| async { ([(header::CONTENT_TYPE, "application/json")], STORY) }),
            )
            .route(
                "/report.pdf",
                get(move || async move { ([(header::CONTENT_TYPE, "application/pdf")], pdf) }),
            )
            .route("/hop/{n}", get(hop))
            .route("/loop", get(|| async { Redirect::temporary("/loop") }))
            .route("/latin1.html", get(latin1))
            .route("/koi8.html", get(koi8))
            .route("/gzip.html", get(gzipped))
            .route("/huge.html", get(huge))
            .route("/declared-huge.bin", get(declared_huge))
            .route("/picture.png", get(picture))
            .route("/missing.html", get(|| async { StatusCode::NOT_FOUND }))
            .route(
                "/broken.html",
                get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
            )
            .route(
                "/html/",
                get(
                    move |Query(q): Query<std::collections::HashMap<String, String>>| {
                        let first = article_url.clone();
                        async move { search(q.get("q").map_or("", String::as_str), &first) }
                    },
                ),
            )
            .route(
                "/stuck.html",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    "never"
                }),
            )
            .route("/plain.txt", get(|| async { "just text\nsecond line\n" }))
            .merge(crate::hostile_web::routes());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(WebSite { addr, task })
    }

    /// The port it serves on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The URL of `path` on this site (`path` starts without a slash).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// The fake engine's results page, as `coved --search-url` takes it.
    pub fn search_url(&self) -> String {
        format!("http://{}/html/?q={{query}}", self.addr)
    }
}

impl Drop for WebSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn html(body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// `/hop/3` → `/hop/2` → `/hop/1` → the article.
async fn hop(Path(n): Path<u32>) -> Redirect {
    if n <= 1 {
        Redirect::to("/article.html")
    } else {
        Redirect::to(&format!("/hop/{}", n - 1))
    }
}

/// windows-1252 bytes, the charset named only in a `<meta>` tag.
async fn latin1() -> Response {
    let mut body = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"><title>Caf\xe9 menu</title></head><body><h1>Caf\xe9 du Port</h1><p>".to_vec();
    body.extend_from_slice(
        "Cr\u{e8}me br\u{fb}l\u{e9}e, cr\u{ea}pes and a na\u{ef}ve g\u{e2}teau are served every day from noon until the last boat leaves the harbour; the terrace opens in May. "
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
            .collect::<Vec<u8>>()
            .repeat(3)
            .as_slice(),
    );
    body.extend_from_slice(b"</p></body></html>");
    ([(header::CONTENT_TYPE, "text/html")], body).into_response()
}

/// KOI8-R bytes, the charset named in the header.
async fn koi8() -> Response {
    // "Привет, мир" in KOI8-R.
    let mut body = b"<html><head><title>KOI8</title></head><body><p>".to_vec();
    body.extend_from_slice(b"\xf0\xd2\xc9\xd7\xc5\xd4, \xcd\xc9\xd2");
    body.extend_from_slice(b"</p></body></html>");
    ([(header::CONTENT_TYPE, "text/html; charset=KOI8-R")], body).into_response()
}

/// The article, gzip-compressed on the wire.
async fn gzipped() -> Response {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = encoder.write_all(ARTICLE.as_bytes());
    let body = encoder.finish().unwrap_or_default();
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_ENCODING, "gzip"),
        ],
        body,
    )
        .into_response()
}

/// 40 MB of HTML with no length given: only counting while reading finds it too big.
async fn huge() -> Response {
    let chunk = "<p>filler paragraph of a page that never ends</p>\n".repeat(20_000);
    let chunks = HUGE_BYTES / chunk.len() + 1;
    let stream = futures_util::stream::iter(
        (0..chunks).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
    );
    (
        [(header::CONTENT_TYPE, "text/html")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A response that says it is 10 GB long (and sends only a trickle).
async fn declared_huge() -> Response {
    let stream = futures_util::stream::unfold(0u32, |n| async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        (n < 50).then(|| (Ok::<_, std::io::Error>(vec![b'x'; 1024]), n + 1))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/html")
        .header(header::CONTENT_LENGTH, 10u64 * 1024 * 1024 * 1024)
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn picture() -> Response {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    ([(header::CONTENT_TYPE, "image/png")], png).into_response()
}

/// The fake engine: `captcha` gets the bot check, `consent` a consent wall, `nothing` no
/// results; anything else the results page, whose first hit is the fixture's article.
fn search(query: &str, first: &str) -> Response {
    let escaped = query
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let encoded_first: String = first
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let page = match query {
        "captcha" => SEARCH_ANOMALY.to_string(),
        "consent" => SEARCH_CONSENT.to_string(),
        "nothing" => SEARCH_EMPTY.replace("{QUERY}", &escaped),
        _ => SEARCH
            .replace("{QUERY}", &escaped)
            .replace("{FIRST}", &encoded_first),
    };
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

static PDF: OnceCell<Vec<u8>> = OnceCell::const_new();

/// A PDF printed by Chromium from a small report page.
async fn pdf() -> Result<&'static Vec<u8>> {
    PDF.get_or_try_init(|| async {
        let dir = tempfile::tempdir()?;
        let source = dir.path().join("report.html");
        std::fs::write(
            &source,
            format!("<html><body><h1>Harbour Survey 2026</h1><p>{PDF_SENTENCE}, of which 37 were unused.</p><p>Dredging of the north channel is planned for the spring.</p></body></html>"),
        )?;
        let out = dir.path().join("report.pdf");
        let status = tokio::process::Command::new(crate::viewer::chromium_path())
            .arg("--headless")
            .arg("--no-sandbox")
            .arg("--disable-gpu")
            .arg("--no-pdf-header-footer")
            .arg(format!("--user-data-dir={}", dir.path().join("profile").display()))
            .arg(format!("--print-to-pdf={}", out.display()))
            .arg(format!("file://{}", source.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .await
            .context("running Chromium to print the fixture PDF")?;
        if !status.success() {
            bail!("Chromium could not print the fixture PDF: {status}");
        }
        Ok(std::fs::read(&out)?)
    })
    .await
}
