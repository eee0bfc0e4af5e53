//! The local sandbox's way out: an HTTP proxy on a unix socket that only the sandbox sees.
//! The sandbox has a network of its own with nothing but loopback; coved relays its
//! `127.0.0.1:3128` (and the host ports the user shares) to this socket, and this side
//! resolves each destination here, checks it against the [`NetPolicy`], and connects to the
//! very addresses it checked (a name that resolves to loopback a moment later changes
//! nothing). `CONNECT host:port` tunnels anything (TLS, SSH); a plain `GET http://…` is
//! forwarded for one request.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use super::net_policy::{NetPolicy, Refused};

/// Longest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// Time a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Time a destination has to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Connections one sandbox keeps open at once through the proxy (each costs the controller
/// two descriptors).
const MAX_CONNECTIONS: usize = 256;

/// The proxy, serving until dropped.
#[derive(Debug)]
pub struct Egress {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Egress {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Egress {
    /// Listens on `socket` (created 0600 in a folder only this user reaches).
    pub fn start(socket: &Path, policy: NetPolicy) -> std::io::Result<Egress> {
        let listener = UnixListener::bind(socket)?;
        let policy = Arc::new(policy.with_own_addresses(super::net_policy::own_addresses()));
        let turns = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    // Out of descriptors, say: a moment before trying again, not a spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let policy = policy.clone();
                let Ok(turn) = turns.clone().try_acquire_owned() else {
                    tokio::spawn(async move {
                        let why = format!(
                            "the sandbox has {MAX_CONNECTIONS} connections open through the proxy; close some"
                        );
                        let _ = answer(&mut stream, 503, "Service Unavailable", &why).await;
                    });
                    continue;
                };
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, &policy).await {
                        tracing::debug!(error = %e, "sandbox egress connection ended");
                    }
                    drop(turn);
                });
            }
        });
        Ok(Egress { task })
    }
}

/// What the client asked for.
#[derive(Debug, PartialEq, Eq)]
struct Asked {
    connect: bool,
    host: String,
    port: u16,
    /// The head to send on (a plain request, rewritten to the origin's form).
    forward: Vec<u8>,
}

async fn serve(stream: UnixStream, policy: &NetPolicy) -> std::io::Result<()> {
    let mut client = BufReader::new(stream);
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(head) => head?,
        Err(_) => return Ok(()),
    };
    let asked = match parse(&head) {
        Ok(asked) => asked,
        Err(why) => return answer(client.get_mut(), 400, "Bad Request", &why).await,
    };
    let upstream = match open(&asked, policy).await {
        Ok(upstream) => upstream,
        Err(Opened::Refused(refused)) => {
            tracing::info!(host = %refused.host, port = refused.port, kind = refused.kind, "the sandbox was refused a connection");
            return answer(client.get_mut(), 403, "Forbidden", &refused.to_string()).await;
        }
        Err(Opened::Failed(why)) => {
            return answer(client.get_mut(), 502, "Bad Gateway", &why).await;
        }
    };
    let mut upstream = upstream;
    if asked.connect {
        client
            .get_mut()
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
    } else {
        upstream.write_all(&asked.forward).await?;
    }
    // Whatever the client sent past its head is already in the buffer.
    let buffered = client.buffer().to_vec();
    if !buffered.is_empty() {
        upstream.write_all(&buffered).await?;
    }
    let mut client = client.into_inner();
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

async fn read_head(client: &mut BufReader<UnixStream>) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    loop {
        let n = client.read_until(b'\n', &mut head).await?;
        if n == 0 || head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") {
            return Ok(head);
        }
        if head.len() > MAX_HEAD {
            return Err(std::io::Error::other("request head too long"));
        }
    }
}

