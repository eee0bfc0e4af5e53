//! `/proxy/{port}/...`: HTTP and WebSocket traffic forwarded to a server listening on that
//! port inside the sandbox, bodies streamed both ways.
//!
//! The app sees a request from `localhost:{port}` (dev servers check the Host), with the
//! daemon's credentials taken out and `X-Forwarded-Prefix: /proxy/{port}` for apps that can
//! serve under a prefix. Redirects to `/...` come back under the prefix.

use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{self, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::{TOKEN_PARAM, path_without_token};
use crate::AppState;

/// How long connecting to the app may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Headers that belong to one connection, not to the message.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn bad_gateway(port: u16, why: impl std::fmt::Display) -> Response {
    (
        StatusCode::BAD_GATEWAY,
        format!("502: nothing answered on port {port} inside the sandbox ({why}); start the server first\n"),
    )
        .into_response()
}

/// The request's headers as the app should see them.
fn upstream_headers(incoming: &HeaderMap, port: u16) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(incoming.len());
    // Headers the Connection header names are hop-by-hop too.
    let named: Vec<String> = incoming
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_ascii_lowercase())
        .collect();
    for (name, value) in incoming {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n)
            || named.iter().any(|h| h == n)
            || n == "host"
            || n == "authorization"
            || n.starts_with("sec-websocket-")
        {
            continue;
        }
        if name == header::COOKIE {
            // The preview cookie is the daemon's, not the app's.
            let kept: Vec<&str> = value
                .to_str()
                .unwrap_or("")
                .split(';')
                .map(str::trim)
                .filter(|c| !c.is_empty() && c.split('=').next() != Some(TOKEN_PARAM))
                .collect();
            if !kept.is_empty()
                && let Ok(v) = HeaderValue::from_str(&kept.join("; "))
            {
                out.append(header::COOKIE, v);
            }
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if let Ok(host) = HeaderValue::from_str(&format!("localhost:{port}")) {
        out.insert(header::HOST, host);
    }
    if let Ok(prefix) = HeaderValue::from_str(&format!("/proxy/{port}")) {
        out.insert(HeaderName::from_static("x-forwarded-prefix"), prefix);
    }
    if let Some(host) = incoming.get(header::HOST) {
        out.insert(HeaderName::from_static("x-forwarded-host"), host.clone());
    }
    out
}

/// A `Location` the browser can follow: paths on the app's origin go under the prefix.
fn rewrite_location(location: &str, port: u16) -> String {
    let prefix = format!("/proxy/{port}");
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
    ] {
        if let Some(rest) = location.strip_prefix(&origin)
            && (rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'))
        {
            return format!("{prefix}{}", if rest.is_empty() { "/" } else { rest });
        }
    }
    if location.starts_with('/') && !location.starts_with("//") {
        return format!("{prefix}{location}");
    }
    location.to_string()
}

/// The app's path and query for a request under `/proxy/{port}`, the preview token left out.
fn upstream_path(uri: &Uri, port: u16) -> String {
    let prefix = format!("/proxy/{port}");
    let path = uri.path().strip_prefix(&prefix).unwrap_or("/");
    let path = if path.is_empty() { "/" } else { path };
    path_without_token(path, uri.query())
}

