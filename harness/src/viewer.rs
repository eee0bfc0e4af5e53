//! A second, real Chromium that opens the takeover page the way a person would, and clicks
//! and types on it through its own input pipeline.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    MouseButton,
};
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::{Browser, BrowserConfig, Page};
use futures_util::StreamExt;
use serde_json::Value;
use tempfile::TempDir;
use tokio::task::JoinHandle;

/// Deadline of each CDP call the viewer makes.
const CALL: Duration = Duration::from_secs(10);

/// The Chromium on `PATH`, or a loud failure: browser tests never skip.
pub fn chromium_path() -> PathBuf {
    crate::bins::on_path(&["chromium", "chromium-browser", "google-chrome"]).unwrap_or_else(|| {
        panic!(
            "Chromium is not installed: the browser tests need it (Debian: apt-get install chromium)"
        )
    })
}

/// A headless Chromium showing the takeover page in a window `width`×`height`.
pub struct Viewer {
    browser: Browser,
    handler: JoinHandle<()>,
    pub page: Page,
    _profile: TempDir,
}

async fn within<T, E: std::fmt::Display>(
    what: &str,
    f: impl std::future::Future<Output = std::result::Result<T, E>>,
) -> Result<T> {
    tokio::time::timeout(CALL, f)
        .await
        .map_err(|_| anyhow!("{what}: no answer within {CALL:?}"))?
        .map_err(|e| anyhow!("{what}: {e}"))
}

impl Viewer {
    /// Launches the viewer and opens `url` in it.
    pub async fn open(url: &str, width: u32, height: u32) -> Result<Viewer> {
        let profile = tempfile::tempdir()?;
        let config = BrowserConfig::builder()
            .chrome_executable(chromium_path())
            .new_headless_mode()
            .no_sandbox()
            .user_data_dir(profile.path())
            .window_size(width, height)
            .viewport(Viewport {
                width,
                height,
                device_scale_factor: Some(1.0),
                emulating_mobile: false,
                is_landscape: false,
                has_touch: false,
            })
            .args([
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                "--no-first-run",
            ])
            .build()
            .map_err(|e| anyhow!("viewer config: {e}"))?;
        let (browser, mut handler) = within("launch the viewer", Browser::launch(config)).await?;
        let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
        let page = within("open the takeover page", browser.new_page(url)).await?;
        Ok(Viewer {
            browser,
            handler,
            page,
            _profile: profile,
        })
    }

    /// Opens `url` in the viewer's page, as a person typing it would.
    pub async fn goto(&self, url: &str) -> Result<()> {
        within("navigate", self.page.goto(url)).await?;
        Ok(())
    }

    /// Evaluates `js` in the viewer page.
    pub async fn eval(&self, js: &str) -> Result<Value> {
        let result = within("evaluate", self.page.evaluate(js)).await?;
        Ok(result.value().cloned().unwrap_or(Value::Null))
    }

    /// Polls `js` until it is true, for up to `limit`.
    pub async fn wait_until(&self, js: &str, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.eval(js).await.ok() == Some(Value::Bool(true)) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("{js} did not become true within {limit:?}")
    }

    /// Frames drawn on the live view so far.
    pub async fn frames(&self) -> Result<u64> {
        let v = self
            .eval("Number(document.getElementById('view').dataset.frames || 0)")
            .await?;
        v.as_u64().context("frame count")
    }

    /// Where the sandbox's viewport point `(x, y)` sits in the viewer page, given the
    /// sandbox viewport's size.
    pub async fn live_point(&self, x: f64, y: f64, vw: f64, vh: f64) -> Result<(f64, f64)> {
        let rect = self
            .eval("(() => { const r = document.getElementById('view').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()")
            .await?;
        let r: Vec<f64> = serde_json::from_value(rect)?;
        let [left, top, w, h] = r[..] else {
            bail!("bad rect {r:?}");
        };
        Ok((left + x / vw * w, top + y / vh * h))
    }

    async fn mouse(&self, kind: DispatchMouseEventType, x: f64, y: f64, clicks: i64) -> Result<()> {
        let pressed = kind == DispatchMouseEventType::MousePressed;
        let mut params = DispatchMouseEventParams::builder()
            .r#type(kind.clone())
            .x(x)
            .y(y);
        if kind != DispatchMouseEventType::MouseMoved {
            params = params
                .button(MouseButton::Left)
                .click_count(clicks)
                .buttons(i64::from(pressed));
        }
        let params = params.build().map_err(|e| anyhow!("mouse event: {e}"))?;
        within("mouse event", self.page.execute(params)).await?;
        Ok(())
    }

    /// A real click (move, press, release) at a point of the viewer page.
    pub async fn click(&self, x: f64, y: f64) -> Result<()> {
        self.mouse(DispatchMouseEventType::MouseMoved, x, y, 0)
            .await?;
        self.mouse(DispatchMouseEventType::MousePressed, x, y, 1)
            .await?;
        self.mouse(DispatchMouseEventType::MouseReleased, x, y, 1)
            .await
    }

    /// A real double-click at a point of the viewer page.
    pub async fn double_click(&self, x: f64, y: f64) -> Result<()> {
        self.click(x, y).await?;
        self.mouse(DispatchMouseEventType::MousePressed, x, y, 2)
            .await?;
        self.mouse(DispatchMouseEventType::MouseReleased, x, y, 2)
            .await
    }

    /// Presses one key in the viewer: `key` as the DOM names it, its `code`, key code and
    /// the text it types, with CDP modifier bits held.
    pub async fn key(
        &self,
        key: &str,
        code: &str,
        key_code: i64,
        text: Option<&str>,
        modifiers: i64,
    ) -> Result<()> {
        let mut down = DispatchKeyEventParams::builder()
            .r#type(if text.is_some() {
                DispatchKeyEventType::KeyDown
            } else {
                DispatchKeyEventType::RawKeyDown
            })
            .key(key)
            .code(code)
            .windows_virtual_key_code(key_code)
            .native_virtual_key_code(key_code)
            .modifiers(modifiers);
        if let Some(text) = text {
            down = down.text(text).unmodified_text(text);
        }
        let down = down.build().map_err(|e| anyhow!("key event: {e}"))?;
        within("key down", self.page.execute(down)).await?;
        let up = DispatchKeyEventParams::builder()
            .r#type(DispatchKeyEventType::KeyUp)
            .key(key)
            .code(code)
            .windows_virtual_key_code(key_code)
            .native_virtual_key_code(key_code)
            .modifiers(modifiers)
            .build()
            .map_err(|e| anyhow!("key event: {e}"))?;
        within("key up", self.page.execute(up)).await?;
        Ok(())
    }

    /// Types lower-case ASCII letters, digits and spaces key by key.
    pub async fn type_text(&self, text: &str) -> Result<()> {
        for c in text.chars() {
            let (code, key_code) = match c {
                'a'..='z' => (
                    format!("Key{}", c.to_ascii_uppercase()),
                    c.to_ascii_uppercase() as i64,
                ),
                '0'..='9' => (format!("Digit{c}"), c as i64),
                ' ' => ("Space".to_string(), 32),
                other => bail!("type_text cannot type {other:?}"),
            };
            let s = c.to_string();
            self.key(&s, &code, key_code, Some(&s), 0).await?;
        }
        Ok(())
    }

    /// Closes the viewer.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.browser.close()).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.browser.wait()).await;
        self.handler.abort();
    }
}
