//! Chromium's DevTools over `--remote-debugging-pipe`: the browser reads commands on its fd 3
//! and writes answers and events on its fd 4, NUL-terminated JSON, and opens no debugging
//! port. With no port there is no DevTools HTTP server for a preview link, a takeover page or
//! a web page to reach (the review's C1 and H1).
//!
//! chromiumoxide only connects to a WebSocket URL, so coved hands it a one-shot bridge: a
//! loopback listener at a random 256-bit path that accepts exactly one connection, and only one
//! without an `Origin` header (browsers always send one), closes as soon as it has it, and then
//! copies messages between that socket and the pipe.

use std::io::{self, PipeReader, PipeWriter};
use std::mem::ManuallyDrop;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::net::unix::pipe;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use crate::random::random_hex;

/// The descriptor Chromium reads commands from.
const CHILD_READ_FD: RawFd = 3;
/// The descriptor Chromium writes answers and events to.
const CHILD_WRITE_FD: RawFd = 4;
/// How long one connection to the bridge may take over its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes read from the browser at a time.
const READ_CHUNK: usize = 64 * 1024;

/// Both pipes of one browser: the child's ends, installed as its fds 3 and 4, and ours.
pub struct DevtoolsPipes {
    child_read: OwnedFd,
    child_write: OwnedFd,
    to_browser: PipeWriter,
    from_browser: PipeReader,
}

impl DevtoolsPipes {
    /// Creates both pipes (close-on-exec, until the child installs its ends).
    pub fn new() -> io::Result<DevtoolsPipes> {
        let (child_read, to_browser) = std::io::pipe()?;
        let (from_browser, child_write) = std::io::pipe()?;
        Ok(DevtoolsPipes {
            child_read: child_read.into(),
            child_write: child_write.into(),
            to_browser,
            from_browser,
        })
    }

    /// Makes the child find its ends at fds 3 and 4.
    #[allow(unsafe_code)]
    pub fn install(&self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let read = self.child_read.as_raw_fd();
        let write = self.child_write.as_raw_fd();
        // SAFETY: the closure runs in the forked child before exec and only makes fcntl(2) and
        // dup2(2) calls, which are async-signal-safe; it allocates nothing and the descriptors
        // it borrows stay open in the parent until the child has started.
        unsafe {
            command.pre_exec(move || {
                // Move both ends above 4 first, so installing one cannot close the other.
                let read = rustix::io::fcntl_dupfd_cloexec(BorrowedFd::borrow_raw(read), 10)?;
                let write = rustix::io::fcntl_dupfd_cloexec(BorrowedFd::borrow_raw(write), 10)?;
                // dup2 clears close-on-exec on the new descriptor, so these survive the exec.
                let mut three = ManuallyDrop::new(OwnedFd::from_raw_fd(CHILD_READ_FD));
                rustix::io::dup2(&read, &mut three)?;
                let mut four = ManuallyDrop::new(OwnedFd::from_raw_fd(CHILD_WRITE_FD));
                rustix::io::dup2(&write, &mut four)?;
                Ok(())
            });
        }
    }

    /// Once the child has started: closes its ends here (so a browser that exits is seen
    /// as the end of the pipe) and serves ours as a one-shot WebSocket. Returns its URL.
    pub async fn bridge(self, connect_within: Duration) -> io::Result<String> {
        let DevtoolsPipes {
            child_read,
            child_write,
            to_browser,
            from_browser,
        } = self;
        drop((child_read, child_write));
        let to_browser = pipe::Sender::from_owned_fd(OwnedFd::from(to_browser))?;
        let from_browser = pipe::Receiver::from_owned_fd(OwnedFd::from(from_browser))?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let path = format!("/devtools/browser/{}", random_hex(32));
        let url = format!("ws://{}{path}", listener.local_addr()?);
        let deadline = Instant::now() + connect_within;
        tokio::spawn(async move {
            let Some(socket) = accept_one(listener, &path, deadline).await else {
                tracing::warn!("nothing connected to the browser's pipe in time");
                return;
            };
            pump(socket, to_browser, from_browser).await;
        });
        Ok(url)
    }
}

type BridgeSocket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

fn config() -> WebSocketConfig {
    // Screenshots and page texts can be large; the browser is trusted to bound them.
    WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None)
}