/// `/proxy/{port}` without the slash: the app's root is one level down.
pub async fn bare(Path(port): Path<u16>) -> Response {
    let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/proxy/{port}/")) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// `ANY /proxy/{port}/{*rest}`
pub async fn forward(
    State(app): State<AppState>,
    Path((port, _rest)): Path<(u16, String)>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    request: Request,
) -> Response {
    forward_to(app, port, upgrade.ok(), request).await
}

/// `ANY /proxy/{port}/`
pub async fn forward_root(
    State(app): State<AppState>,
    Path(port): Path<u16>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    request: Request,
) -> Response {
    forward_to(app, port, upgrade.ok(), request).await
}

async fn forward_to(
    app: AppState,
    port: u16,
    upgrade: Option<WebSocketUpgrade>,
    request: Request,
) -> Response {
    if port == 0 {
        return (StatusCode::BAD_REQUEST, "400: port 0 is not a server\n").into_response();
    }
    let path = upstream_path(request.uri(), port);
    match upgrade {
        Some(upgrade) => websocket(port, &path, request.headers(), upgrade).await,
        None => http(&app, port, &path, request).await,
    }
}

async fn http(app: &AppState, port: u16, path: &str, request: Request) -> Response {
    let client = match app.proxy_client() {
        Ok(client) => client,
        Err(e) => return bad_gateway(port, e),
    };
    let (parts, body) = request.into_parts();
    let url = format!("http://127.0.0.1:{port}{path}");
    let body = reqwest::Body::wrap_stream(body.into_data_stream());
    let sent = client
        .request(parts.method.clone(), &url)
        .headers(upstream_headers(&parts.headers, port))
        .body(body)
        .send()
        .await;
    let upstream = match sent {
        Ok(response) => response,
        Err(e) if e.is_connect() || e.is_timeout() => {
            return bad_gateway(port, "connection refused");
        }
        Err(e) => return bad_gateway(port, e),
    };
    let mut response = Response::builder().status(upstream.status());
    if let Some(headers) = response.headers_mut() {
        for (name, value) in upstream.headers() {
            if HOP_BY_HOP.contains(&name.as_str()) {
                continue;
            }
            if name == header::LOCATION
                && let Ok(location) = value.to_str()
                && let Ok(rewritten) = HeaderValue::from_str(&rewrite_location(location, port))
            {
                headers.append(name.clone(), rewritten);
                continue;
            }
            headers.append(name.clone(), value.clone());
        }
    }
    response
        .body(Body::from_stream(upstream.bytes_stream()))
        .unwrap_or_else(|e| bad_gateway(port, e))
}

async fn websocket(
    port: u16,
    path: &str,
    headers: &HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let Ok(mut request) = format!("ws://127.0.0.1:{port}{path}").into_client_request() else {
        return (StatusCode::BAD_REQUEST, "400: bad WebSocket path\n").into_response();
    };
    let protocols = headers.get(header::SEC_WEBSOCKET_PROTOCOL).cloned();
    for (name, value) in upstream_headers(headers, port) {
        if let Some(name) = name {
            request.headers_mut().insert(name, value);
        }
    }
    if let Some(protocols) = &protocols {
        request
            .headers_mut()
            .insert(header::SEC_WEBSOCKET_PROTOCOL, protocols.clone());
    }
    let connected =
        tokio::time::timeout(CONNECT_TIMEOUT, tokio_tungstenite::connect_async(request)).await;
    let (app_socket, answer) = match connected {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => return bad_gateway(port, e),
        Err(_) => return bad_gateway(port, "no answer in time"),
    };
    // Agree to the subprotocol the app chose.
    let chosen = answer
        .headers()
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let upgrade = match chosen {
        Some(p) => upgrade.protocols([p]),
        None => upgrade,
    };
    upgrade.on_upgrade(move |client| pump(client, app_socket))
}

/// Copies messages both ways until either side closes.
async fn pump(
    client: WebSocket,
    app: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) {
    let (mut to_client, mut from_client) = client.split();
    let (mut to_app, mut from_app) = app.split();
    let inbound = async {
        while let Some(Ok(message)) = from_client.next().await {
            let message = match message {
                ws::Message::Text(t) => tungstenite::Message::Text(t.as_str().into()),
                ws::Message::Binary(b) => tungstenite::Message::Binary(b),
                ws::Message::Ping(b) => tungstenite::Message::Ping(b),
                ws::Message::Pong(b) => tungstenite::Message::Pong(b),
                ws::Message::Close(_) => break,
            };
            if to_app.send(message).await.is_err() {
                break;
            }
        }
        let _ = to_app.close().await;
    };
    let outbound = async {
        while let Some(Ok(message)) = from_app.next().await {
            let message = match message {
                tungstenite::Message::Text(t) => ws::Message::Text(t.as_str().into()),
                tungstenite::Message::Binary(b) => ws::Message::Binary(b),
                tungstenite::Message::Ping(b) => ws::Message::Ping(b),
                tungstenite::Message::Pong(b) => ws::Message::Pong(b),
                tungstenite::Message::Close(_) => break,
                tungstenite::Message::Frame(_) => continue,
            };
            if to_client.send(message).await.is_err() {
                break;
            }
        }
        let _ = to_client.close().await;
    };
    tokio::select! {
        () = inbound => {}
        () = outbound => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_stay_under_the_prefix() {
        assert_eq!(rewrite_location("/login", 8000), "/proxy/8000/login");
        assert_eq!(
            rewrite_location("http://localhost:8000/a?b=1", 8000),
            "/proxy/8000/a?b=1"
        );
        assert_eq!(
            rewrite_location("http://127.0.0.1:8000", 8000),
            "/proxy/8000/"
        );
        assert_eq!(
            rewrite_location("https://example.com/x", 8000),
            "https://example.com/x"
        );
        assert_eq!(
            rewrite_location("//cdn.example.com/x", 8000),
            "//cdn.example.com/x"
        );
        assert_eq!(rewrite_location("next", 8000), "next");
    }

    #[test]
    fn the_app_gets_its_path_without_the_token() {
        let uri: Uri = "/proxy/3000/api/x?q=1&cove_preview=s".parse().unwrap();
        assert_eq!(upstream_path(&uri, 3000), "/api/x?q=1");
        let uri: Uri = "/proxy/3000/".parse().unwrap();
        assert_eq!(upstream_path(&uri, 3000), "/");
    }

    #[test]
    fn credentials_and_hop_by_hop_headers_stay_behind() {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer secret"),
        );
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; cove_preview=t; b=2"),
        );
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-private"),
        );
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert("x-app", HeaderValue::from_static("kept"));
        h.insert(header::HOST, HeaderValue::from_static("sandbox:7700"));
        let out = upstream_headers(&h, 5000);
        assert!(out.get(header::AUTHORIZATION).is_none());
        assert_eq!(out[header::COOKIE], "a=1; b=2");
        assert!(out.get("x-private").is_none() && out.get(header::CONNECTION).is_none());
        assert_eq!(out["x-app"], "kept");
        assert_eq!(out[header::HOST], "localhost:5000");
        assert_eq!(out["x-forwarded-host"], "sandbox:7700");
        assert_eq!(out["x-forwarded-prefix"], "/proxy/5000");
    }
}
