//! The servers the agent runs inside the sandbox, reached over HTTP and WebSocket with bodies
//! streamed both ways: at `p<port>-<run>.<base>` for browsers (the app at the root of its own
//! origin), and at `/proxy/<port>/` on the daemon's origin for the API token's holder.
//!
//! Only a port a process of the agent's sessions listens on is reached (see [`super::ports`]),
//! on the address it listens on, IPv6 included. The app sees a request for `localhost:<port>`
//! (dev servers check the Host) with the daemon's credentials taken out; redirects to its own
//! address come back on the preview origin.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::{self, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::OwnedSemaphorePermit;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::ports::PortCheck;
use super::{is_preview_cookie, path_without_token, text};
use crate::AppState;

/// How long connecting to the app may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest path and query forwarded.
const MAX_URL_BYTES: usize = 8 * 1024;

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

/// Where the app is mounted for the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mount {
    /// At the root of its own origin, `p<port>-<run>.<base>`.
    Own,
    /// Under `/proxy/<port>` on the daemon's origin.
    Prefixed,
}

fn bad_gateway(port: u16, why: impl std::fmt::Display) -> Response {
    text(
        StatusCode::BAD_GATEWAY,
        &format!(
            "502: nothing answered on port {port} inside the sandbox ({why}); start the server first\n"
        ),
    )
}

