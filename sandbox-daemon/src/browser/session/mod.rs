//! One running browser: its tabs, the actions on the active tab, and the state after them.

mod actions;
mod pictures;
mod state;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use chromiumoxide::cdp::browser_protocol::browser::{
    SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchDragEventParams, DispatchDragEventType, DispatchKeyEventType, EventDragIntercepted,
    SetInterceptDragsParams,
};
use chromiumoxide::cdp::browser_protocol::page::{
    GetNavigationHistoryParams, NavigateParams, NavigateToHistoryEntryParams, ReloadParams,
    StopLoadingParams,
};
use chromiumoxide::cdp::browser_protocol::target::{CreateTargetParams, TargetId};
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::handler::viewport::Viewport as CdpViewport;
use chromiumoxide::{Browser, Page};
use cove_protocol::browser::{
    BrowserState, DragDrop, DropdownOption, MAX_WAIT_SECS, Screenshot, StateQuery, TabInfo,
    Viewport,
};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::cdp::World;
use super::chromium::{self, Chromium, Launcher};
use super::dialogs::{self, DialogSignals, DialogWatch};
use super::keys;
use super::navigation::{NavigationWatch, Settled};
use super::requests::PendingRequests;
use super::typing;
use super::{Action, BrowserError, BrowserManager, BrowserSettings, cdp};
use crate::procs::ChildRegistry;

/// Longest page text returned with `content=true`.
const CONTENT_CHARS: usize = 20_000;
/// Longest page or tab title returned.
const MAX_TITLE_CHARS: usize = 1_000;
/// Longest page or tab URL returned.
const MAX_URL_CHARS: usize = 8_192;
/// Longest wait after an input for a navigation or a new tab to start.
const SETTLE: Duration = Duration::from_millis(150);
/// How long a page's content must stay unchanged before its state is read: more than a
/// frame, so a render spread over frames or timers is read whole. (Answers to requests are
/// waited for on their own.) 20 ms let a render in 10 ms steps be read half done on a
/// starved machine.
const STILL_FOR: Duration = Duration::from_millis(30);
/// The longest a state waits for a page that keeps changing.
const STILL_WAIT: Duration = Duration::from_millis(1500);
/// How long a state read waits for a background tab's title.
const BACKGROUND_TAB_WAIT: Duration = Duration::from_secs(1);

/// What an action reports besides the state.
#[derive(Debug, Default)]
pub struct Outcome {
    pub message: Option<String>,
    pub options: Option<Vec<DropdownOption>>,
}

impl Outcome {
    pub(super) fn say(message: impl Into<String>) -> Self {
        Outcome {
            message: Some(message.into()),
            options: None,
        }
    }
}

struct Tab {
    id: u32,
    page: Page,
    /// The latest snapshot taken of this tab: the default for index-based actions.
    last_snapshot: Option<u64>,
    /// Its open requests; None when the browser would not report them.
    requests: Option<PendingRequests>,
    /// Its JavaScript dialog; None when the browser would not report them.
    dialogs: Option<DialogWatch>,
}

impl Tab {
    async fn new(id: u32, page: Page, signals: &DialogSignals, dismiss_after: Duration) -> Tab {
        if let Err(e) = cdp::install_agent_on_new_documents(&page, Duration::from_secs(5)).await {
            // Each document then gets the agent from its first call instead.
            tracing::debug!(error = %e, "cannot install the agent ahead of new documents");
        }
        let requests = match PendingRequests::watch(&page).await {
            Ok(requests) => Some(requests),
            Err(e) => {
                tracing::debug!(error = %e, "cannot follow the tab's requests");
                None
            }
        };
        let dialogs = match DialogWatch::start(&page, signals.clone(), dismiss_after).await {
            Ok(dialogs) => Some(dialogs),
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the tab's dialogs");
                None
            }
        };
        Tab {
            id,
            page,
            last_snapshot: None,
            requests,
            dialogs,
        }
    }
}

/// A running browser.
pub struct Session {
    settings: Arc<BrowserSettings>,
    chromium: Chromium,
    browser: Browser,
    handler_alive: Arc<AtomicBool>,
    handler_task: JoinHandle<()>,
    tabs: Vec<Tab>,
    active: u32,
    next_tab_id: u32,
    /// Targets closed by `close_tab` that the browser may still list for a moment.
    closing: HashSet<TargetId>,
    /// The daemon's own background tabs (see `background`): never the agent's.
    hidden: HashSet<TargetId>,
    signals: DialogSignals,
}