/// Reads a proxy request: `CONNECT host:port`, or a request for an absolute `http://` URL.
fn parse(head: &[u8]) -> Result<Asked, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request is not text".to_string())?;
    let mut lines = text.split("\r\n").flat_map(|l| l.split('\n'));
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if !m.is_empty() => (m, t, v),
        _ => return Err(format!("{first:?} is not an HTTP request line")),
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(target, 443)?;
        return Ok(Asked {
            connect: true,
            host,
            port,
            forward: Vec::new(),
        });
    }
    let url = reqwest::Url::parse(target)
        .map_err(|_| format!("{target:?} is not an absolute URL; this is a proxy"))?;
    if url.scheme() != "http" {
        return Err(format!(
            "{}: URLs are tunnelled with CONNECT, not forwarded",
            url.scheme()
        ));
    }
    let host = url
        .host_str()
        .ok_or_else(|| format!("{target:?} names no host"))?
        .trim_matches(['[', ']'])
        .to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let mut forward = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or("").trim();
        let hop = [
            "proxy-connection",
            "proxy-authorization",
            "connection",
            "keep-alive",
        ];
        if !hop.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            forward.push_str(line);
            forward.push_str("\r\n");
        }
    }
    // One request per connection: the next may be for another host.
    forward.push_str("Connection: close\r\n\r\n");
    Ok(Asked {
        connect: false,
        host,
        port,
        forward: forward.into_bytes(),
    })
}

fn split_authority(target: &str, default_port: u16) -> Result<(String, u16), String> {
    let bad = || format!("{target:?} is not host:port");
    if let Some(rest) = target.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None => default_port,
        };
        return Ok((host.to_string(), port));
    }
    match target.rsplit_once(':') {
        Some(("", _)) => Err(bad()),
        Some((host, port)) => Ok((host.to_string(), port.parse().map_err(|_| bad())?)),
        None if !target.is_empty() => Ok((target.to_string(), default_port)),
        None => Err(bad()),
    }
}

enum Opened {
    Refused(Refused),
    Failed(String),
}

/// Resolves, checks and connects to what the client asked for.
async fn open(asked: &Asked, policy: &NetPolicy) -> Result<TcpStream, Opened> {
    let addrs: Vec<IpAddr> = match asked.host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => tokio::net::lookup_host((asked.host.as_str(), asked.port))
            .await
            .map_err(|e| Opened::Failed(format!("cannot resolve {}: {e}", asked.host)))?
            .map(|a| a.ip())
            .collect(),
    };
    let allowed = policy
        .decide(&asked.host, asked.port, &addrs)
        .map_err(Opened::Refused)?;
    let mut last = String::from("no address");
    for addr in allowed {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = format!("{addr}: {e}"),
            Err(_) => last = format!("{addr}: no answer within {} s", CONNECT_TIMEOUT.as_secs()),
        }
    }
    Err(Opened::Failed(format!(
        "cannot connect to {}:{} ({last})",
        asked.host, asked.port
    )))
}

async fn answer(
    client: &mut UnixStream,
    status: u16,
    reason: &str,
    message: &str,
) -> std::io::Result<()> {
    let body = format!("cove: {message}\n");
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await?;
    // Let the client read the answer before the socket goes.
    let mut sink = [0u8; 256];
    let _ = tokio::time::timeout(Duration::from_secs(1), client.read(&mut sink)).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_requests_are_read() {
        let asked = parse(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").unwrap();
        assert!(asked.connect);
        assert_eq!((asked.host.as_str(), asked.port), ("pypi.org", 443));
        let asked = parse(b"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((asked.host.as_str(), asked.port), ("::1", 8080));
        let asked = parse(
            b"GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert!(!asked.connect);
        assert_eq!((asked.host.as_str(), asked.port), ("example.com", 8080));
        assert_eq!(
            String::from_utf8(asked.forward).unwrap(),
            "GET /a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn what_is_not_a_proxy_request_is_refused() {
        for bad in [
            &b"GET /relative HTTP/1.1\r\n\r\n"[..],
            b"GET https://x/ HTTP/1.1\r\n\r\n",
            b"CONNECT :443 HTTP/1.1\r\n\r\n",
            b"CONNECT host:port HTTP/1.1\r\n\r\n",
            b"nonsense\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
