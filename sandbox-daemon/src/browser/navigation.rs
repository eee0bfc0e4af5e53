//! Watching a tab's main frame navigate, through the browser's own events.
//!
//! While a cross-document navigation is pending, Chromium holds back every DevTools message
//! to the page (so the session can move to the new document): a script evaluated then gets
//! no answer until the navigation commits or is stopped. Navigation progress is therefore
//! read from page events, and a navigation that will not commit is cancelled with the
//! browser-side `Page.stopLoading`, after which the page answers again.

use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameNavigated, EventFrameStartedLoading, EventFrameStoppedLoading, EventLoadEventFired,
    EventNavigatedWithinDocument, FrameId, StopLoadingParams,
};
use chromiumoxide::listeners::EventStream;
use futures_util::StreamExt;

use super::{BrowserError, cdp};

/// How long after the page's next frame a navigation's first event may still arrive, on a
/// page that cannot say whether it began one (no Navigation API).
const EVENT_GRACE: Duration = Duration::from_millis(30);

/// Subscriptions to one tab's navigation events, taken before the action that may navigate.
pub struct NavigationWatch {
    page: Page,
    main: Option<FrameId>,
    started: EventStream<EventFrameStartedLoading>,
    navigated: EventStream<EventFrameNavigated>,
    within: EventStream<EventNavigatedWithinDocument>,
    loaded: EventStream<EventLoadEventFired>,
    stopped: EventStream<EventFrameStoppedLoading>,
}

/// The page agent's answer after an input.
#[derive(serde::Deserialize)]
struct AfterInput {
    navigating: bool,
}

/// How a watched navigation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Nothing navigated.
    Idle,
    /// A new document (or a same-document change) arrived and finished loading.
    Loaded { url: String },
    /// A new document arrived but was still loading at the deadline.
    StillLoading { url: String },
    /// The navigation never committed; it was stopped.
    Stopped,
}

impl NavigationWatch {
    /// Subscribes to `page`'s navigation events.
    pub async fn new(page: &Page, limit: Duration) -> Result<NavigationWatch, BrowserError> {
        let main = tokio::time::timeout(limit, page.mainframe())
            .await
            .ok()
            .and_then(Result::ok)
            .flatten();
        Ok(NavigationWatch {
            page: page.clone(),
            main,
            started: page
                .event_listener()
                .await
                .map_err(BrowserError::from_cdp)?,
            navigated: page
                .event_listener()
                .await
                .map_err(BrowserError::from_cdp)?,
            within: page
                .event_listener()
                .await
                .map_err(BrowserError::from_cdp)?,
            loaded: page
                .event_listener()
                .await
                .map_err(BrowserError::from_cdp)?,
            stopped: page
                .event_listener()
                .await
                .map_err(BrowserError::from_cdp)?,
        })
    }

    fn is_main(&self, frame: &FrameId) -> bool {
        self.main.as_ref().is_none_or(|m| m == frame)
    }

    /// Readies the page to say whether the coming input starts a navigation; call it right
    /// before the input. False when the page cannot say (then a grace period stands in).
    pub async fn arm(&self) -> bool {
        cdp::agent::<bool>(&self.page, "armInput", &[], Duration::from_secs(2))
            .await
            .unwrap_or(false)
    }

    /// Waits for an input to start a navigation of the main frame: until the page has run
    /// the input's handlers and drawn the next frame. A page `armed` before the input then
    /// says whether a navigation began, so the common "nothing happened" case costs one
    /// frame; otherwise [`EVENT_GRACE`] is left for the browser's events to arrive. Never
    /// longer than `window`.
    pub async fn started_after_input(&mut self, window: Duration, armed: bool) -> bool {
        let mut deadline = Instant::now() + window;
        let page = self.page.clone();
        let next_frame = async move {
            match cdp::agent::<AfterInput>(&page, "afterInput", &[], window).await {
                Ok(after) => after.navigating,
                // The document went away: the page has moved on.
                Err(_) => true,
            }
        };
        tokio::pin!(next_frame);
        let mut framed = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::select! {
                Some(ev) = self.started.next() => {
                    if self.is_main(&ev.frame_id) { return true; }
                }
                Some(_) = self.within.next() => return true,
                navigating = &mut next_frame, if !framed => {
                    framed = true;
                    match (armed, navigating) {
                        // The page says none began.
                        (true, false) => return false,
                        // One began: its first event is on the way.
                        (true, true) => {}
                        (false, _) => deadline = deadline.min(Instant::now() + EVENT_GRACE),
                    }
                }
                () = tokio::time::sleep(left) => return false,
            }
        }
    }

    /// Waits, up to `limit`, for the navigation under way (or just asked for) to commit and
    /// load. One that never commits is stopped, so the tab answers again.
    /// [`Self::settle_untraced`] in a span of the navigation's settle phase.
    pub async fn settle(&mut self, limit: Duration) -> Settled {
        let span = cove_telemetry::in_trace(
            || tracing::info_span!(target: cove_telemetry::TARGET, "browser navigation"),
        );
        tracing::Instrument::instrument(self.settle_untraced(limit), span).await
    }

    pub async fn settle_untraced(&mut self, limit: Duration) -> Settled {
        let deadline = Instant::now() + limit;
        let mut committed: Option<String> = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            tokio::select! {
                Some(ev) = self.navigated.next() => {
                    if ev.frame.parent_id.is_none() {
                        committed = Some(match &ev.frame.unreachable_url {
                            Some(unreachable) => format!("chrome-error://{unreachable}"),
                            None => ev.frame.url.clone() + ev.frame.url_fragment.as_deref().unwrap_or(""),
                        });
                    }
                }
                Some(ev) = self.within.next() => {
                    if self.is_main(&ev.frame_id) {
                        return Settled::Loaded { url: ev.url.clone() };
                    }
                }
                Some(_) = self.loaded.next() => {
                    if let Some(url) = committed.take() {
                        return Settled::Loaded { url };
                    }
                }
                Some(ev) = self.stopped.next() => {
                    if self.is_main(&ev.frame_id) {
                        // Stopped without a new document: cancelled, or a download.
                        return match committed.take() {
                            Some(url) => Settled::Loaded { url },
                            None => Settled::Idle,
                        };
                    }
                }
                () = tokio::time::sleep(left) => break,
            }
        }
        match committed {
            Some(url) => Settled::StillLoading { url },
            None => {
                self.stop().await;
                Settled::Stopped
            }
        }
    }

    /// Cancels whatever the tab is loading (answered by the browser, not the page).
    pub async fn stop(&self) {
        let _ = cdp::run(
            &self.page,
            StopLoadingParams::default(),
            Duration::from_secs(3),
        )
        .await;
    }
}

impl Settled {
    /// A note for the action's message when the navigation did not end well.
    pub fn note(&self) -> String {
        match self {
            Settled::StillLoading { url } => format!("; {url} is still loading"),
            Settled::Stopped => {
                "; the page it started loading did not answer and was stopped".into()
            }
            Settled::Idle | Settled::Loaded { .. } => String::new(),
        }
    }
}