#[derive(Debug, Deserialize)]
struct Snapshot {
    url: String,
    title: String,
    elements: String,
    element_count: u64,
    truncated: bool,
    pixels_above: u64,
    pixels_below: u64,
    viewport: Viewport,
    content: Option<String>,
    /// When the page last changed before it was read (its own clock, ms).
    #[serde(default)]
    changed_at: Option<f64>,
}

impl Snapshot {
    /// Holds every text to its cap, whatever the page made of the script that wrote it.
    fn cap(&mut self, elements_cap: usize) {
        // The agent clips at the cap and adds a short "more below" hint.
        if clip_chars(&mut self.elements, elements_cap + 200) {
            self.truncated = true;
        }
        if let Some(content) = &mut self.content {
            clip_chars(content, CONTENT_CHARS + 100);
        }
        clip_chars(&mut self.title, MAX_TITLE_CHARS);
        clip_chars(&mut self.url, MAX_URL_CHARS);
    }
}

/// Cuts `text` to at most `max` characters; true if it was longer.
fn clip_chars(text: &mut String, max: usize) -> bool {
    match text.char_indices().nth(max) {
        Some((cut, _)) => {
            text.truncate(cut);
            true
        }
        None => false,
    }
}

#[derive(Debug, Deserialize)]
struct Located {
    x: f64,
    y: f64,
    reachable: bool,
    #[serde(default, deserialize_with = "short_opt")]
    covered_by: Option<String>,
    #[serde(deserialize_with = "short")]
    desc: String,
}

#[derive(Debug, Deserialize)]
struct Point {
    x: f64,
    y: f64,
    #[serde(deserialize_with = "short")]
    desc: String,
}

#[derive(Debug, Deserialize)]
struct Described {
    #[serde(deserialize_with = "short")]
    desc: String,
    #[serde(default, deserialize_with = "short_opt")]
    mode: Option<String>,
    #[serde(default, deserialize_with = "short_opt")]
    text: Option<String>,
    /// The field's value or the editable element's text, after typing.
    #[serde(default)]
    value: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Scrolled {
    scrolled: i64,
    #[serde(deserialize_with = "short")]
    container: String,
}

#[derive(Debug, Deserialize)]
struct Options {
    #[serde(deserialize_with = "short")]
    desc: String,
    #[serde(deserialize_with = "few_options")]
    options: Vec<DropdownOption>,
}

/// Longest description of an element (or option text) taken from the page.
const MAX_DESC_CHARS: usize = 500;
/// Most options of one select taken from the page.
const MAX_OPTIONS: usize = 1_000;

/// A text from the page, held to [`MAX_DESC_CHARS`] whatever the page did to the script.
fn short<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let mut text = String::deserialize(d)?;
    clip_chars(&mut text, MAX_DESC_CHARS);
    Ok(text)
}

fn short_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let mut text = Option::<String>::deserialize(d)?;
    if let Some(text) = &mut text {
        clip_chars(text, MAX_DESC_CHARS);
    }
    Ok(text)
}

fn few_options<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<DropdownOption>, D::Error> {
    let mut options = Vec::<DropdownOption>::deserialize(d)?;
    options.truncate(MAX_OPTIONS);
    for option in &mut options {
        clip_chars(&mut option.text, MAX_DESC_CHARS);
        clip_chars(&mut option.value, MAX_DESC_CHARS);
    }
    Ok(options)
}

