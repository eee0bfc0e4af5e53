//! The browser family: one Chromium per daemon, launched on the first browser call, driven
//! over CDP (chromiumoxide). Every action answers with the browser state; every CDP call has
//! its own deadline; a browser that died is relaunched by the next call, which says so.

pub mod background;
mod cdp;
mod chromium;
pub mod dialogs;
pub mod http;
pub(crate) mod keys;
mod navigation;
mod pipe;
pub mod reach;
mod requests;
mod session;
pub mod takeover_tab;
mod typing;

/// The Chromium executable the daemon would launch.
pub use chromium::find as find_chromium;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chromiumoxide::error::CdpError;
use cove_protocol::browser::{
    BrowserState, ClickCoordinates, ClickElement, CloseTab, DragDrop, GetDropdownOptions,
    HandleDialog, HoverElement, InputText, NavigateTo, ScrollDown, ScrollToText, ScrollUp,
    SelectDropdownOption, SendKeys, StateQuery, SwitchTab, Viewport, Wait,
};

use crate::procs::ChildRegistry;
use session::Session;

/// What went wrong with a browser request, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// Install Chromium or fix `--chromium`; nothing else helps.
    #[error("{0}")]
    Unavailable(String),
    /// The page or browser did not answer in time; retry, or try another page.
    #[error("{0}")]
    Timeout(String),
    /// The URL could not be loaded; check it.
    #[error("{0}")]
    NavigationFailed(String),
    /// The element is gone: read the fresh state and pick again.
    #[error("{0}")]
    Stale(String),
    /// No element has that index: read the fresh state and pick again.
    #[error("{0}")]
    ElementNotFound(String),
    /// Something covers the element: deal with it (close the dialog) first.
    #[error("{0}")]
    NotClickable(String),
    /// The element cannot take this action.
    #[error("{0}")]
    WrongElementKind(String),
    /// The text or option asked for is not there.
    #[error("{0}")]
    NoMatch(String),
    /// No tab has that id.
    #[error("no tab {0}; see `tabs` in the state")]
    TabNotFound(u32),
    /// Fix the request.
    #[error("{0}")]
    InvalidRequest(String),
    /// The page's document changed under a call; retried internally.
    #[error("the page navigated during the call")]
    ContextLost,
    /// The daemon's page agent failed on this page.
    #[error("the page agent failed: {0}")]
    Script(String),
    /// The browser failed in a way that is not the caller's fault.
    #[error("{0}")]
    Internal(String),
    /// An element error, with the fresh state for the caller to pick again from.
    #[error("{error}")]
    WithState {
        error: Box<BrowserError>,
        state: Box<BrowserState>,
    },
}

impl BrowserError {
    /// Sorts a chromiumoxide error.
    pub fn from_cdp(e: CdpError) -> BrowserError {
        match e {
            CdpError::Timeout => BrowserError::Timeout("the browser did not answer in time".into()),
            CdpError::Ws(_) | CdpError::NoResponse | CdpError::ChannelSendError(_) => {
                BrowserError::Unavailable(
                    "the connection to the browser broke; the next call relaunches it".into(),
                )
            }
            CdpError::ChromeMessage(message) if message.contains("context") => {
                BrowserError::ContextLost
            }
            CdpError::Chrome(err) => {
                let message = err.to_string();
                if message.contains("context was destroyed")
                    || message.contains("Cannot find context")
                    || message.contains("Inspected target navigated")
                {
                    BrowserError::ContextLost
                } else {
                    BrowserError::Internal(format!("the browser refused a command: {message}"))
                }
            }
            other => BrowserError::Internal(format!("browser protocol error: {other}")),
        }
    }

    /// Whether the caller needs the fresh state to act on this error.
    fn wants_state(&self) -> bool {
        matches!(
            self,
            BrowserError::Stale(_)
                | BrowserError::ElementNotFound(_)
                | BrowserError::NotClickable(_)
        )
    }
}

