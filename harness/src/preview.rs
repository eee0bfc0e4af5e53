//! Clients for the preview origins (`p<port>.localhost`, `files.localhost`): browsers resolve
//! `*.localhost` to loopback themselves, but the system resolver here need not, so these
//! clients do it for the names they are given.

use std::net::SocketAddr;

use anyhow::{Context, Result, anyhow};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The host name of `url` (`http://p8000.localhost:7700/x` → `p8000.localhost`).
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    authority
        .rsplit_once(':')
        .map_or(authority, |(h, _)| h)
        .to_string()
}

/// An HTTP client that follows no redirects and reaches every `*.localhost` name of `urls`
/// on 127.0.0.1, as a browser would.
pub fn client(urls: &[&str]) -> reqwest::Client {
    let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
    for url in urls {
        let host = host_of(url);
        if host.ends_with(".localhost") {
            builder = builder.resolve(&host, loopback);
        }
    }
    builder.build().unwrap_or_default()
}

/// Opens a WebSocket to `url` (a `*.localhost` name is dialled on 127.0.0.1), sending
/// `cookie` if given.
pub async fn websocket(
    url: &str,
    cookie: Option<&str>,
) -> Result<WebSocketStream<MaybeTlsStream<TcpStream>>> {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
    websocket_with(url, &headers).await
}

/// Opens a WebSocket to `url` as a page of `page_origin` would, with `cookie`.
pub async fn websocket_from(
    url: &str,
    cookie: &str,
    page_origin: &str,
) -> Result<WebSocketStream<MaybeTlsStream<TcpStream>>> {
    websocket_with(url, &[("cookie", cookie), ("origin", page_origin)]).await
}

/// Opens a WebSocket to `url` with `headers` (a `*.localhost` name is dialled on 127.0.0.1).
async fn websocket_with(
    url: &str,
    headers: &[(&str, &str)],
) -> Result<WebSocketStream<MaybeTlsStream<TcpStream>>> {
    let mut request = url.into_client_request()?;
    for (name, value) in headers {
        request.headers_mut().insert(
            HeaderName::from_bytes(name.as_bytes())?,
            HeaderValue::from_str(value)?,
        );
    }
    let uri = request.uri().clone();
    let port = uri
        .port_u16()
        .ok_or_else(|| anyhow!("{url} names no port"))?;
    let host = uri.host().unwrap_or("localhost");
    let ip = if host == "localhost" || host.ends_with(".localhost") {
        "127.0.0.1".to_string()
    } else {
        host.to_string()
    };
    let stream = TcpStream::connect((ip.as_str(), port))
        .await
        .with_context(|| format!("cannot connect to {url}"))?;
    let (socket, _) =
        tokio_tungstenite::client_async(request, MaybeTlsStream::Plain(stream)).await?;
    Ok(socket)
}

/// Opens a preview link as a browser's first request would: the answer trades its token for
/// the cookie. Returns the cookie (`name=value`) and where the answer sends the browser.
pub async fn trade_link(http: &reqwest::Client, link: &str) -> Result<(String, String)> {
    let answer = http.get(link).send().await?;
    let header = |name: &str| -> Result<String> {
        Ok(answer
            .headers()
            .get(name)
            .ok_or_else(|| anyhow!("no {name} in the answer to {link}: {answer:?}"))?
            .to_str()?
            .to_string())
    };
    let cookie = header("set-cookie")?;
    let cookie = cookie.split(';').next().unwrap_or_default().to_string();
    Ok((cookie, header("location")?))
}

/// The origin of a URL: everything before its path.
pub fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    format!(
        "{scheme}://{}",
        rest.split(['/', '?']).next().unwrap_or(rest)
    )
}

/// A free port on 127.0.0.1 (free when asked; a test binds it soon after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// The origin of the app on `port` of the daemon that gave `link` (a link to one of its
/// previews): the same run's label, another port.
pub fn app_origin(link: &str, port: u16) -> String {
    let origin = origin(link);
    let (scheme, rest) = origin.split_once("://").unwrap_or(("http", &origin));
    let (label, base) = rest.split_once('.').unwrap_or((rest, ""));
    let run = label.rsplit_once('-').map_or("", |(_, id)| id);
    format!("{scheme}://p{port}-{run}.{base}")
}
