//! Workspace preview and the proxy: files served read-only at `files.localhost`, and an app
//! started by a shell session reached at `p<port>.localhost` over HTTP and WebSocket, through
//! the preview token's cookie.

use std::time::Duration;

use cove_harness::preview::{app_origin, client, free_port, origin, websocket, websocket_from};
use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::client::CovedClient;
use cove_protocol::files::CreateRequest;
use cove_protocol::preview::ExposeResponse;
use cove_protocol::shell::ExecRequest;
use futures_util::{SinkExt, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

const SERVER: &str = include_str!("../../../harness/fixtures/preview/server.py");

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

/// Trades a link's token for the cookie; returns the cookie and where the link pointed.
async fn visit_link(http: &reqwest::Client, link: &str) -> (String, String) {
    let r = http.get(link).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{link}");
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap().to_string();
    for part in ["HttpOnly", "Path=/", "SameSite=Strict", "Max-Age="] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(cookie.starts_with("cove_preview_"), "{cookie}");
    let location = r.headers()[LOCATION].to_str().unwrap().to_string();
    assert!(
        !location.contains("cove_preview"),
        "the token stays in the URL: {location}"
    );
    (cookie.split(';').next().unwrap().to_string(), location)
}

/// Starts the test app in a shell session on a free port of `address`; waits until it
/// listens.
async fn start_app(c: &CovedClient, address: &str) -> (u16, ExposeResponse) {
    put_if_missing(c, "server.py", SERVER).await;
    let port = free_port();
    let started = c
        .exec(
            &ExecRequest::new(format!("python3 server.py {port} {address}"))
                .in_session(format!("app{port}"))
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
    (port, exposed)
}

async fn put_if_missing(c: &CovedClient, path: &str, content: &str) {
    let _ = c
        .create(&CreateRequest {
            path: path.into(),
            content: content.into(),
            mode: None,
        })
        .await;
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
    put(
        &c,
        "drawing.svg",
        "<svg xmlns='http://www.w3.org/2000/svg'/>",
    )
    .await;
    put(&c, "javascript:alert(1)", "a name that looks like a scheme").await;
    let exposed = c.expose(1).await.unwrap();
    let daemon_port = d.url.rsplit(':').next().unwrap().to_string();
    let files = origin(&exposed.files_url);
    assert!(
        files.starts_with("http://files-")
            && files.ends_with(&format!(".localhost:{daemon_port}"))
            && exposed
                .files_url
                .starts_with(&format!("{files}/?cove_preview=")),
        "{}",
        exposed.files_url
    );
    assert_eq!(origin(&exposed.url), app_origin(&exposed.files_url, 1));
    assert!(
        origin(&exposed.url).starts_with("http://p1-"),
        "{}",
        exposed.url
    );

    let http = client(&[&exposed.files_url, &exposed.url]);
    // No token: refused, for files and the app alike.
    for url in [
        format!("{files}/"),
        format!("{files}/site/index.html"),
        origin(&exposed.url),
    ] {
        let r = http.get(&url).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{url}");
    }
    let wrong = http
        .get(format!("{files}/?cove_preview=nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    // The preview token opens nothing of the API.
    let token = exposed.files_url.split("cove_preview=").nth(1).unwrap();
    let api = CovedClient::new(&d.url, token.to_string()).unwrap();
    assert!(api.info().await.is_err(), "the API took the preview token");

    let (cookie, location) = visit_link(&http, &exposed.files_url).await;
    assert_eq!(location, "/");
    let get = |path: &str| {
        http.get(format!("{files}{path}"))
            .header(COOKIE, &cookie)
            .send()
    };
    let listing = get("/").await.unwrap();
    assert_eq!(listing.status(), StatusCode::OK);
    let listing = listing.text().await.unwrap();
    assert!(
        listing.contains("site/") && listing.contains("secret.txt"),
        "{listing}"
    );
    assert!(
        listing.contains("href=\"./javascript:alert(1)\""),
        "a name became a scheme: {listing}"
    );

    let moved = get("/site").await.unwrap();
    assert_eq!(moved.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(moved.headers()[LOCATION], "/site/");
    let index = get("/site/").await.unwrap();
    assert_eq!(index.headers()["content-type"], "text/html; charset=utf-8");
    assert!(index.headers().get("content-security-policy").is_none());
    assert!(index.text().await.unwrap().contains("Built by the agent"));
    let css = get("/site/style.css").await.unwrap();
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    assert_eq!(css.text().await.unwrap(), "h1 { color: teal }");
    let svg = get("/drawing.svg").await.unwrap();
    assert_eq!(svg.headers()["content-security-policy"], "sandbox");
    let docs = get("/site/docs/").await.unwrap().text().await.unwrap();
    assert!(docs.contains("notes.md") && docs.contains("../"), "{docs}");
    let spaced = get("/site/docs/notes%2Emd").await.unwrap();
    assert_eq!(spaced.text().await.unwrap(), "# notes");
    assert_eq!(
        get("/missing.html").await.unwrap().status(),
        StatusCode::NOT_FOUND
    );

    // Read-only, and confined like the file API.
    let post = http
        .post(format!("{files}/secret.txt"))
        .header(COOKIE, &cookie)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    std::os::unix::fs::symlink("/etc", d.path("etc-link")).unwrap();
    let escaped = get("/etc-link/passwd").await.unwrap();
    assert!(
        matches!(
            escaped.status(),
            StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
        ),
        "{}",
        escaped.status()
    );
    let dotdot = get("/site/%2e%2e/%2e%2e/etc/passwd").await.unwrap();
    assert_ne!(dotdot.status(), StatusCode::OK);

    // On the daemon's origin: the API token is served (for tools), a browser is sent on.
    let with_api = http
        .get(format!("{}/preview/secret.txt", d.url))
        .bearer_auth(c.token())
        .send()
        .await
        .unwrap();
    assert_eq!(with_api.text().await.unwrap(), "workspace file");
    let html = http
        .get(format!("{}/preview/site/index.html", d.url))
        .bearer_auth(c.token())
        .send()
        .await
        .unwrap();
    assert_eq!(html.headers()["content-security-policy"], "sandbox");
    let sent_on = http
        .get(format!("{}/preview/site/?x=1", d.url))
        .send()
        .await
        .unwrap();
    assert_eq!(sent_on.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(sent_on.headers()[LOCATION], format!("{files}/site/?x=1"));
}

#[tokio::test]
async fn the_proxy_reaches_an_app_the_agent_started_over_http_and_websocket() {
    let d = daemon().await;
    let c = d.client.clone();
    let (port, exposed) = start_app(&c, "127.0.0.1").await;
    assert!(!c.expose(free_port()).await.unwrap().listening);

    let app = origin(&exposed.url);
    let daemon_port = d.url.rsplit(':').next().unwrap().to_string();
    assert!(
        app.starts_with(&format!("http://p{port}-"))
            && app.ends_with(&format!(".localhost:{daemon_port}")),
        "{app}"
    );
    let http = client(&[&app]);
    let (cookie, location) = visit_link(&http, &exposed.url).await;
    assert_eq!(location, "/");

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
    assert_eq!(
        headers["x-forwarded-host"],
        app.strip_prefix("http://").unwrap()
    );
    assert!(headers.get("x-forwarded-prefix").is_none(), "{headers}");
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

    // A redirect to /landed stays on the app's origin.
    let redirect = http
        .get(format!("{app}/redirect"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    assert_eq!(redirect.headers()[LOCATION], "/landed");

    // A WebSocket echo through the proxy.
    let ws_url = format!("{}/ws", app.replacen("http://", "ws://", 1));
    let mut socket = websocket(&ws_url, Some(&cookie)).await.unwrap();
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

    // No token, no WebSocket either; nor from a page of another origin with the cookie.
    assert!(websocket(&ws_url, None).await.is_err());
    for foreign in [
        origin(&exposed.files_url),
        app_origin(&exposed.url, 1),
        "http://evil.example".to_string(),
    ] {
        let refused = websocket_from(&ws_url, &cookie, &foreign).await;
        assert!(refused.is_err(), "a socket from {foreign} was let in");
    }
    let mut own = websocket_from(&ws_url, &cookie, &app).await.unwrap();
    own.send(Message::Text("again".into())).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), own.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer, Message::Text("echo: again".into()));

    // The API token's holder reaches the app under /proxy/<port>/ on the daemon's origin.
    let prefixed: Value = http
        .get(format!("{}/proxy/{port}/who?y=2", d.url))
        .bearer_auth(c.token())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(prefixed["path"], "/who?y=2");
    assert_eq!(
        prefixed["headers"]["x-forwarded-prefix"],
        format!("/proxy/{port}")
    );
    let sent_on = http
        .get(format!("{}/proxy/{port}/page", d.url))
        .send()
        .await
        .unwrap();
    assert_eq!(sent_on.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(sent_on.headers()[LOCATION], format!("{app}/page"));

    // Once the app stops, the proxy says so.
    c.signal(&format!("app{port}"), cove_protocol::shell::Signal::Int)
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

#[tokio::test]
async fn an_app_listening_only_on_ipv6_loopback_is_reached() {
    let d = daemon().await;
    let c = d.client.clone();
    let (_, exposed) = start_app(&c, "::1").await;
    let http = client(&[&exposed.url]);
    let (cookie, _) = visit_link(&http, &exposed.url).await;
    let page = http
        .get(format!("{}/page", origin(&exposed.url)))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("Hello from the app"));
}