impl Session {
    /// Launches Chromium and attaches to its first tab.
    pub async fn launch(
        settings: Arc<BrowserSettings>,
        launcher: &Launcher,
        registry: &Arc<ChildRegistry>,
        signals: DialogSignals,
    ) -> Result<Session, BrowserError> {
        let executable = chromium::find(settings.chromium.as_deref())?;
        let vp = settings.viewport;
        let chromium = Chromium::launch(launcher, &executable, &settings, registry).await?;
        let config = HandlerConfig {
            viewport: Some(CdpViewport {
                width: vp.width,
                height: vp.height,
                device_scale_factor: Some(1.0),
                emulating_mobile: false,
                is_landscape: false,
                has_touch: false,
            }),
            request_timeout: settings.timeout,
            // chromiumoxide's default has the browser accept any certificate; a page whose
            // certificate does not hold is refused, as in any browser.
            ignore_https_errors: false,
            ..HandlerConfig::default()
        };
        let (browser, mut handler) = tokio::time::timeout(
            settings.timeout,
            Browser::connect_with_config(chromium.ws_url.clone(), config),
        )
        .await
        .map_err(|_| BrowserError::Unavailable("Chromium's DevTools pipe did not answer".into()))?
        .map_err(|e| BrowserError::Unavailable(format!("cannot attach to Chromium: {e}")))?;
        let handler_alive = Arc::new(AtomicBool::new(true));
        let handler_task = {
            let alive = handler_alive.clone();
            // The handler drives the whole CDP connection; it must be polled on its own.
            tokio::spawn(async move {
                while let Some(event) = handler.next().await {
                    if let Err(e) = event {
                        tracing::debug!(error = %e, "CDP handler");
                    }
                }
                alive.store(false, Ordering::SeqCst);
            })
        };
        // The pipe says nothing until the browser answers; a browser that failed to start
        // is found here, with what it printed.
        if !matches!(
            tokio::time::timeout(settings.timeout, browser.version()).await,
            Ok(Ok(_))
        ) {
            handler_task.abort();
            return Err(BrowserError::Unavailable(format!(
                "Chromium did not answer over its DevTools pipe; it said: {}",
                chromium.said()
            )));
        }
        // Downloads land in the workspace, where the agent sees them, not wherever a page
        // (or the profile's default) would put them.
        let downloads = SetDownloadBehaviorParams::builder()
            .behavior(SetDownloadBehaviorBehavior::Allow)
            .download_path(settings.downloads.to_string_lossy().into_owned())
            .build()
            .map_err(|e| BrowserError::Internal(format!("bad download settings: {e}")))?;
        if !matches!(
            tokio::time::timeout(settings.timeout, browser.execute(downloads)).await,
            Ok(Ok(_))
        ) {
            handler_task.abort();
            return Err(BrowserError::Unavailable(
                "Chromium refused to keep downloads in the workspace".into(),
            ));
        }
        let mut session = Session {
            settings,
            chromium,
            browser,
            handler_alive,
            handler_task,
            tabs: Vec::new(),
            active: 0,
            next_tab_id: 1,
            closing: HashSet::new(),
            hidden: HashSet::new(),
            signals,
        };
        let dismiss = session.settings.dialog_timeout;
        // Adopt the tab Chromium opened at start (it is discovered a moment after attaching);
        // open one only if it never shows up.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Ok(pages)) =
                tokio::time::timeout(session.limit(), session.browser.pages()).await
                && let Some(page) = pages.into_iter().next()
            {
                let tab = Tab::new(1, page, &session.signals, dismiss).await;
                session.tabs.push(tab);
                session.active = 1;
                session.next_tab_id = 2;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if session.tabs.is_empty() {
            session.open_blank_tab().await?;
        }
        tracing::info!(pid = session.chromium.pid, "browser launched");
        Ok(session)
    }

    /// Both the process and its CDP connection are up.
    pub fn is_alive(&self) -> bool {
        self.chromium.is_alive() && self.handler_alive.load(Ordering::SeqCst)
    }

    /// Closes the browser; its processes are killed when `chromium` drops.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.browser.close()).await;
        self.handler_task.abort();
        chromium::kill_group(self.chromium.pid);
    }

    fn limit(&self) -> Duration {
        self.settings.timeout
    }

    fn active_tab(&self) -> Result<&Tab, BrowserError> {
        self.tabs
            .iter()
            .find(|t| t.id == self.active)
            .ok_or_else(|| BrowserError::Internal("no active tab".into()))
    }

    fn page(&self) -> Result<Page, BrowserError> {
        Ok(self.active_tab()?.page.clone())
    }

    async fn open_blank_tab(&mut self) -> Result<(), BrowserError> {
        let page = tokio::time::timeout(self.limit(), self.browser.new_page("about:blank"))
            .await
            .map_err(|_| BrowserError::Timeout("opening a tab took too long".into()))?
            .map_err(BrowserError::from_cdp)?;
        let id = self.next_tab_id;
        self.next_tab_id += 1;
        self.tabs
            .push(Tab::new(id, page, &self.signals, self.settings.dialog_timeout).await);
        self.active = id;
        Ok(())
    }

