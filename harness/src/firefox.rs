//! Firefox as a takeover viewer, driven over WebDriver BiDi (Firefox's own remote protocol,
//! no geckodriver): the takeover page must work outside Chromium too.

use std::path::PathBuf;
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

/// Deadline of each BiDi command.
const CALL: Duration = Duration::from_secs(20);

/// Firefox on `PATH`, or a loud failure: browser tests never skip.
pub fn firefox_path() -> PathBuf {
    crate::bins::on_path(&["firefox-esr", "firefox"]).unwrap_or_else(|| {
        panic!(
            "Firefox is not installed: the takeover page's Firefox test needs it (Debian: apt-get install firefox-esr)"
        )
    })
}

/// A headless Firefox with one page open.
pub struct Firefox {
    child: Child,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    context: String,
    _profile: TempDir,
}

impl Firefox {
    /// Launches Firefox with a `width`×`height` viewport and opens `url`.
    pub async fn open(url: &str, width: u32, height: u32) -> Result<Firefox> {
        let profile = tempfile::tempdir()?;
        // Quiet: no updates, telemetry or remote settings from a browser under test.
        std::fs::write(
            profile.path().join("user.js"),
            [
                "user_pref(\"app.update.enabled\", false);",
                "user_pref(\"datareporting.policy.dataSubmissionEnabled\", false);",
                "user_pref(\"toolkit.telemetry.enabled\", false);",
                "user_pref(\"browser.shell.checkDefaultBrowser\", false);",
                "user_pref(\"services.settings.server\", \"http://127.0.0.1:9/\");",
                "user_pref(\"network.captive-portal-service.enabled\", false);",
            ]
            .join("\n"),
        )?;
        let mut child = Command::new(firefox_path())
            .args(["--headless", "--no-remote", "--remote-debugging-port", "0"])
            .arg("--profile")
            .arg(profile.path())
            .arg("about:blank")
            .env("MOZ_CRASHREPORTER_DISABLE", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start Firefox")?;
        let stderr = child.stderr.take().context("Firefox's stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let endpoint = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(rest) = line.split("WebDriver BiDi listening on ").nth(1) {
                    return Ok::<_, anyhow::Error>(rest.trim().to_string());
                }
            }
            bail!("Firefox exited before opening its remote port")
        })
        .await
        .context("Firefox did not open its remote port within 60 s")??;
        // Keep draining stderr so Firefox never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let (socket, _) = tokio::time::timeout(
            CALL,
            tokio_tungstenite::connect_async(format!("{endpoint}/session")),
        )
        .await
        .context("the BiDi socket did not open")??;
        let mut firefox = Firefox {
            child,
            socket,
            next_id: 1,
            context: String::new(),
            _profile: profile,
        };
        firefox
            .call("session.new", json!({"capabilities": {}}))
            .await?;
        let tree = firefox.call("browsingContext.getTree", json!({})).await?;
        firefox.context = tree["contexts"][0]["context"]
            .as_str()
            .context("no browsing context")?
            .to_string();
        let context = firefox.context.clone();
        firefox
            .call(
                "browsingContext.setViewport",
                json!({"context": context, "viewport": {"width": width, "height": height}}),
            )
            .await?;
        firefox
            .call(
                "browsingContext.navigate",
                json!({"context": context, "url": url, "wait": "complete"}),
            )
            .await?;
        Ok(firefox)
    }

    /// Sends one BiDi command and waits for its result.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let command = json!({"id": id, "method": method, "params": params});
        self.socket
            .send(Message::Text(command.to_string().into()))
            .await?;
        let deadline = Instant::now() + CALL;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = tokio::time::timeout(left, self.socket.next())
                .await
                .map_err(|_| anyhow!("{method}: no answer within {CALL:?}"))?
                .ok_or_else(|| anyhow!("{method}: Firefox closed the socket"))??;
            let Message::Text(text) = message else {
                continue;
            };
            let answer: Value = serde_json::from_str(text.as_str())?;
            if answer["id"] != id {
                continue; // an event
            }
            if answer["type"] == "error" {
                bail!("{method}: {} {}", answer["error"], answer["message"]);
            }
            return Ok(answer["result"].clone());
        }
    }

    /// Evaluates `expression` in the page; returns its value as JSON (numbers, strings,
    /// booleans).
    pub async fn eval(&mut self, expression: &str) -> Result<Value> {
        let context = self.context.clone();
        let result = self
            .call(
                "script.evaluate",
                json!({"expression": expression, "target": {"context": context}, "awaitPromise": true}),
            )
            .await?;
        if result["type"] != "success" {
            bail!("{expression}: {}", result["exceptionDetails"]);
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
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("{expression} did not become true within {limit:?}")
    }

    /// A real click (the browser's own input) at a viewport point of the page.
    pub async fn click(&mut self, x: f64, y: f64) -> Result<()> {
        let context = self.context.clone();
        self.call(
            "input.performActions",
            json!({"context": context, "actions": [{
                "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                "actions": [
                    {"type": "pointerMove", "x": x.round() as i64, "y": y.round() as i64, "origin": "viewport"},
                    {"type": "pointerDown", "button": 0},
                    {"type": "pointerUp", "button": 0},
                ],
            }]}),
        )
        .await?;
        Ok(())
    }

    /// Presses keys one after another (WebDriver key values: characters, or `\u{E003}`
    /// Backspace, `\u{E007}` Enter).
    pub async fn keys(&mut self, keys: &str) -> Result<()> {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|c| {
                [
                    json!({"type": "keyDown", "value": c.to_string()}),
                    json!({"type": "keyUp", "value": c.to_string()}),
                ]
            })
            .collect();
        let context = self.context.clone();
        self.call(
            "input.performActions",
            json!({"context": context, "actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        )
        .await?;
        Ok(())
    }

    /// Closes Firefox.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            self.call("browser.close", json!({})),
        )
        .await;
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}