/// The session in a slot [`BrowserManager::lock_running`] filled.
fn running(slot: &mut Option<Session>) -> Result<&mut Session, BrowserError> {
    slot.as_mut()
        .ok_or_else(|| BrowserError::Unavailable("the browser is not running".into()))
}

/// How the daemon's browser behaves.
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// The Chromium executable; searched on `PATH` when absent.
    pub chromium: Option<PathBuf>,
    /// `--proxy-server` for Chromium: where it reaches the web (loopback stays direct).
    pub proxy: Option<String>,
    pub viewport: Viewport,
    /// Deadline of each action (navigation included) and of each CDP call.
    pub timeout: Duration,
    /// Cap on the `elements` text.
    pub elements_cap: usize,
    /// How long a page's JavaScript dialog waits for an answer before it is dismissed.
    pub dialog_timeout: Duration,
    /// JPEG quality of screenshots.
    pub screenshot_quality: u8,
    /// Where pages' downloads go: a folder in the workspace, where the agent finds them.
    pub downloads: PathBuf,
}

/// One browser action, as the routes receive them.
#[derive(Debug, Clone)]
pub enum Action {
    NavigateTo(NavigateTo),
    GoBack,
    /// Only from the takeover page.
    GoForward,
    /// Only from the takeover page.
    Reload,
    Wait(Wait),
    ClickElement(ClickElement),
    ClickCoordinates(ClickCoordinates),
    InputText(InputText),
    SendKeys(SendKeys),
    SwitchTab(SwitchTab),
    CloseTab(CloseTab),
    ScrollDown(ScrollDown),
    ScrollUp(ScrollUp),
    ScrollToText(ScrollToText),
    GetDropdownOptions(GetDropdownOptions),
    SelectDropdownOption(SelectDropdownOption),
    DragDrop(DragDrop),
    HoverElement(HoverElement),
    HandleDialog(HandleDialog),
}

/// The daemon's browser: launched lazily, relaunched after a crash, one action at a time.
pub struct BrowserManager {
    settings: Arc<BrowserSettings>,
    registry: Arc<ChildRegistry>,
    /// Started with the first launch; see [`chromium::Launcher`].
    launcher: std::sync::OnceLock<chromium::Launcher>,
    session: tokio::sync::Mutex<Option<Session>>,
    /// Snapshot ids never repeat, not even across relaunches.
    snapshots: Arc<AtomicU64>,
    /// Dialogs opening and closing in any tab, across relaunches.
    dialogs: dialogs::DialogSignals,
}

impl BrowserManager {
    /// A manager that has not launched anything yet.
    pub fn new(settings: BrowserSettings, registry: Arc<ChildRegistry>) -> Self {
        BrowserManager {
            settings: Arc::new(settings),
            registry,
            launcher: std::sync::OnceLock::new(),
            session: tokio::sync::Mutex::new(None),
            snapshots: Arc::new(AtomicU64::new(1)),
            dialogs: dialogs::DialogSignals::default(),
        }
    }

    /// Dialogs opening and closing in any tab.
    pub fn dialog_signals(&self) -> &dialogs::DialogSignals {
        &self.dialogs
    }

    /// The configured viewport.
    pub fn viewport(&self) -> Viewport {
        self.settings.viewport
    }