/// Accepts connections until one asks for `path` without an `Origin`, then stops listening.
async fn accept_one(listener: TcpListener, path: &str, deadline: Instant) -> Option<BridgeSocket> {
    loop {
        let (stream, peer) = tokio::time::timeout_at(deadline, listener.accept())
            .await
            .ok()?
            .ok()?;
        // CDP is many small messages; Nagle's algorithm would hold each one back.
        let _ = stream.set_nodelay(true);
        if let Ok(bridge) = listener.local_addr()
            && !no_delay_on_client_end(peer, bridge)
        {
            tracing::debug!(%peer, "cannot find the DevTools client's end of the bridge");
        }
        // The signature is tungstenite's callback; its error type is not ours to shrink.
        #[allow(clippy::result_large_err)]
        let check = |request: &Request, response: Response| -> Result<Response, ErrorResponse> {
            if request.uri().path() != path || request.headers().contains_key("origin") {
                let mut refusal = ErrorResponse::new(None);
                *refusal.status_mut() = StatusCode::NOT_FOUND;
                return Err(refusal);
            }
            Ok(response)
        };
        let handshake =
            tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config()));
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
            Ok(Ok(socket)) => return Some(socket),
            Ok(Err(e)) => {
                tracing::warn!(%peer, error = %e, "refused a connection to the browser's pipe")
            }
            Err(_) => tracing::warn!(%peer, "a connection to the browser's pipe sent no handshake"),
        }
    }
}

/// Turns Nagle's algorithm off on the client's end of the bridge: chromiumoxide opens it, in
/// this process, without TCP_NODELAY, so a command sent while an earlier one is unanswered
/// waited for the bridge's delayed acknowledgement, about 40 ms (a state's text read waited
/// on its screenshot). Found among this process's descriptors by its two addresses.
#[allow(unsafe_code)]
fn no_delay_on_client_end(client: SocketAddr, bridge: SocketAddr) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    for entry in entries.flatten() {
        let Some(raw) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        // SAFETY: the descriptor is only borrowed for the three calls below. Were it closed
        // and reused meanwhile, they would reach whatever now holds it, and only a socket
        // whose own and peer addresses are this connection's is changed.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let ours = rustix::net::getsockname(fd)
            .ok()
            .and_then(|a| SocketAddr::try_from(a).ok());
        let theirs = rustix::net::getpeername(fd)
            .ok()
            .flatten()
            .and_then(|a| SocketAddr::try_from(a).ok());
        if ours == Some(client) && theirs == Some(bridge) {
            return rustix::net::sockopt::set_tcp_nodelay(fd, true).is_ok();
        }
    }
    false
}

/// Copies messages both ways until either side ends.
async fn pump(
    socket: BridgeSocket,
    mut to_browser: pipe::Sender,
    mut from_browser: pipe::Receiver,
) {
    let (mut to_client, mut from_client) = socket.split();
    let commands = async {
        while let Some(Ok(message)) = from_client.next().await {
            let bytes = match message {
                Message::Text(text) => text.as_bytes().to_vec(),
                Message::Binary(bytes) => bytes.to_vec(),
                Message::Close(_) => break,
                _ => continue,
            };
            if to_browser.write_all(&bytes).await.is_err()
                || to_browser.write_all(b"\0").await.is_err()
            {
                break;
            }
        }
    };
    let answers = async {
        let mut split = MessageSplitter::default();
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            let n = match from_browser.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for message in split.push(&chunk[..n]) {
                if message.is_empty() {
                    continue;
                }
                let text = String::from_utf8(message)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                if to_client
                    .send(Message::Text(Utf8Bytes::from(text)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
        let _ = to_client.close().await;
    };
    tokio::select! {
        () = commands => {}
        () = answers => {}
    }
}

/// Cuts the browser's byte stream into its NUL-terminated messages.
#[derive(Debug, Default)]
struct MessageSplitter {
    pending: Vec<u8>,
}

impl MessageSplitter {
    /// Adds `bytes`; returns the messages they complete.
    fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut done = Vec::new();
        let mut rest = bytes;
        while let Some(end) = memchr::memchr(0, rest) {
            let mut message = std::mem::take(&mut self.pending);
            message.extend_from_slice(&rest[..end]);
            done.push(message);
            rest = &rest[end + 1..];
        }
        self.pending.extend_from_slice(rest);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_end_of_a_loopback_connection_is_found_and_set_to_no_delay() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let bridge = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(bridge).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        assert!(!client.nodelay().unwrap(), "sockets start with Nagle on");
        assert!(no_delay_on_client_end(peer, bridge));
        assert!(client.nodelay().unwrap());
        // Addresses no socket here has: nothing is found.
        let elsewhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert!(!no_delay_on_client_end(elsewhere, bridge));
    }

    #[test]
    fn messages_are_cut_at_nul_wherever_the_reads_end() {
        let mut split = MessageSplitter::default();
        assert!(split.push(b"{\"id\":1").is_empty());
        assert_eq!(split.push(b"}\0{\"id\""), vec![b"{\"id\":1}".to_vec()]);
        assert_eq!(
            split.push(b":2}\0\0{}\0"),
            vec![b"{\"id\":2}".to_vec(), Vec::new(), b"{}".to_vec()]
        );
        assert!(split.pending.is_empty());
    }
}