    /// Opens a tab the agent never sees (not listed, never made active), in the background.
    pub async fn open_hidden_tab(&mut self) -> Result<Page, BrowserError> {
        let params = CreateTargetParams::builder()
            .url("about:blank")
            .background(true)
            .build()
            .map_err(|e| BrowserError::Internal(format!("bad tab settings: {e}")))?;
        let page = tokio::time::timeout(self.limit(), self.browser.new_page(params))
            .await
            .map_err(|_| BrowserError::Timeout("opening a tab took too long".into()))?
            .map_err(BrowserError::from_cdp)?;
        self.hidden.insert(page.target_id().clone());
        Ok(page)
    }

    /// Brings the tab list in line with the browser's pages: adopts new tabs (the newest
    /// becomes active, as a person's browser would show it), drops closed ones.
    pub async fn sync_tabs(&mut self) {
        let Ok(Ok(pages)) = tokio::time::timeout(self.limit(), self.browser.pages()).await else {
            return;
        };
        let live: HashSet<_> = pages.iter().map(|p| p.target_id().clone()).collect();
        self.tabs.retain(|t| live.contains(t.page.target_id()));
        self.closing.retain(|id| live.contains(id));
        self.hidden.retain(|id| live.contains(id));
        let mut newest = None;
        for page in pages {
            if self.closing.contains(page.target_id())
                || self.hidden.contains(page.target_id())
                || self
                    .tabs
                    .iter()
                    .any(|t| t.page.target_id() == page.target_id())
            {
                continue;
            }
            let id = self.next_tab_id;
            self.next_tab_id += 1;
            self.tabs
                .push(Tab::new(id, page, &self.signals, self.settings.dialog_timeout).await);
            newest = Some(id);
        }
        if let Some(id) = newest {
            self.active = id;
            if let Ok(page) = self.page() {
                self.wait_until_loaded(&page).await;
            }
        }
        if !self.tabs.iter().any(|t| t.id == self.active) {
            match self.tabs.last() {
                Some(tab) => self.active = tab.id,
                None => {
                    if let Err(e) = self.open_blank_tab().await {
                        tracing::warn!(error = %e, "cannot open a blank tab");
                    }
                }
            }
        }
    }

    /// Polls until the document has loaded, or the deadline passes (no error: the state of
    /// a slow page is still worth returning). At the deadline the tab stops loading, since
    /// a navigation that never commits would leave the page unable to answer.
    async fn wait_until_loaded(&self, page: &Page) -> bool {
        let deadline = Instant::now() + self.limit();
        let step = Duration::from_secs(2);
        while Instant::now() < deadline {
            if cdp::ready_state(page, step).await.as_deref() == Some("complete") {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = cdp::run(page, StopLoadingParams::default(), step).await;
        false
    }

    /// Runs `input`, then waits for what it set off: a navigation of the main frame (stopped
    /// if it will not commit in time) or a new tab (picked up by `sync_tabs`).
    async fn with_settle<F, T>(&self, page: &Page, input: F) -> Result<(T, Settled), BrowserError>
    where
        F: std::future::Future<Output = Result<T, BrowserError>>,
    {
        let mut watch = NavigationWatch::new(page, self.limit()).await?;
        let armed = watch.arm().await;
        let result = input.await?;
        let settled = if watch.started_after_input(SETTLE, armed).await {
            watch.settle(self.limit()).await
        } else {
            Settled::Idle
        };
        Ok((result, settled))
    }

    fn snapshot_for(&self, requested: Option<u64>) -> Result<u64, BrowserError> {
        requested
            .or(self.active_tab()?.last_snapshot)
            .ok_or_else(|| {
                BrowserError::Stale(
                    "no snapshot has been taken of this page yet: read the state first".into(),
                )
            })
    }

    /// Where to press element `index` of the snapshot (the latest when `sid` is none); an
    /// error when something else covers it.
    async fn reachable(
        &self,
        page: &Page,
        sid: Option<u64>,
        index: u32,
    ) -> Result<Located, BrowserError> {
        let sid = self.snapshot_for(sid)?;
        let at = self.locate(page, sid, index).await?;
        if !at.reachable {
            return Err(BrowserError::NotClickable(format!(
                "[{index}] {} is covered by {}; close or dismiss that first",
                at.desc,
                at.covered_by.as_deref().unwrap_or("another element")
            )));
        }
        Ok(at)
    }

    async fn locate(&self, page: &Page, sid: u64, index: u32) -> Result<Located, BrowserError> {
        cdp::agent(page, "locate", &[json!(sid), json!(index)], self.limit()).await
    }

    /// The dialog the active tab has open, if any.
    pub fn open_dialog(&self) -> Option<cove_protocol::browser::DialogInfo> {
        self.active_tab().ok()?.dialogs.as_ref()?.current()
    }

    /// The browser's identities of every tab.
    pub fn target_ids(&self) -> Vec<TargetId> {
        self.tabs
            .iter()
            .map(|t| t.page.target_id().clone())
            .collect()
    }

    /// The active tab's id and page.
    pub fn active_page(&self) -> Result<(u32, Page), BrowserError> {
        let tab = self.active_tab()?;
        Ok((tab.id, tab.page.clone()))
    }

    /// JPEG bytes of the active tab's viewport.
    pub async fn screenshot_jpeg(&self) -> Result<Vec<u8>, BrowserError> {
        let page = self.page()?;
        let data = cdp::screenshot_base64(
            &page,
            i64::from(self.settings.screenshot_quality),
            self.limit(),
        )
        .await?;
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| BrowserError::Internal(format!("bad screenshot data: {e}")))
    }
}

/// Where the time of one browser operation went, for the debug log.
pub(super) struct Phases {
    last: Instant,
    spent: Vec<(&'static str, Duration)>,
}

impl Phases {
    pub(super) fn start() -> Phases {
        Phases {
            last: Instant::now(),
            spent: Vec::new(),
        }
    }