    /// Performs `action` (or nothing) and answers with the state afterwards.
    pub async fn act(
        &self,
        action: Option<Action>,
        query: StateQuery,
    ) -> Result<BrowserState, BrowserError> {
        let limit = self.settings.timeout;
        let mut phases = session::Phases::start();
        let (mut guard, notice) = self.lock_running().await?;
        phases.mark("lock");
        let session = running(&mut guard)?;
        let outcome = match action {
            Some(action) => {
                // A dialog the action opens holds the page, and with it the action's own
                // events: the action is over once one opens.
                let mut opened = self.dialogs.opened();
                opened.borrow_and_update();
                // The action's own steps have deadlines; this bounds the whole of it.
                let span = cove_telemetry::in_trace(
                    || tracing::info_span!(target: cove_telemetry::TARGET, "browser action"),
                );
                let performed = tracing::Instrument::instrument(session.perform(action), span);
                tokio::select! {
                    done = tokio::time::timeout(limit * 2, performed) => match done {
                        Ok(result) => result,
                        Err(_) => Err(BrowserError::Timeout(format!(
                            "the action did not finish within {} s",
                            (limit * 2).as_secs()
                        ))),
                    },
                    _ = opened.changed() => Ok(session::Outcome::say("The page opened a dialog")),
                }
            }
            None => Ok(session::Outcome::default()),
        };
        if matches!(outcome, Err(BrowserError::Unavailable(_))) || !session.is_alive() {
            // The browser died under the action; the next call starts a fresh one.
            if let Some(dead) = guard.take() {
                dead.close().await;
            }
            return Err(outcome.err().unwrap_or_else(|| {
                BrowserError::Unavailable(
                    "the browser stopped during the action; the next call relaunches it".into(),
                )
            }));
        }
        phases.mark("action");
        session.sync_tabs().await;
        phases.mark("tabs");
        match outcome {
            Ok(outcome) => {
                let span = cove_telemetry::in_trace(
                    || tracing::info_span!(target: cove_telemetry::TARGET, "browser state"),
                );
                let mut state =
                    tracing::Instrument::instrument(session.state(query, &self.snapshots), span)
                        .await?;
                phases.mark("state");
                tracing::debug!(phases = %phases, "acted");
                state.message = outcome.message;
                state.dropdown_options = outcome.options;
                state.notice = notice;
                Ok(state)
            }
            Err(error) if error.wants_state() => {
                match session.state(query, &self.snapshots).await {
                    Ok(mut state) => {
                        state.notice = notice;
                        Err(BrowserError::WithState {
                            error: Box::new(error),
                            state: Box::new(state),
                        })
                    }
                    Err(_) => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// A JPEG of the active tab's viewport.
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        let (mut guard, _) = self.lock_running().await?;
        let session = running(&mut guard)?;
        session.sync_tabs().await;
        session.screenshot_jpeg().await
    }

    /// The session slot, locked within the action deadline, with a running browser in it
    /// (launched, or relaunched with a notice when it had died).
    async fn lock_running(
        &self,
    ) -> Result<(tokio::sync::MutexGuard<'_, Option<Session>>, Option<String>), BrowserError> {
        let mut guard = tokio::time::timeout(self.settings.timeout, self.session.lock())
            .await
            .map_err(|_| {
                BrowserError::Timeout("the browser is still busy with an earlier action".into())
            })?;
        let notice = self.ensure_running(&mut guard).await?;
        Ok((guard, notice))
    }

    /// Starts the browser if it is not running. Returns a notice when it had died.
    async fn ensure_running(
        &self,
        slot: &mut Option<Session>,
    ) -> Result<Option<String>, BrowserError> {
        let mut notice = None;
        if let Some(session) = slot.as_ref() {
            if session.is_alive() {
                return Ok(None);
            }
            tracing::warn!("the browser stopped; relaunching it");
            notice = Some(
                "The browser had stopped (it crashed or was killed) and was relaunched; its tabs and page state were lost."
                    .to_string(),
            );
            if let Some(dead) = slot.take() {
                dead.close().await;
            }
        }
        let launcher = match self.launcher.get() {
            Some(launcher) => launcher,
            None => {
                let launcher = chromium::Launcher::new().map_err(|e| {
                    BrowserError::Unavailable(format!("cannot start the launcher thread: {e}"))
                })?;
                self.launcher.get_or_init(|| launcher)
            }
        };
        let session = Session::launch(
            self.settings.clone(),
            launcher,
            &self.registry,
            self.dialogs.clone(),
        )
        .await?;
        *slot = Some(session);
        Ok(notice)
    }

    /// Closes the browser and kills its processes (daemon shutdown).
    pub async fn shutdown(&self) {
        if let Some(session) = self.session.lock().await.take() {
            session.close().await;
        }
    }

    /// Next snapshot id.
    fn next_snapshot_id(counter: &AtomicU64) -> u64 {
        counter.fetch_add(1, Ordering::Relaxed)
    }
}
