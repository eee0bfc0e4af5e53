//! The daemon's HTTP server: hyper with a clock, so nothing a client does can hold the daemon.
//!
//! A connection must send a request head within the idle timeout (a half-sent request, or a
//! kept-alive connection that sends nothing more, is closed), and at most so many connections
//! are open at once, WebSockets included: past the cap, new ones are closed at once rather
//! than left to queue, so the ones in use (the controller's) keep being served. Each request learns its peer's
//! address (axum's `ConnectInfo`), for the log and the failed-token limit.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

/// How the server treats its clients.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// Connections open at once, at most.
    pub max_connections: usize,
    /// How long a connection may take to send a request head, kept-alive ones included.
    pub idle_timeout: Duration,
    /// How long requests under way may take to finish once shutdown starts.
    pub drain_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 1024,
            idle_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(5),
        }
    }
}

/// How often the log may say that the connection cap is reached.
const CAP_LOG_EVERY: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests under way
/// finish (up to the drain timeout).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()>,
) {
    let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(max));
    // Dropped at shutdown: every connection then finishes its request and closes.
    let (stop, stopped) = watch::channel(());
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle_timeout)
        .keep_alive(true);
    let mut last_cap_log: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of descriptors, say: wait a moment rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            if last_cap_log.is_none_or(|at| at.elapsed() >= CAP_LOG_EVERY) {
                tracing::warn!(
                    max = limits.max_connections,
                    %peer,
                    "connection limit reached; closing new connections until some end"
                );
                last_cap_log = Some(Instant::now());
            }
            drop(stream);
            continue;
        };
        // Streamed output and screenshots are several writes each; Nagle's algorithm would
        // hold them back until the client's delayed ACK.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let connection = builder
            .serve_connection(
                TokioIo::new(Counted {
                    stream,
                    _permit: permit,
                }),
                service,
            )
            .with_upgrades();
        let mut stopped = stopped.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = stopped.changed() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
    drop(listener);
    drop(stop);
    let drained = u32::try_from(max).unwrap_or(u32::MAX);
    if tokio::time::timeout(limits.drain_timeout, permits.acquire_many(drained))
        .await
        .is_err()
    {
        tracing::warn!(
            "requests still open after {:?}; closing them",
            limits.drain_timeout
        );
    }
}

/// A connection's socket with its place under the connection cap: the place is given back
/// when the socket closes, also when an upgrade has handed it on to a WebSocket.
struct Counted {
    stream: tokio::net::TcpStream,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl AsyncRead for Counted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Raises this process's soft limit on open files to its hard limit, and returns the limit:
/// each connection, shell and browser pipe is a descriptor, and the usual soft limit (1024)
/// is low for a server.
pub fn raise_open_files_limit() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let below_hard = match (limit.current, limit.maximum) {
        (Some(current), Some(maximum)) => current < maximum,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if below_hard {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!(error = %e, "cannot raise the open files limit");
        }
    }
    getrlimit(Resource::Nofile).current
}

/// The address a connection came from, as [`serve`] records it.
pub fn peer(extensions: &axum::http::Extensions) -> Option<SocketAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| *addr)
}

/// Extractor: the client's IP address, when the request came through [`serve`].
#[derive(Debug, Clone, Copy)]
pub struct ConnectInfoPeer(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ConnectInfoPeer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(ConnectInfoPeer(peer(&parts.extensions).map(|a| a.ip())))
    }
}
