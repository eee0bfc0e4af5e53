//! A person's own browser: a headless Chromium of its own profile, driven over plain CDP with
//! no automation library in between, so service workers, cookies and redirects behave as in a
//! browser someone uses (a library that auto-attaches to workers would pause them).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::viewer::chromium_path;

/// Deadline of each CDP call.
const CALL: Duration = Duration::from_secs(15);

/// A browser with one tab, as a person has it.
pub struct Person {
    child: Child,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    _profile: TempDir,
}

impl Person {
    /// Starts the browser with a fresh profile and one blank tab.
    pub async fn launch() -> Result<Person> {
        let profile = tempfile::tempdir()?;
        let mut child = Command::new(chromium_path())
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                "--no-first-run",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start the person's Chromium")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let ws_url = tokio::time::timeout(CALL, async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.trim().strip_prefix("DevTools listening on ") {
                    return Ok(url.to_string());
                }
            }
            bail!("Chromium exited before listening")
        })
        .await
        .context("Chromium printed no DevTools address")??;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let (socket, _) = tokio_tungstenite::connect_async(ws_url.as_str()).await?;
        let mut person = Person {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let targets = person.call("Target.getTargets", json!({}), false).await?;
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str())
            .ok_or_else(|| anyhow!("no tab in {targets}"))?
            .to_string();
        let attached = person
            .call(
                "Target.attachToTarget",
                json!({"targetId": page, "flatten": true}),
                false,
            )
            .await?;
        person.session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| anyhow!("no session in {attached}"))?
            .to_string();
        Ok(person)
    }

    /// One CDP call, to the tab or to the browser; its result.
    async fn call(&mut self, method: &str, params: Value, in_tab: bool) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if in_tab {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::Text(message.to_string().into()))
            .await?;
        let deadline = Instant::now() + CALL;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let next = tokio::time::timeout(left, self.socket.next())
                .await
                .map_err(|_| anyhow!("{method}: no answer within {CALL:?}"))?
                .ok_or_else(|| anyhow!("{method}: the browser closed the connection"))??;
            let Message::Text(text) = next else { continue };
            let answer: Value = serde_json::from_str(text.as_str())?;
            if answer["id"] != id {
                continue;
            }
            if let Some(error) = answer.get("error") {
                bail!("{method}: {error}");
            }
            return Ok(answer["result"].clone());
        }
    }

    /// Opens `url` in the tab, as typed into the address bar, and waits for it to load.
    pub async fn goto(&mut self, url: &str) -> Result<()> {
        self.call("Page.navigate", json!({"url": url}), true)
            .await?;
        self.wait_until("document.readyState === 'complete'", CALL)
            .await
    }

    /// Evaluates `expression` in the tab (awaiting a promise) and returns its value.
    pub async fn eval(&mut self, expression: &str) -> Result<Value> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
                true,
            )
            .await?;
        if let Some(exception) = result.get("exceptionDetails") {
            bail!("{expression}: {exception}");
        }
        Ok(result["result"]["value"].clone())
    }

    /// Polls `expression` until it is true, for up to `limit`.
    pub async fn wait_until(&mut self, expression: &str, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.eval(expression).await.ok() == Some(Value::Bool(true)) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("{expression} did not become true within {limit:?}")
    }

    /// Closes the browser.
    pub async fn close(mut self) {
        let _ = self.call("Browser.close", json!({}), false).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}
