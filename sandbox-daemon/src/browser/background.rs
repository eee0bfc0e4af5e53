//! The daemon's own tabs: a web search or a page that needs scripts is loaded in a tab
//! opened in the background, which the agent's state never lists and which never becomes
//! active, so the agent's tab is left as it was. The tab shares the browser's cookies, so a
//! captcha a person clears in a takeover stays cleared for the searches after it.

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::NavigateParams;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::cdp::{self, World};
use super::{BrowserError, BrowserManager, running};

/// How long a page's text must stay unchanged to count as rendered.
const STILL_FOR: Duration = Duration::from_millis(400);
/// How often the text is looked at while waiting.
const POLL: Duration = Duration::from_millis(100);
/// Longest wait for a loaded page's scripts to render something.
const RENDER_WAIT: Duration = Duration::from_secs(10);

/// What a script read from a page loaded in the background.
#[derive(Debug)]
pub struct Read<T> {
    /// Where the page ended up, after redirects.
    pub url: String,
    pub value: T,
}

#[derive(Debug, Deserialize)]
struct Progress {
    ready: String,
    text: u64,
    url: String,
}

const PROGRESS_JS: &str = "({ready: document.readyState, text: document.body ? document.body.innerText.length : 0, url: location.href})";

impl BrowserManager {
    /// Loads `url` in a background tab, waits until its scripts have rendered it (the text
    /// stops changing), runs `script` there (in a world the page's scripts cannot reach) and
    /// closes the tab.
    pub async fn read_in_background<T: DeserializeOwned>(
        &self,
        url: &str,
        script: &str,
    ) -> Result<Read<T>, BrowserError> {
        let page = {
            let (mut guard, _) = self.lock_running().await?;
            running(&mut guard)?.open_hidden_tab().await?
        };
        let read = self.read_page(&page, url, script).await;
        // Close it whatever happened; a tab that will not close dies with the browser.
        if tokio::time::timeout(Duration::from_secs(5), page.close())
            .await
            .is_err()
        {
            tracing::debug!("a background tab did not close in time");
        }
        read
    }

    async fn read_page<T: DeserializeOwned>(
        &self,
        page: &Page,
        url: &str,
        script: &str,
    ) -> Result<Read<T>, BrowserError> {
        let limit = self.settings.timeout;
        let navigated = cdp::run(page, NavigateParams::new(url.to_string()), limit).await?;
        if let Some(error) = navigated.error_text {
            return Err(BrowserError::NavigationFailed(format!(
                "{url} could not be loaded: {error}"
            )));
        }
        let deadline = Instant::now() + RENDER_WAIT.min(limit);
        let mut last: Option<(u64, Instant)> = None;
        let mut landed = url.to_string();
        loop {
            let progress =
                cdp::evaluate::<Progress>(page, PROGRESS_JS.to_string(), World::Isolated, limit)
                    .await;
            let now = Instant::now();
            match progress {
                Ok(p) => {
                    landed = p.url;
                    if p.ready == "complete" && p.text > 0 {
                        match last {
                            Some((text, since)) if text == p.text => {
                                if now - since >= STILL_FOR {
                                    break;
                                }
                            }
                            _ => last = Some((p.text, now)),
                        }
                    }
                }
                // The page is replacing its document (a redirect by script): look again.
                Err(BrowserError::ContextLost) => last = None,
                Err(e) => return Err(e),
            }
            if now >= deadline {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        let value = cdp::evaluate::<T>(page, script.to_string(), World::Isolated, limit).await?;
        Ok(Read { url: landed, value })
    }
}
