//! A bare takeover-page client over the WebSocket, for tests and benchmarks that need to
//! count frames and bytes exactly (the real page is driven through [`crate::viewer`]).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// One thing the daemon sent.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// A JPEG frame (already acknowledged when `auto_ack` is on).
    Frame(Vec<u8>),
    /// A JSON message (`hello`, `view`, `error`, `ended`).
    Json(Value),
    /// The socket closed.
    Closed,
}

/// A connected takeover socket.
pub struct LiveClient {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// Acknowledge each frame as it is received.
    pub auto_ack: bool,
    /// Frame bytes received so far.
    pub frame_bytes: u64,
    pub frames: u64,
}

/// Why a socket could not be opened: the HTTP status the daemon refused it with, if it did.
pub fn refusal_status(error: &anyhow::Error) -> Option<u16> {
    error.chain().find_map(
        |e| match e.downcast_ref::<tokio_tungstenite::tungstenite::Error>() {
            Some(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                Some(response.status().as_u16())
            }
            _ => None,
        },
    )
}

impl LiveClient {
    /// Connects to the socket of the takeover page at `page_url` (`http://host/takeover?token=`),
    /// presenting `token` the way the page does.
    pub async fn connect(page_url: &str, token: &str) -> Result<LiveClient> {
        let base = page_url
            .split('?')
            .next()
            .ok_or_else(|| anyhow!("bad page URL {page_url}"))?;
        let ws_url = format!("{}/ws", base.replacen("http://", "ws://", 1));
        let mut request = ws_url.into_client_request()?;
        request.headers_mut().insert(
            "sec-websocket-protocol",
            HeaderValue::from_str(&format!("cove-takeover, cove-token.{token}"))?,
        );
        let (socket, _) = tokio::time::timeout(
            Duration::from_secs(10),
            tokio_tungstenite::connect_async(request),
        )
        .await
        .context("the takeover socket did not open in time")??;
        Ok(LiveClient {
            socket,
            auto_ack: true,
            frame_bytes: 0,
            frames: 0,
        })
    }

    /// Sends one message of the page's vocabulary.
    pub async fn send(&mut self, message: Value) -> Result<()> {
        self.socket
            .send(Message::Text(message.to_string().into()))
            .await?;
        Ok(())
    }

    /// The next event, or `None` after `within`.
    pub async fn next(&mut self, within: Duration) -> Result<Option<LiveEvent>> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match tokio::time::timeout(left, self.socket.next()).await {
                Err(_) => return Ok(None),
                Ok(None) => return Ok(Some(LiveEvent::Closed)),
                Ok(Some(message)) => message?,
            };
            match message {
                Message::Binary(bytes) => {
                    self.frames += 1;
                    self.frame_bytes += bytes.len() as u64;
                    if self.auto_ack {
                        self.send(json!({"t": "ack"})).await?;
                    }
                    return Ok(Some(LiveEvent::Frame(bytes.to_vec())));
                }
                Message::Text(text) => {
                    return Ok(Some(LiveEvent::Json(serde_json::from_str(text.as_str())?)));
                }
                Message::Close(_) => return Ok(Some(LiveEvent::Closed)),
                _ => {}
            }
        }
    }

    /// Waits for a JSON message of `type`, skipping frames and other messages.
    pub async fn expect_json(&mut self, kind: &str, within: Duration) -> Result<Value> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await? {
                Some(LiveEvent::Json(v)) if v["type"] == kind => return Ok(v),
                Some(LiveEvent::Closed) => bail!("the socket closed before a {kind} message"),
                Some(_) => {}
                None => bail!("no {kind} message within {within:?}"),
            }
        }
    }

    /// Waits for the next frame, skipping JSON messages.
    pub async fn expect_frame(&mut self, within: Duration) -> Result<Vec<u8>> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await? {
                Some(LiveEvent::Frame(f)) => return Ok(f),
                Some(LiveEvent::Closed) => bail!("the socket closed before a frame"),
                Some(_) => {}
                None => bail!("no frame within {within:?}"),
            }
        }
    }

    /// Reads everything for `period`; returns the frames received in it.
    pub async fn frames_during(&mut self, period: Duration) -> Result<u64> {
        let before = self.frames;
        let deadline = Instant::now() + period;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            if let Some(LiveEvent::Closed) = self.next(left).await? {
                break;
            }
        }
        Ok(self.frames - before)
    }

    /// A click at `(x, y)` of a `w`×`h` view: move, press, release.
    pub async fn click(&mut self, x: f64, y: f64, w: f64, h: f64) -> Result<()> {
        for (kind, buttons) in [("move", 0), ("down", 1), ("up", 0)] {
            self.send(json!({
                "t": "mouse", "kind": kind, "x": x, "y": y, "w": w, "h": h,
                "button": 0, "buttons": buttons, "clicks": 1,
            }))
            .await?;
        }
        Ok(())
    }

    /// Closes the socket.
    pub async fn close(mut self) {
        let _ = self.socket.close(None).await;
    }
}
