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
    /// URLs of the requests the tab made (with [`Person::watch_requests`]).
    requests: Vec<String>,
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
            requests: Vec::new(),
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
            if answer["method"] == "Network.requestWillBeSent"
                && let Some(url) = answer["params"]["request"]["url"].as_str()
            {
                self.requests.push(url.to_string());
            }
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

    /// Records every request the tab makes from now on (see [`Person::requests`]).
    pub async fn watch_requests(&mut self) -> Result<()> {
        self.call("Network.enable", json!({}), true).await?;
        Ok(())
    }

    /// Cuts the tab off every network, as a machine with none (requests are still recorded).
    pub async fn offline(&mut self) -> Result<()> {
        self.call("Network.enable", json!({}), true).await?;
        self.call(
            "Network.emulateNetworkConditions",
            json!({"offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}),
            true,
        )
        .await?;
        Ok(())
    }

    /// The URLs the tab requested since [`Person::watch_requests`] (read as the browser
    /// reported them, so up to the last call).
    pub async fn requests(&mut self) -> Result<Vec<String>> {
        // A round trip collects the reports sent before it.
        self.eval("1").await?;
        Ok(self.requests.clone())
    }

    /// The window's size, as a person resizes it.
    pub async fn resize(&mut self, width: u32, height: u32) -> Result<()> {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
            true,
        )
        .await?;
        Ok(())
    }

    /// Reloads the tab, as the reload button does, and waits for the load.
    pub async fn reload(&mut self) -> Result<()> {
        self.call("Page.reload", json!({}), true).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.wait_until("document.readyState === 'complete'", CALL)
            .await
    }

    /// A PNG of what the tab shows.
    pub async fn screenshot(&mut self) -> Result<Vec<u8>> {
        use base64::Engine;
        let shot = self
            .call("Page.captureScreenshot", json!({"format": "png"}), true)
            .await?;
        let data = shot["data"]
            .as_str()
            .ok_or_else(|| anyhow!("no screenshot data"))?;
        Ok(base64::engine::general_purpose::STANDARD.decode(data)?)
    }

    /// Clicks the middle of the first element `selector` matches, with the mouse.
    pub async fn click(&mut self, selector: &str) -> Result<()> {
        // A person clicks on what is drawn: nothing is before the page's stylesheets have
        // loaded, and a layout read earlier puts the click where the element will not be.
        let at = self
            .eval(&format!(
                "(async () => {{ if (document.readyState !== 'complete') await Promise.race([new Promise((r) => addEventListener('load', r, {{once: true}})), new Promise((r) => setTimeout(r, 10000))]); await new Promise((r) => requestAnimationFrame(() => r())); const e = document.querySelector({sel}); if (!e) return null; e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
                sel = serde_json::to_string(selector)?
            ))
            .await?;
        let (Some(x), Some(y)) = (at[0].as_f64(), at[1].as_f64()) else {
            bail!("nothing matches {selector}");
        };
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
                true,
            )
            .await?;
        }
        Ok(())
    }

    /// Types `text` where the focus is, as a keyboard would insert it.
    pub async fn type_text(&mut self, text: &str) -> Result<()> {
        self.call("Input.insertText", json!({"text": text}), true)
            .await?;
        Ok(())
    }

    /// Presses and releases a key: `Enter`, `Tab`, `Escape`, `ArrowRight`, … (with Shift
    /// when `shift`).
    pub async fn press(&mut self, key: &str, shift: bool) -> Result<()> {
        let (code, text, vk) = match key {
            "Enter" => ("Enter", "\r", 13),
            "Tab" => ("Tab", "", 9),
            "Escape" => ("Escape", "", 27),
            "ArrowRight" => ("ArrowRight", "", 39),
            "ArrowLeft" => ("ArrowLeft", "", 37),
            "Home" => ("Home", "", 36),
            "End" => ("End", "", 35),
            " " => ("Space", " ", 32),
            other => bail!("no key {other:?} in this keyboard"),
        };
        let modifiers = if shift { 8 } else { 0 };
        let mut down = json!({"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers});
        if !text.is_empty() {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down, true).await?;
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers}),
            true,
        )
        .await?;
        Ok(())
    }

    /// Gives the file input `selector` these files, as the file picker would.
    pub async fn choose_files(&mut self, selector: &str, files: &[&std::path::Path]) -> Result<()> {
        let document = self
            .call("DOM.getDocument", json!({"depth": 0}), true)
            .await?;
        let root = document["root"]["nodeId"].clone();
        let node = self
            .call(
                "DOM.querySelector",
                json!({"nodeId": root, "selector": selector}),
                true,
            )
            .await?;
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        self.call(
            "DOM.setFileInputFiles",
            json!({"files": files, "nodeId": node["nodeId"]}),
            true,
        )
        .await?;
        Ok(())
    }

    /// Closes the browser.
    pub async fn close(mut self) {
        let _ = self.call("Browser.close", json!({}), false).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}
