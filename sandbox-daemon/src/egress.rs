//! The sandbox's doors to the network, when its only network is loopback: coved listens on
//! `127.0.0.1:PORT` inside and passes each connection to a unix socket the controller holds
//! outside (`--egress-socket`), which decides where it may go. The proxy port carries
//! whatever clients send a proxy (`HTTP_PROXY` points there); a shared host port opens a
//! tunnel to that port of the host's loopback, so `127.0.0.1:5432` inside is the host's
//! database when the user shares it.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream, UnixStream};

/// What one listener inside does with its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// Passed on as they are: the client speaks to the proxy.
    Proxy,
    /// A tunnel to this port of the host's loopback.
    HostPort(u16),
}

/// Opens the doors: listeners on `127.0.0.1` inside, relaying to `socket`. Fails when a
/// port is taken.
pub async fn open(socket: &Path, doors: &[(u16, Door)]) -> std::io::Result<()> {
    for &(port, door) in doors {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot listen on 127.0.0.1:{port}: {e}"))
        })?;
        let socket = socket.to_path_buf();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors, say: a moment before trying again, not a spin.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                };
                let socket = socket.clone();
                tokio::spawn(async move {
                    if let Err(e) = relay(stream, &socket, door).await {
                        tracing::debug!(error = %e, port, "egress relay ended");
                    }
                });
            }
        });
    }
    Ok(())
}

async fn relay(mut inside: TcpStream, socket: &PathBuf, door: Door) -> std::io::Result<()> {
    let mut outside = UnixStream::connect(socket).await?;
    if let Door::HostPort(port) = door {
        outside
            .write_all(
                format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")
                    .as_bytes(),
            )
            .await?;
        let mut reader = BufReader::new(outside);
        let mut status = String::new();
        reader.read_line(&mut status).await?;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await? == 0 || line == "\r\n" || line == "\n" {
                break;
            }
        }
        if status.split(' ').nth(1) != Some("200") {
            return Err(std::io::Error::other(format!(
                "the controller refused host port {port}: {}",
                status.trim()
            )));
        }
        // What the service said first (a greeting) may have come with the head.
        let early = reader.buffer().to_vec();
        outside = reader.into_inner();
        if !early.is_empty() {
            inside.write_all(&early).await?;
        }
    }
    tokio::io::copy_bidirectional(&mut inside, &mut outside).await?;
    Ok(())
}
