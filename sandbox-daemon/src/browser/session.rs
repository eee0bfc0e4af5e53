//! One running browser: its tabs, the actions on the active tab, and the state after them.

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

    /// Carries out one action on the active tab.
    pub async fn perform(&mut self, action: Action) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        if let Some(dialog) = self.open_dialog()
            && !matches!(
                action,
                Action::HandleDialog(_) | Action::SwitchTab(_) | Action::CloseTab(_)
            )
        {
            return Err(BrowserError::NotClickable(format!(
                "the page shows a {} dialog ({:?}): answer it first with handle_dialog",
                dialog.kind, dialog.message
            )));
        }
        match action {
            Action::HandleDialog(a) => {
                let page = self.page()?;
                let dialog = self
                    .open_dialog()
                    .ok_or_else(|| BrowserError::NoMatch("no dialog is open".into()))?;
                let watch = self.active_tab()?.dialogs.as_ref();
                let number = watch.and_then(DialogWatch::open_number);
                dialogs::answer(&page, a.accept, a.text.clone(), limit).await?;
                if let (Some(watch), Some(number)) = (watch, number) {
                    watch.answered(number);
                }
                let how = match (a.accept, dialog.kind.as_str()) {
                    (true, "prompt") => format!(
                        "Answered the prompt {:?} with {:?}",
                        dialog.message,
                        a.text.or(dialog.default_text).unwrap_or_default()
                    ),
                    (true, _) => {
                        format!("Accepted the {} dialog {:?}", dialog.kind, dialog.message)
                    }
                    (false, _) => {
                        format!("Dismissed the {} dialog {:?}", dialog.kind, dialog.message)
                    }
                };
                Ok(Outcome::say(how))
            }
            Action::NavigateTo(a) => self.navigate(&a.url).await,
            Action::GoBack => self.go_back().await,
            Action::GoForward => self.go_forward().await,
            Action::Reload => self.reload().await,
            Action::Wait(a) => {
                if !(0.0..=MAX_WAIT_SECS).contains(&a.seconds) || a.seconds.is_nan() {
                    return Err(BrowserError::InvalidRequest(format!(
                        "seconds must be between 0 and {MAX_WAIT_SECS}"
                    )));
                }
                tokio::time::sleep(Duration::from_secs_f64(a.seconds)).await;
                Ok(Outcome::say(format!("Waited {} s", a.seconds)))
            }
            Action::ClickElement(a) => {
                let page = self.page()?;
                let mut phases = Phases::start();
                let at = self.reachable(&page, a.snapshot_id, a.index).await?;
                phases.mark("locate");
                let (_, settled) = self
                    .with_settle(&page, cdp::click(&page, at.x, at.y, limit))
                    .await?;
                phases.mark("click_and_settle");
                tracing::debug!(phases = %phases, "clicked");
                Ok(Outcome::say(format!(
                    "Clicked [{}] {}{}",
                    a.index,
                    at.desc,
                    settled.note()
                )))
            }
            Action::ClickCoordinates(a) => {
                let vp = self.settings.viewport;
                if !(0.0..f64::from(vp.width)).contains(&a.x)
                    || !(0.0..f64::from(vp.height)).contains(&a.y)
                {
                    return Err(BrowserError::InvalidRequest(format!(
                        "({}, {}) is outside the {}x{} viewport",
                        a.x, a.y, vp.width, vp.height
                    )));
                }
                let page = self.page()?;
                let (_, settled) = self
                    .with_settle(&page, cdp::click(&page, a.x, a.y, limit))
                    .await?;
                Ok(Outcome::say(format!(
                    "Clicked at ({}, {}){}",
                    a.x,
                    a.y,
                    settled.note()
                )))
            }
            Action::InputText(a) => {
                let page = self.page()?;
                let sid = self.snapshot_for(a.snapshot_id)?;
                let prepared: Described =
                    cdp::agent(&page, "prepareInput", &[json!(sid), json!(a.index)], limit).await?;
                let set = prepared.mode.as_deref() == Some("set");
                let done: Described = if set {
                    cdp::agent(
                        &page,
                        "setValue",
                        &[json!(sid), json!(a.index), json!(a.text)],
                        limit,
                    )
                    .await?
                } else {
                    if a.text.is_empty() {
                        let backspace = keys::key("Backspace")
                            .ok_or_else(|| BrowserError::Internal("no Backspace key".into()))?;
                        cdp::key_event(&page, DispatchKeyEventType::KeyDown, &backspace, 0, limit)
                            .await?;
                        cdp::key_event(&page, DispatchKeyEventType::KeyUp, &backspace, 0, limit)
                            .await?;
                    } else if prepared.mode.as_deref() == Some("keys") {
                        typing::type_keys(&page, &a.text, limit).await?;
                    } else {
                        cdp::insert_text(&page, &a.text, limit).await?;
                    }
                    cdp::agent(&page, "finishInput", &[json!(sid), json!(a.index)], limit).await?
                };
                Ok(Outcome::say(if set {
                    // A date or a colour is stored in its own form, checked by the page.
                    format!("Typed {:?} into [{}] {}", a.text, a.index, done.desc)
                } else {
                    typing::typed_report(&a.text, a.index, done.value.as_deref(), &done.desc)
                }))
            }
            Action::SendKeys(a) => {
                let page = self.page()?;
                let input = keys::parse(&a.keys)
                    .ok_or_else(|| BrowserError::InvalidRequest("keys is empty".into()))?;
                let (_, settled) = self
                    .with_settle(&page, typing::press(&page, &input, limit))
                    .await?;
                Ok(Outcome::say(format!(
                    "Sent keys {:?}{}",
                    a.keys,
                    settled.note()
                )))
            }
            Action::SwitchTab(a) => {
                let tab = self
                    .tabs
                    .iter()
                    .find(|t| t.id == a.tab_id)
                    .ok_or(BrowserError::TabNotFound(a.tab_id))?;
                let _ = tokio::time::timeout(limit, tab.page.bring_to_front()).await;
                self.active = a.tab_id;
                Ok(Outcome::say(format!("Switched to tab {}", a.tab_id)))
            }
            Action::CloseTab(a) => {
                let position = self
                    .tabs
                    .iter()
                    .position(|t| t.id == a.tab_id)
                    .ok_or(BrowserError::TabNotFound(a.tab_id))?;
                if self.tabs.len() == 1 {
                    // Headless Chromium quits with its last tab: open the next one first.
                    self.open_blank_tab().await?;
                }
                let tab = self.tabs.remove(position);
                self.closing.insert(tab.page.target_id().clone());
                let _ = tokio::time::timeout(limit, tab.page.close()).await;
                if self.active == a.tab_id {
                    self.active = self.tabs.last().map(|t| t.id).unwrap_or(0);
                }
                // The tab now active is shown, or it never draws: screenshots of a tab left
                // in the background wait for a frame that never comes.
                if let Some(front) = self.tabs.iter().find(|t| t.id == self.active) {
                    let _ = tokio::time::timeout(limit, front.page.bring_to_front()).await;
                }
                Ok(Outcome::say(format!("Closed tab {}", a.tab_id)))
            }
            Action::ScrollDown(a) => self.scroll(a.amount, a.index, a.snapshot_id, 1.0).await,
            Action::ScrollUp(a) => self.scroll(a.amount, a.index, a.snapshot_id, -1.0).await,
            Action::ScrollToText(a) => {
                if a.text.trim().is_empty() {
                    return Err(BrowserError::InvalidRequest("text is empty".into()));
                }
                let page = self.page()?;
                let found: Described =
                    cdp::agent(&page, "scrollToText", &[json!(a.text)], limit).await?;
                Ok(Outcome::say(format!("Scrolled to {:?}", found.desc)))
            }
            Action::GetDropdownOptions(a) => {
                let page = self.page()?;
                let sid = self.snapshot_for(a.snapshot_id)?;
                let found: Options =
                    cdp::agent(&page, "options", &[json!(sid), json!(a.index)], limit).await?;
                Ok(Outcome {
                    message: Some(format!(
                        "[{}] {} has {} options",
                        a.index,
                        found.desc,
                        found.options.len()
                    )),
                    options: Some(found.options),
                })
            }
            Action::SelectDropdownOption(a) => {
                let page = self.page()?;
                let sid = self.snapshot_for(a.snapshot_id)?;
                let args = [json!(sid), json!(a.index), json!(a.text), json!(a.deselect)];
                let (chosen, _): (Described, _) = self
                    .with_settle(&page, cdp::agent(&page, "select", &args, limit))
                    .await?;
                Ok(Outcome::say(format!(
                    "{} {:?} in [{}] {}",
                    if a.deselect { "Unselected" } else { "Selected" },
                    chosen.text.unwrap_or_default(),
                    a.index,
                    chosen.desc
                )))
            }
            Action::DragDrop(a) => self.drag_drop(a).await,
            Action::HoverElement(a) => {
                let page = self.page()?;
                let at = self.reachable(&page, a.snapshot_id, a.index).await?;
                self.with_settle(&page, cdp::mouse_move(&page, at.x, at.y, false, limit))
                    .await?;
                Ok(Outcome::say(format!(
                    "Hovered over [{}] {}",
                    a.index, at.desc
                )))
            }
        }
    }

    async fn navigate(&mut self, raw: &str) -> Result<Outcome, BrowserError> {
        let url = super::reach::normalise_url(raw)?;
        if url.starts_with("data:") {
            // Pages may not open data: URLs themselves; only the protocol can.
            let page = self.page()?;
            cdp::run(&page, NavigateParams::new(url.clone()), self.limit()).await?;
            return Ok(Outcome::say(format!("Navigated to {}", clip_url(&url))));
        }
        self.navigate_like_a_link(&url).await
    }

    /// Navigates from inside the page, as a link would, and follows it through the
    /// browser's events. (chromiumoxide holds `Page.navigate` until the load event and
    /// queues navigations behind each other, so one hung page would stall every later one.)
    async fn navigate_like_a_link(&mut self, url: &str) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        let mut phases = Phases::start();
        let mut watch = NavigationWatch::new(&page, limit).await?;
        let assign = format!("location.assign({}); true", Value::from(url));
        if let Err(e) =
            cdp::evaluate::<bool>(&page, assign.clone(), World::Page, Duration::from_secs(3)).await
        {
            // The tab may be stuck in an earlier navigation: cancel it and try once more.
            if !matches!(e, BrowserError::Timeout(_) | BrowserError::ContextLost) {
                return Err(e);
            }
            watch.stop().await;
            cdp::evaluate::<bool>(&page, assign, World::Page, limit).await?;
        }
        phases.mark("assign");
        let settled = watch.settle(limit).await;
        phases.mark("load");
        tracing::debug!(phases = %phases, "navigated");
        match settled {
            Settled::Loaded { url: landed } if landed.starts_with("chrome-error://") => {
                let text: String = cdp::evaluate(
                    &page,
                    "document.body ? document.body.innerText : ''".into(),
                    World::Isolated,
                    Duration::from_secs(3),
                )
                .await
                .unwrap_or_default();
                let code = text
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .find(|w| w.starts_with("ERR_"))
                    .unwrap_or("the page could not be loaded");
                Err(BrowserError::NavigationFailed(format!(
                    "cannot load {url}: net::{code}"
                )))
            }
            Settled::Loaded { url: landed } => {
                Ok(Outcome::say(format!("Navigated to {}", clip_url(&landed))))
            }
            Settled::StillLoading { url: landed } => Ok(Outcome::say(format!(
                "Navigated to {} (still loading after {} s)",
                clip_url(&landed),
                limit.as_secs()
            ))),
            Settled::Idle => Ok(Outcome::say(format!("Navigated to {}", clip_url(url)))),
            Settled::Stopped => Err(BrowserError::Timeout(format!(
                "{url} did not answer within {} s; the tab stopped loading it",
                limit.as_secs()
            ))),
        }
    }

    async fn go_back(&mut self) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        let history = cdp::run(&page, GetNavigationHistoryParams::default(), limit).await?;
        let current = usize::try_from(history.current_index).unwrap_or(0);
        let Some(previous) = current.checked_sub(1).and_then(|i| history.entries.get(i)) else {
            return Err(BrowserError::InvalidRequest(
                "there is no previous page in this tab".into(),
            ));
        };
        let url = previous.url.clone();
        let entry = NavigateToHistoryEntryParams::new(previous.id);
        let mut watch = NavigationWatch::new(&page, limit).await?;
        cdp::run(&page, entry, limit).await?;
        watch.settle(limit).await;
        Ok(Outcome::say(format!("Went back to {url}")))
    }

    async fn go_forward(&mut self) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        let history = cdp::run(&page, GetNavigationHistoryParams::default(), limit).await?;
        let current = usize::try_from(history.current_index).unwrap_or(0);
        let Some(next) = history.entries.get(current + 1) else {
            return Err(BrowserError::InvalidRequest(
                "there is no next page in this tab".into(),
            ));
        };
        let url = next.url.clone();
        let entry = NavigateToHistoryEntryParams::new(next.id);
        let mut watch = NavigationWatch::new(&page, limit).await?;
        cdp::run(&page, entry, limit).await?;
        watch.settle(limit).await;
        Ok(Outcome::say(format!("Went forward to {url}")))
    }

    async fn reload(&mut self) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        let mut watch = NavigationWatch::new(&page, limit).await?;
        cdp::run(&page, ReloadParams::default(), limit).await?;
        watch.settle(limit).await;
        Ok(Outcome::say("Reloaded the page"))
    }

    async fn scroll(
        &mut self,
        amount: Option<u32>,
        index: Option<u32>,
        sid: Option<u64>,
        direction: f64,
    ) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let target = match index {
            Some(index) => json!([self.snapshot_for(sid)?, index]),
            None => Value::Null,
        };
        // Without an amount: a page's viewport, or most of a box's height.
        let amount = amount.map(f64::from).map_or(Value::Null, |a| json!(a));
        let done: Scrolled = cdp::agent(
            &page,
            "scroll",
            &[json!(direction), amount, target],
            self.limit(),
        )
        .await?;
        let way = if direction > 0.0 { "down" } else { "up" };
        Ok(Outcome::say(if done.scrolled == 0 {
            format!("Could not scroll {way}: already at the end")
        } else {
            format!(
                "Scrolled {way} {} px ({})",
                done.scrolled.abs(),
                done.container
            )
        }))
    }

    async fn drag_end(
        &self,
        page: &Page,
        sid: Option<u64>,
        index: Option<u32>,
        x: Option<f64>,
        y: Option<f64>,
        which: &str,
    ) -> Result<(f64, f64, String), BrowserError> {
        match (index, x, y) {
            (Some(index), None, None) => {
                let sid = self.snapshot_for(sid)?;
                let p: Point =
                    cdp::agent(page, "point", &[json!(sid), json!(index)], self.limit()).await?;
                Ok((p.x, p.y, format!("[{index}] {}", p.desc)))
            }
            (None, Some(x), Some(y)) => Ok((x, y, format!("({x}, {y})"))),
            _ => Err(BrowserError::InvalidRequest(format!(
                "give the {which} as {which}_index, or as {which}_x and {which}_y"
            ))),
        }
    }

    async fn drag_drop(&mut self, a: DragDrop) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        if let Some(index) = a.source_index {
            // Bring the source into view first; the target is measured after that scroll.
            let sid = self.snapshot_for(a.snapshot_id)?;
            self.locate(&page, sid, index).await?;
        }
        let (sx, sy, from) = self
            .drag_end(
                &page,
                a.snapshot_id,
                a.source_index,
                a.source_x,
                a.source_y,
                "source",
            )
            .await?;
        let (tx, ty, to) = self
            .drag_end(
                &page,
                a.snapshot_id,
                a.target_index,
                a.target_x,
                a.target_y,
                "target",
            )
            .await?;
        // HTML5 drag and drop is not driven by mouse events alone in headless Chromium:
        // intercept the drag when one starts and deliver its events by hand.
        cdp::run(&page, SetInterceptDragsParams::new(true), limit).await?;
        let mut intercepted = page
            .event_listener::<EventDragIntercepted>()
            .await
            .map_err(BrowserError::from_cdp)?;
        let result = async {
            cdp::mouse_move(&page, sx, sy, false, limit).await?;
            cdp::mouse_down(&page, sx, sy, limit).await?;
            let steps = 12;
            let mut drag = None;
            for step in 1..=steps {
                let f = f64::from(step) / f64::from(steps);
                let (x, y) = (sx + (tx - sx) * f, sy + (ty - sy) * f);
                cdp::mouse_move(&page, x, y, true, limit).await?;
                if drag.is_none()
                    && let Ok(Some(event)) =
                        tokio::time::timeout(Duration::from_millis(20), intercepted.next()).await
                {
                    drag = Some(event.data.clone());
                }
            }
            if let Some(data) = drag {
                for kind in [
                    DispatchDragEventType::DragEnter,
                    DispatchDragEventType::DragOver,
                    DispatchDragEventType::Drop,
                ] {
                    let event = DispatchDragEventParams::new(kind, tx, ty, data.clone());
                    cdp::run(&page, event, limit).await?;
                }
            }
            cdp::mouse_up(&page, tx, ty, limit).await
        }
        .await;
        let _ = cdp::run(&page, SetInterceptDragsParams::new(false), limit).await;
        result?;
        Ok(Outcome::say(format!("Dragged {from} to {to}")))
    }

    /// The dialog the active tab has open, if any.
    pub fn open_dialog(&self) -> Option<cove_protocol::browser::DialogInfo> {
        self.active_tab().ok()?.dialogs.as_ref()?.current()
    }

    /// The state of the active tab, after a fresh snapshot; while a dialog holds the page
    /// (one open now, or opened while the page was read), what it asks instead.
    pub async fn state(
        &mut self,
        query: StateQuery,
        counter: &AtomicU64,
    ) -> Result<BrowserState, BrowserError> {
        if self.open_dialog().is_none() {
            let mut opened = self.signals.opened();
            opened.borrow_and_update();
            tokio::select! {
                read = self.page_state(query, counter) => return read,
                _ = opened.changed() => {}
            }
        }
        let Some(dialog) = self.open_dialog() else {
            // It opened and closed while the page was read (dismissed elsewhere): read again.
            return Box::pin(self.state(query, counter)).await;
        };
        let page = self.page()?;
        let screenshot = if query.screenshot {
            tokio::time::timeout(Duration::from_secs(2), self.screenshot(&page))
                .await
                .ok()
                .and_then(Result::ok)
        } else {
            None
        };
        let tabs = self.tab_infos().await;
        let (url, title) = tabs
            .iter()
            .find(|t| t.tab_id == self.active)
            .map(|t| (t.url.clone(), t.title.clone()))
            .unwrap_or_default();
        Ok(BrowserState {
            url,
            title,
            tabs,
            snapshot_id: BrowserManager::next_snapshot_id(counter),
            elements: dialogs::describe(&dialog),
            element_count: 0,
            truncated: false,
            pixels_above: 0,
            pixels_below: 0,
            viewport: self.settings.viewport,
            screenshot,
            content: None,
            message: None,
            dropdown_options: None,
            notice: None,
            dialog: Some(dialog),
        })
    }

    /// The state of the active tab read from its page.
    async fn page_state(
        &mut self,
        query: StateQuery,
        counter: &AtomicU64,
    ) -> Result<BrowserState, BrowserError> {
        let page = self.page()?;
        let sid = BrowserManager::next_snapshot_id(counter);
        let mut phases = Phases::start();
        let (snapshot, screenshot) = if query.screenshot {
            // The picture is taken while the page settles and its text is read: a still page
            // (most, once loaded) needs no second one. It is taken again, after the text,
            // when the page changed after it began.
            let began = self.page_clock(&page).await;
            let text = async {
                let changed = self.settle(&page).await;
                if unchanged_since(began, changed) {
                    (self.read_snapshot(&page, sid, &query).await, None)
                } else {
                    // It changed while the picture was taken: another, beside the text.
                    let again = self.page_clock(&page).await;
                    let (snapshot, shot) = tokio::join!(
                        self.read_snapshot(&page, sid, &query),
                        self.screenshot(&page)
                    );
                    (snapshot, Some((shot, again)))
                }
            };
            let ((snapshot, retaken), early) = tokio::join!(text, self.screenshot(&page));
            phases.mark("settle, text and screenshot");
            let snapshot = snapshot?;
            let (shot, began) = match retaken {
                Some((shot, again)) => (shot, again),
                None => (early, began),
            };
            // Changed again before the text was read: the picture follows the text.
            let shot = match shot {
                Ok(shot) if unchanged_since(began, snapshot.changed_at) => shot,
                _ => self.screenshot(&page).await?,
            };
            (snapshot, Some(shot))
        } else {
            self.settle(&page).await;
            phases.mark("settle");
            (self.read_snapshot(&page, sid, &query).await?, None)
        };
        let mut snapshot = snapshot;
        phases.mark("snapshot");
        // The agent runs where the page cannot change it; the caps hold here regardless.
        snapshot.cap(self.settings.elements_cap);
        let active = self.active;
        if let Some(tab) = self.tabs.iter_mut().find(|t| t.id == active) {
            tab.last_snapshot = Some(sid);
        }
        let mut tabs = self.background_tab_infos(Some(active)).await;
        phases.mark("tabs");
        tracing::debug!(phases = %phases, "state taken");
        if let Some(tab) = tabs.iter_mut().find(|t| t.tab_id == active) {
            tab.url = snapshot.url.clone();
            tab.title = snapshot.title.clone();
        }
        Ok(BrowserState {
            url: snapshot.url,
            title: snapshot.title,
            tabs,
            snapshot_id: sid,
            elements: snapshot.elements,
            element_count: snapshot.element_count,
            truncated: snapshot.truncated,
            pixels_above: snapshot.pixels_above,
            pixels_below: snapshot.pixels_below,
            viewport: snapshot.viewport,
            screenshot,
            content: snapshot.content,
            message: None,
            dropdown_options: None,
            notice: None,
            dialog: None,
        })
    }

    /// The page's own clock (ms), when it answers.
    async fn page_clock(&self, page: &Page) -> Option<f64> {
        cdp::agent::<f64>(page, "now", &[], self.limit()).await.ok()
    }

    /// Waits (a bounded time) for the active page to be still, so no state is taken
    /// mid-change: its content unchanged for a moment, no finite animation playing, and no
    /// answer it asked for on the way. Says when (on the page's clock) it last changed.
    async fn settle(&self, page: &Page) -> Option<f64> {
        let deadline = Instant::now() + STILL_WAIT;
        let requests = self.active_tab().ok().and_then(|t| t.requests.as_ref());
        // After an answer the page gets a quiet period of its own to act on it: an app that
        // chains requests starts the next one only once it has read the last.
        let mut fresh = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let still = json!({
                "quietMs": STILL_FOR.as_millis() as u64,
                "maxMs": left.as_millis() as u64,
                "fresh": fresh,
            });
            let waited =
                cdp::agent::<Value>(page, "settle", std::slice::from_ref(&still), self.limit())
                    .await;
            let page_said = match waited {
                Ok(said) => said,
                Err(e) => {
                    tracing::debug!(error = %e, "the page could not say whether it is still");
                    return None;
                }
            };
            let changed_at = page_said["changed_at"].as_f64();
            // An answer on its way will change the page: wait for it, then for the page.
            let asked = Instant::now();
            let answered = match requests {
                Some(requests) => requests.wait_idle(deadline).await,
                None => false,
            };
            tracing::debug!(
                page = %page_said,
                requests_ms = asked.elapsed().as_millis() as u64,
                "settled"
            );
            if !answered {
                return changed_at;
            }
            fresh = true;
        }
    }

    /// A snapshot of the page under id `sid` (of the new document, when a navigation swaps
    /// it meanwhile).
    async fn read_snapshot(
        &self,
        page: &Page,
        sid: u64,
        query: &StateQuery,
    ) -> Result<Snapshot, BrowserError> {
        let limit = self.limit();
        let mut attempts = 0;
        loop {
            let listeners = cdp::listener_positions(page, limit).await;
            let args = json!({
                "snapshotId": sid,
                "maxChars": self.settings.elements_cap,
                "content": query.content,
                "full": query.full,
                "contentChars": CONTENT_CHARS,
                "listeners": listeners,
            });
            match cdp::agent(page, "snapshot", std::slice::from_ref(&args), limit).await {
                Err(BrowserError::ContextLost) if attempts < 5 => {
                    // A navigation is swapping documents; wait for the new one.
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    self.wait_until_loaded(page).await;
                }
                other => return other,
            }
        }
    }

    /// The viewport as the state's screenshot.
    async fn screenshot(&self, page: &Page) -> Result<Screenshot, BrowserError> {
        let vp = self.settings.viewport;
        let quality = i64::from(self.settings.screenshot_quality);
        Ok(Screenshot {
            mime: "image/jpeg".into(),
            base64: cdp::screenshot_base64(page, quality, self.limit()).await?,
            width: vp.width,
            height: vp.height,
        })
    }

    /// Every tab with its URL and title.
    pub async fn tab_infos(&self) -> Vec<TabInfo> {
        self.background_tab_infos(None).await
    }

    /// Every tab; `skip`'s URL and title are left empty for the caller to fill in.
    async fn background_tab_infos(&self, skip: Option<u32>) -> Vec<TabInfo> {
        let limit = self.limit();
        let mut tabs = Vec::with_capacity(self.tabs.len());
        for tab in &self.tabs {
            let (url, title) = if Some(tab.id) == skip {
                (String::new(), String::new())
            } else {
                // A background tab mid-navigation cannot answer; its title can wait.
                let url = tokio::time::timeout(limit, tab.page.url()).await;
                let title = tokio::time::timeout(BACKGROUND_TAB_WAIT, tab.page.get_title()).await;
                (
                    url.ok().and_then(Result::ok).flatten().unwrap_or_default(),
                    title
                        .ok()
                        .and_then(Result::ok)
                        .flatten()
                        .unwrap_or_default(),
                )
            };
            let (mut url, mut title) = (url, title);
            clip_chars(&mut url, MAX_URL_CHARS);
            clip_chars(&mut title, MAX_TITLE_CHARS);
            tabs.push(TabInfo {
                tab_id: tab.id,
                url,
                title,
                active: tab.id == self.active,
            });
        }
        tabs
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
