//! Workspace preview and the proxy: files served read-only, and an app started by a shell
//! session reached over HTTP and WebSocket, through the preview token's cookie.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on the unexpected

use std::time::Duration;

use cove_protocol::client::CovedClient;
use cove_protocol::files::CreateRequest;
use cove_protocol::shell::ExecRequest;
use cove_tests::{DaemonBuilder, DaemonProcess};
use futures_util::{SinkExt, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const SERVER: &str = include_str!("../../tests/fixtures/preview/server.py");

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

async fn put(c: &CovedClient, path: &str, content: &str) {
    c.create(&CreateRequest {
        path: path.into(),
        content: content.into(),
        mode: None,
    })
    .await
    .unwrap();
}

/// A client that keeps cookies and follows no redirects, as a test sees each step.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Trades a link's token for the cookie; returns the cookie and where the link pointed.
async fn visit_link(http: &reqwest::Client, link: &str) -> (String, String) {
    let r = http.get(link).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{link}");
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("Path=/"),
        "{cookie}"
    );
    let location = r.headers()[LOCATION].to_str().unwrap().to_string();
    assert!(
        !location.contains("cove_preview"),
        "the token stays in the URL: {location}"
    );
    (cookie.split(';').next().unwrap().to_string(), location)
}

#[tokio::test]
async fn workspace_files_are_served_read_only_behind_the_preview_token() {
    let d = daemon().await;
    let c = d.client.clone();
    put(
        &c,
        "site/index.html",
        "<!doctype html><h1>Built by the agent</h1>",
    )
    .await;
    put(&c, "site/style.css", "h1 { color: teal }").await;
    put(&c, "site/docs/notes.md", "# notes").await;
    put(&c, "secret.txt", "workspace file").await;
    let exposed = c.expose(1).await.unwrap();
    let base = c.base_url().as_str().trim_end_matches('/').to_string();
    assert!(
        exposed
            .files_url
            .starts_with(&format!("{base}/preview/?cove_preview="))
    );

    let http = browser();
    // No token: refused, for files and the proxy alike.
    for path in ["/preview/", "/preview/site/index.html", "/proxy/1/"] {
        let r = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let wrong = http
        .get(format!("{base}/preview/?cove_preview=nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    // The preview token opens nothing of the API.
    let token = exposed.files_url.split("cove_preview=").nth(1).unwrap();
    let api = CovedClient::new(&base, token.to_string()).unwrap();
    assert!(api.info().await.is_err(), "the API took the preview token");

    let (cookie, location) = visit_link(&http, &exposed.files_url).await;
    assert_eq!(location, "/preview/");
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header(COOKIE, &cookie)
            .send()
    };
    let listing = get("/preview/").await.unwrap();
    assert_eq!(listing.status(), StatusCode::OK);
    let listing = listing.text().await.unwrap();
    assert!(
        listing.contains("site/") && listing.contains("secret.txt"),
        "{listing}"
    );

    let moved = get("/preview/site").await.unwrap();
    assert_eq!(moved.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(moved.headers()[LOCATION], "/preview/site/");
    let index = get("/preview/site/").await.unwrap();
    assert_eq!(index.headers()["content-type"], "text/html; charset=utf-8");
    assert!(index.text().await.unwrap().contains("Built by the agent"));
    let css = get("/preview/site/style.css").await.unwrap();
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    assert_eq!(css.text().await.unwrap(), "h1 { color: teal }");
    let docs = get("/preview/site/docs/")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(docs.contains("notes.md") && docs.contains("../"), "{docs}");
    assert_eq!(
        get("/preview/missing.html").await.unwrap().status(),
        StatusCode::NOT_FOUND
    );

    // Read-only, and confined like the file API.
    let post = http
        .post(format!("{base}/preview/secret.txt"))
        .header(COOKIE, &cookie)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    std::os::unix::fs::symlink("/etc", d.path("etc-link")).unwrap();
    let escaped = get("/preview/etc-link/passwd").await.unwrap();
    assert!(
        matches!(
            escaped.status(),
            StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
        ),
        "{}",
        escaped.status()
    );
    let dotdot = get("/preview/site/%2e%2e/%2e%2e/etc/passwd").await.unwrap();
    assert_ne!(dotdot.status(), StatusCode::OK);
    // The API token works too, for tools.
    let with_api = http
        .get(format!("{base}/preview/secret.txt"))
        .bearer_auth(c.token())
        .send()
        .await
        .unwrap();
    assert_eq!(with_api.text().await.unwrap(), "workspace file");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn the_proxy_reaches_an_app_the_agent_started_over_http_and_websocket() {
    let d = daemon().await;
    let c = d.client.clone();
    put(&c, "server.py", SERVER).await;
    let port = free_port();
    let started = c
        .exec(
            &ExecRequest::new(format!("python3 server.py {port}"))
                .in_session("app")
                .non_blocking(),
        )
        .await
        .unwrap();
    assert!(!started.completed, "{}", started.output);
    let mut exposed = c.expose(port).await.unwrap();
    for _ in 0..100 {
        if exposed.listening {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        exposed = c.expose(port).await.unwrap();
    }
    assert!(exposed.listening, "the app never listened");
    assert!(!c.expose(free_port()).await.unwrap().listening);

    let base = c.base_url().as_str().trim_end_matches('/').to_string();
    let http = browser();
    let (cookie, location) = visit_link(&http, &exposed.url).await;
    assert_eq!(location, format!("/proxy/{port}/"));
    let app = format!("{base}/proxy/{port}");

    let page = http
        .get(format!("{app}/page"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["x-app"], "preview-test");
    assert!(page.text().await.unwrap().contains("Hello from the app"));

    // Method, path, query and body reach the app; the daemon's credentials do not.
    let echoed: Value = http
        .post(format!("{app}/api/items?x=1"))
        .header(COOKIE, format!("{cookie}; theme=dark"))
        .header("x-custom", "yes")
        .body("payload")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(echoed["method"], "POST");
    assert_eq!(echoed["path"], "/api/items?x=1");
    assert_eq!(echoed["body"], "payload");
    let headers = &echoed["headers"];
    assert_eq!(headers["x-custom"], "yes");
    assert_eq!(headers["cookie"], "theme=dark", "{headers}");
    assert_eq!(headers["host"], format!("localhost:{port}"));
    assert_eq!(headers["x-forwarded-prefix"], format!("/proxy/{port}"));
    let with_api: Value = http
        .get(format!("{app}/who"))
        .bearer_auth(c.token())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        with_api["headers"].get("authorization").is_none(),
        "{with_api}"
    );

    // A redirect to /landed stays under the prefix.
    let redirect = http
        .get(format!("{app}/redirect"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    assert_eq!(
        redirect.headers()[LOCATION],
        format!("/proxy/{port}/landed")
    );

    // A WebSocket echo through the proxy.
    let ws_url = format!("{}/proxy/{port}/ws", base.replacen("http://", "ws://", 1));
    let mut request = ws_url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("cookie", cookie.parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket.send(Message::Text("hello".into())).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer, Message::Text("echo: hello".into()));
    let big = vec![7u8; 100_000];
    socket
        .send(Message::Binary(big.clone().into()))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer, Message::Binary(big.into()));
    socket.close(None).await.unwrap();

    // No token, no WebSocket either.
    let bare = format!("{}/proxy/{port}/ws", base.replacen("http://", "ws://", 1));
    assert!(tokio_tungstenite::connect_async(bare).await.is_err());

    // Once the app stops, the proxy says so.
    c.signal("app", cove_protocol::shell::Signal::Int)
        .await
        .unwrap();
    let mut status = StatusCode::OK;
    for _ in 0..50 {
        status = http
            .get(format!("{app}/page"))
            .header(COOKIE, &cookie)
            .send()
            .await
            .unwrap()
            .status();
        if status == StatusCode::BAD_GATEWAY {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, StatusCode::BAD_GATEWAY);
}