    /// Ends phase `name` now.
    pub(super) fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.spent.push((name, now - self.last));
        self.last = now;
    }
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, spent)) in self.spent.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{name}={}ms", spent.as_millis())?;
        }
        Ok(())
    }
}

/// Whether a page that last changed at `changed` (its clock) is shown by a picture begun at
/// `began`; unknown is no.
pub(super) fn unchanged_since(began: Option<f64>, changed: Option<f64>) -> bool {
    matches!((began, changed), (Some(began), Some(changed)) if changed <= began)
}

fn clip_url(url: &str) -> String {
    if url.len() > 80 {
        let mut cut = 77;
        while !url.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &url[..cut])
    } else {
        url.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picture_shows_a_page_that_changed_before_it_began_and_no_other() {
        assert!(unchanged_since(Some(100.0), Some(99.5)));
        assert!(unchanged_since(Some(100.0), Some(100.0)));
        assert!(!unchanged_since(Some(100.0), Some(100.1)));
        assert!(!unchanged_since(None, Some(1.0)), "unknown is no");
        assert!(!unchanged_since(Some(1.0), None));
    }

    #[test]
    fn texts_from_the_page_are_held_to_their_caps() {
        let long = "x".repeat(5 * MAX_DESC_CHARS);
        let options: Vec<Value> = (0..MAX_OPTIONS + 50)
            .map(|i| json!({"index": i, "text": long, "value": long, "selected": false}))
            .collect();
        let found: Options =
            serde_json::from_value(json!({"desc": long, "options": options})).unwrap();
        assert_eq!(found.desc.chars().count(), MAX_DESC_CHARS);
        assert_eq!(found.options.len(), MAX_OPTIONS);
        assert!(
            found
                .options
                .iter()
                .all(|o| o.text.chars().count() == MAX_DESC_CHARS)
        );
        let at: Located = serde_json::from_value(
            json!({"x": 1.0, "y": 2.0, "reachable": false, "covered_by": long, "desc": "ok"}),
        )
        .unwrap();
        assert_eq!(at.covered_by.unwrap().chars().count(), MAX_DESC_CHARS);
        let mut snapshot = Snapshot {
            url: "u".repeat(MAX_URL_CHARS + 5),
            title: "t".repeat(MAX_TITLE_CHARS + 5),
            elements: "e".repeat(20_000),
            element_count: 1,
            truncated: false,
            pixels_above: 0,
            pixels_below: 0,
            viewport: Viewport {
                width: 1,
                height: 1,
            },
            content: Some("c".repeat(CONTENT_CHARS * 2)),
            changed_at: None,
        };
        snapshot.cap(1_000);
        assert!(snapshot.truncated);
        assert_eq!(snapshot.elements.chars().count(), 1_200);
        assert_eq!(snapshot.title.chars().count(), MAX_TITLE_CHARS);
        assert_eq!(snapshot.url.chars().count(), MAX_URL_CHARS);
        assert_eq!(
            snapshot.content.unwrap().chars().count(),
            CONTENT_CHARS + 100
        );
    }
}