/// The request's headers as the app should see them.
fn upstream_headers(incoming: &HeaderMap, port: u16, mount: Mount, https: bool) -> HeaderMap {
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
            || n.starts_with("x-forwarded-")
        {
            continue;
        }
        if name == header::COOKIE {
            // Preview cookies (this daemon's or another's on the same host) are not the app's.
            let kept: Vec<&str> = value
                .to_str()
                .unwrap_or("")
                .split(';')
                .map(str::trim)
                .filter(|c| !c.is_empty() && !is_preview_cookie(c.split('=').next().unwrap_or("")))
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
    if mount == Mount::Prefixed
        && let Ok(prefix) = HeaderValue::from_str(&format!("/proxy/{port}"))
    {
        out.insert(HeaderName::from_static("x-forwarded-prefix"), prefix);
    }
    if let Some(host) = incoming.get(header::HOST) {
        out.insert(HeaderName::from_static("x-forwarded-host"), host.clone());
    }
    out.insert(
        HeaderName::from_static("x-forwarded-proto"),
        HeaderValue::from_static(if https { "https" } else { "http" }),
    );
    out
}

/// A `Location` the browser can follow: the app's own address becomes the preview origin.
fn rewrite_location(location: &str, port: u16, mount: Mount) -> String {
    let prefix = match mount {
        Mount::Own => String::new(),
        Mount::Prefixed => format!("/proxy/{port}"),
    };
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
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

/// A `Set-Cookie` value without its `Domain`: the cookie stays on the app's own origin
/// rather than reaching every other preview (and the daemon) under the same name.
fn host_only_cookie(value: &str) -> String {
    value
        .split(';')
        .filter(|part| {
            !part
                .trim()
                .split('=')
                .next()
                .is_some_and(|k| k.trim().eq_ignore_ascii_case("domain"))
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// The app's path and query for a request, the preview token left out.
fn upstream_path(uri: &Uri, port: u16, mount: Mount) -> String {
    let path = match mount {
        Mount::Own => uri.path(),
        Mount::Prefixed => uri
            .path()
            .strip_prefix(&format!("/proxy/{port}"))
            .unwrap_or("/"),
    };
    let path = if path.is_empty() { "/" } else { path };
    path_without_token(path, uri.query())
}

/// A request to the app's own origin.
pub async fn site(app: AppState, port: u16, request: Request) -> Response {
    forward(app, port, Mount::Own, request).await
}

/// `/proxy/<port>/...` on the daemon's origin, for the API token's holder.
pub async fn on_daemon_origin(app: AppState, port: u16, request: Request) -> Response {
    // A service worker registered here would control the API's origin.
    if request.headers().contains_key("service-worker") {
        return text(
            StatusCode::FORBIDDEN,
            "403: no service worker is served from the daemon's origin\n",
        );
    }
    if request.uri().path() == format!("/proxy/{port}") {
        // The app's root is one level down.
        let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
        if let Ok(location) = HeaderValue::from_str(&format!("/proxy/{port}/")) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        return response;
    }
    forward(app, port, Mount::Prefixed, request).await
}

/// Where the app on `port` listens, if it is the agent's.
async fn upstream(app: &AppState, port: u16) -> Result<SocketAddr, Response> {
    let agent = app.shell.agent_processes();
    let check = {
        let app = app.clone();
        crate::blocking::blocking(move || app.preview.ports.check(port, &agent)).await
    };
    match check {
        Ok(PortCheck::Agent(addr)) => Ok(addr),
        Ok(PortCheck::NotListening) => Err(bad_gateway(port, "nothing listens on it")),
        Ok(PortCheck::NotAgents) => Err(text(
            StatusCode::FORBIDDEN,
            &format!(
                "403: port {port} is held by a process the agent did not start; only servers started from the agent's shell sessions can be previewed\n"
            ),
        )),
        Err(e) => Err(bad_gateway(port, e)),
    }
}

async fn forward(app: AppState, port: u16, mount: Mount, request: Request) -> Response {
    let url_len = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if url_len > MAX_URL_BYTES {
        return text(
            StatusCode::URI_TOO_LONG,
            &format!("414: the URL is over {MAX_URL_BYTES} bytes\n"),
        );
    }
    let Ok(permit) = app.preview.proxied.clone().try_acquire_owned() else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "503: too many proxied requests at once; retry in a moment\n",
        );
    };
    let addr = match upstream(&app, port).await {
        Ok(addr) => addr,
        Err(refusal) => return refusal,
    };
    let path = upstream_path(request.uri(), port, mount);
    let https = app.preview.origins.public().is_some_and(|p| p.https);
    let wants_socket = request
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if wants_socket {
        let (mut parts, _) = request.into_parts();
        return match WebSocketUpgrade::from_request_parts(&mut parts, &app).await {
            Ok(upgrade) => {
                let headers = upstream_headers(&parts.headers, port, mount, https);
                websocket(addr, port, &path, &parts.headers, headers, upgrade, permit).await
            }
            Err(rejection) => rejection.into_response(),
        };
    }
    http(&app, addr, port, mount, &path, request, https, permit).await
}

#[allow(clippy::too_many_arguments)]
async fn http(
    app: &AppState,
    addr: SocketAddr,
    port: u16,
    mount: Mount,
    path: &str,
    request: Request,
    https: bool,
    permit: OwnedSemaphorePermit,
) -> Response {
    let client = match app.proxy_client() {
        Ok(client) => client,
        Err(e) => return bad_gateway(port, e),
    };
    let (parts, body) = request.into_parts();
    let url = format!("http://{addr}{path}");
    let body = reqwest::Body::wrap_stream(body.into_data_stream());
    let sent = client
        .request(parts.method.clone(), &url)
        .headers(upstream_headers(&parts.headers, port, mount, https))
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
            if mount == Mount::Prefixed && name.as_str() == "service-worker-allowed" {
                continue;
            }
            if name == header::SET_COOKIE
                && let Ok(cookie) = value.to_str()
                && let Ok(host_only) = HeaderValue::from_str(&host_only_cookie(cookie))
            {
                headers.append(name.clone(), host_only);
                continue;
            }
            if name == header::LOCATION
                && let Ok(location) = value.to_str()
                && let Ok(rewritten) =
                    HeaderValue::from_str(&rewrite_location(location, port, mount))
            {
                headers.append(name.clone(), rewritten);
                continue;
            }
            headers.append(name.clone(), value.clone());
        }
    }
    if mount == Mount::Prefixed
        && let Some(headers) = response.headers_mut()
    {
        // Served on the API's origin (to the API token's holder): nothing in it may run.
        headers.append(
            HeaderName::from_static("content-security-policy"),
            HeaderValue::from_static("sandbox"),
        );
    }
    // The permit is held until the body has been sent.
    let body = upstream.bytes_stream().map(move |chunk| {
        let _held = &permit;
        chunk
    });
    response
        .body(Body::from_stream(body))
        .unwrap_or_else(|e| bad_gateway(port, e))
}

async fn websocket(
    addr: SocketAddr,
    port: u16,
    path: &str,
    incoming: &HeaderMap,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
    permit: OwnedSemaphorePermit,
) -> Response {
    let Ok(mut request) = format!("ws://{addr}{path}").into_client_request() else {
        return text(StatusCode::BAD_REQUEST, "400: bad WebSocket path\n");
    };
    let protocols = incoming.get(header::SEC_WEBSOCKET_PROTOCOL).cloned();
    for (name, value) in headers {
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
    upgrade.on_upgrade(move |client| async move {
        pump(client, app_socket).await;
        drop(permit);
    })
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
    fn redirects_stay_on_the_preview() {
        for mount in [Mount::Own, Mount::Prefixed] {
            let p = if mount == Mount::Own {
                ""
            } else {
                "/proxy/8000"
            };
            assert_eq!(
                rewrite_location("/login", 8000, mount),
                format!("{p}/login")
            );
            assert_eq!(
                rewrite_location("http://localhost:8000/a?b=1", 8000, mount),
                format!("{p}/a?b=1")
            );
            assert_eq!(
                rewrite_location("http://127.0.0.1:8000", 8000, mount),
                format!("{p}/")
            );
            assert_eq!(
                rewrite_location("https://example.com/x", 8000, mount),
                "https://example.com/x"
            );
            assert_eq!(
                rewrite_location("//cdn.example.com/x", 8000, mount),
                "//cdn.example.com/x"
            );
            assert_eq!(rewrite_location("next", 8000, mount), "next");
        }
    }

    #[test]
    fn app_cookies_stay_on_the_apps_origin() {
        assert_eq!(
            host_only_cookie("sid=1; Domain=sb.example.com; Path=/; HttpOnly"),
            "sid=1; Path=/; HttpOnly"
        );
        assert_eq!(host_only_cookie("a=b;domain = .x;Secure"), "a=b;Secure");
        assert_eq!(host_only_cookie("theme=dark"), "theme=dark");
    }

    #[test]
    fn the_app_gets_its_path_without_the_token() {
        let uri: Uri = "/proxy/3000/api/x?q=1&cove_preview=s".parse().unwrap();
        assert_eq!(upstream_path(&uri, 3000, Mount::Prefixed), "/api/x?q=1");
        let uri: Uri = "/proxy/3000/".parse().unwrap();
        assert_eq!(upstream_path(&uri, 3000, Mount::Prefixed), "/");
        let uri: Uri = "/api/x?cove_preview=s&q=1".parse().unwrap();
        assert_eq!(upstream_path(&uri, 3000, Mount::Own), "/api/x?q=1");
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
            HeaderValue::from_static(
                "a=1; cove_preview_1234abcd=t; __Host-cove_preview_9=u; cove_preview_other=v; b=2",
            ),
        );
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-private"),
        );
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert("x-forwarded-for", HeaderValue::from_static("1.2.3.4"));
        h.insert("x-app", HeaderValue::from_static("kept"));
        h.insert(
            header::HOST,
            HeaderValue::from_static("p5000.localhost:7700"),
        );
        let out = upstream_headers(&h, 5000, Mount::Own, false);
        assert!(out.get(header::AUTHORIZATION).is_none());
        assert_eq!(out[header::COOKIE], "a=1; b=2");
        assert!(out.get("x-private").is_none() && out.get(header::CONNECTION).is_none());
        assert!(
            out.get("x-forwarded-for").is_none(),
            "clients cannot forge these"
        );
        assert_eq!(out["x-app"], "kept");
        assert_eq!(out[header::HOST], "localhost:5000");
        assert_eq!(out["x-forwarded-host"], "p5000.localhost:7700");
        assert_eq!(out["x-forwarded-proto"], "http");
        assert!(out.get("x-forwarded-prefix").is_none());
        let out = upstream_headers(&h, 5000, Mount::Prefixed, true);
        assert_eq!(out["x-forwarded-prefix"], "/proxy/5000");
        assert_eq!(out["x-forwarded-proto"], "https");
    }
}
