//! What the takeover page needs of the browser: the active tab's page handle for the
//! screencast, the tab list, and a person's input dispatched as trusted CDP events.
//!
//! Input goes straight to the page without the session lock: a person's mouse moves must not
//! queue behind a state read.

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::{
    self, EventRequestPaused, RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams,
    DispatchMouseEventPointerType, DispatchMouseEventType, InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::cdp::browser_protocol::page::{
    EventScreencastFrame, NavigateParams, ScreencastFrameAckParams, StartScreencastFormat,
    StartScreencastParams, StopLoadingParams, StopScreencastParams,
};
use chromiumoxide::cdp::browser_protocol::target::TargetId;
use chromiumoxide::listeners::EventStream;
use cove_protocol::browser::{TabInfo, Viewport};

use super::{BrowserError, BrowserManager, cdp, running};

/// The active tab as the live view sees it.
#[derive(Clone)]
pub struct TakeoverTab {
    pub tab_id: u32,
    pub page: Page,
    pub tabs: Vec<TabInfo>,
    pub viewport: Viewport,
    /// The JavaScript dialog the tab has open, for the person to answer.
    pub dialog: Option<cove_protocol::browser::DialogInfo>,
}

impl TakeoverTab {
    /// The active tab's URL and title, as the tab list has them.
    pub fn active_info(&self) -> Option<&TabInfo> {
        self.tabs.iter().find(|t| t.tab_id == self.tab_id)
    }
}

/// Which mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    None,
    Left,
    Middle,
    Right,
}

/// What a mouse event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseKind {
    Move,
    Down,
    Up,
}

/// A key event's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Down,
    Up,
}

/// One input event in viewport coordinates (CSS pixels), ready to dispatch.
#[derive(Debug, Clone, PartialEq)]
pub enum TabInput {
    Mouse {
        kind: MouseKind,
        x: f64,
        y: f64,
        button: Button,
        /// Buttons held, as a DOM `buttons` bitmask.
        buttons: i64,
        /// 1 for a click, 2 for the second press of a double-click.
        clicks: i64,
        modifiers: i64,
    },
    Wheel {
        x: f64,
        y: f64,
        dx: f64,
        dy: f64,
        modifiers: i64,
    },
    Key {
        kind: KeyKind,
        key: String,
        code: String,
        key_code: i64,
        /// The character the key types, if any (none while Control, Alt or Meta is held).
        text: Option<String>,
        modifiers: i64,
    },
    /// Text inserted as one edit (a paste, or what an input method composed).
    Text(String),
}

fn cdp_button(button: Button) -> MouseButton {
    match button {
        Button::None => MouseButton::None,
        Button::Left => MouseButton::Left,
        Button::Middle => MouseButton::Middle,
        Button::Right => MouseButton::Right,
    }
}

impl BrowserManager {
    /// The active tab and the tab list, launching the browser if it is not running.
    pub async fn live_tab(&self) -> Result<TakeoverTab, BrowserError> {
        let (mut guard, _) = self.lock_running().await?;
        let session = running(&mut guard)?;
        session.sync_tabs().await;
        let (tab_id, page) = session.active_page()?;
        Ok(TakeoverTab {
            tab_id,
            page,
            tabs: session.tab_infos().await,
            viewport: self.settings.viewport,
            dialog: session.open_dialog(),
        })
    }

    /// Carries out a person's command from the takeover page (navigate, back, reload, switch
    /// tab), without the agent's state snapshot, if `still_allowed` holds once the browser is
    /// free: the takeover may have ended while the command waited for it.
    pub async fn viewer_act(
        &self,
        action: super::Action,
        still_allowed: impl Fn() -> bool,
    ) -> Result<Option<String>, BrowserError> {
        let limit = self.settings.timeout;
        let (mut guard, _) = self.lock_running().await?;
        if !still_allowed() {
            return Err(BrowserError::InvalidRequest(
                "the takeover has ended; the browser is the agent's again".into(),
            ));
        }
        let session = running(&mut guard)?;
        let outcome = tokio::time::timeout(limit * 2, session.perform(action))
            .await
            .map_err(|_| BrowserError::Timeout("the browser did not finish in time".into()))??;
        session.sync_tabs().await;
        Ok(outcome.message)
    }

    /// The browser's identities of every tab open now.
    pub async fn tab_targets(&self) -> Result<Vec<TargetId>, BrowserError> {
        let (mut guard, _) = self.lock_running().await?;
        Ok(running(&mut guard)?.target_ids())
    }

    /// The screencast's JPEG quality.
    pub fn screencast_quality(&self) -> u8 {
        self.settings.screenshot_quality
    }
}

/// Dispatches one input event to `page` as the browser's own (trusted) input.
pub async fn dispatch(
    page: &Page,
    input: TabInput,
    limit: std::time::Duration,
) -> Result<(), BrowserError> {
    match input {
        TabInput::Mouse {
            kind,
            x,
            y,
            button,
            buttons,
            clicks,
            modifiers,
        } => {
            let kind = match kind {
                MouseKind::Move => DispatchMouseEventType::MouseMoved,
                MouseKind::Down => DispatchMouseEventType::MousePressed,
                MouseKind::Up => DispatchMouseEventType::MouseReleased,
            };
            let params = DispatchMouseEventParams::builder()
                .r#type(kind)
                .x(x)
                .y(y)
                .button(cdp_button(button))
                .buttons(buttons)
                .click_count(clicks)
                .modifiers(modifiers)
                .pointer_type(DispatchMouseEventPointerType::Mouse)
                .build()
                .map_err(|e| BrowserError::Internal(format!("bad mouse event: {e}")))?;
            cdp::run(page, params, limit).await.map(|_| ())
        }
        TabInput::Wheel {
            x,
            y,
            dx,
            dy,
            modifiers,
        } => {
            let params = DispatchMouseEventParams::builder()
                .r#type(DispatchMouseEventType::MouseWheel)
                .x(x)
                .y(y)
                .delta_x(dx)
                .delta_y(dy)
                .modifiers(modifiers)
                .build()
                .map_err(|e| BrowserError::Internal(format!("bad wheel event: {e}")))?;
            cdp::run(page, params, limit).await.map(|_| ())
        }
        TabInput::Key {
            kind,
            key,
            code,
            key_code,
            text,
            modifiers,
        } => {
            let kind = match (kind, &text) {
                (KeyKind::Down, Some(_)) => DispatchKeyEventType::KeyDown,
                // A key-down that types nothing (Enter aside) is a raw one, as a keyboard's.
                (KeyKind::Down, None) => DispatchKeyEventType::RawKeyDown,
                (KeyKind::Up, _) => DispatchKeyEventType::KeyUp,
            };
            let mut params = DispatchKeyEventParams::builder()
                .r#type(kind.clone())
                .key(key)
                .code(code)
                .windows_virtual_key_code(key_code)
                .native_virtual_key_code(key_code)
                .modifiers(modifiers);
            if kind == DispatchKeyEventType::KeyDown
                && let Some(text) = text
            {
                params = params.text(text.clone()).unmodified_text(text);
            }
            let params = params
                .build()
                .map_err(|e| BrowserError::Internal(format!("bad key event: {e}")))?;
            cdp::run(page, params, limit).await.map(|_| ())
        }
        TabInput::Text(text) => cdp::run(page, InsertTextParams::new(text), limit)
            .await
            .map(|_| ()),
    }
}

/// Starts the tab's screencast: JPEG frames no larger than the viewport, sent by the browser
/// whenever the page paints something new (none while it is idle).
pub async fn start_screencast(
    page: &Page,
    viewport: Viewport,
    quality: u8,
    limit: std::time::Duration,
) -> Result<EventStream<EventScreencastFrame>, BrowserError> {
    // Subscribe first: the first frame follows the start at once.
    let frames = tokio::time::timeout(limit, page.event_listener::<EventScreencastFrame>())
        .await
        .map_err(|_| BrowserError::Timeout("the page did not answer in time".into()))?
        .map_err(BrowserError::from_cdp)?;
    let params = StartScreencastParams::builder()
        .format(StartScreencastFormat::Jpeg)
        .quality(i64::from(quality))
        .max_width(i64::from(viewport.width))
        .max_height(i64::from(viewport.height))
        .every_nth_frame(1)
        .build();
    cdp::run(page, params, limit).await?;
    Ok(frames)
}

/// Tells the browser a frame arrived, so it sends the next one.
pub async fn ack_frame(
    page: &Page,
    session_id: i64,
    limit: std::time::Duration,
) -> Result<(), BrowserError> {
    cdp::run(page, ScreencastFrameAckParams::new(session_id), limit)
        .await
        .map(|_| ())
}

/// Holds every document the tab is about to load (a link, a redirect, a form, an address)
/// until [`let_through`] or [`refuse_navigation`] decides; the page's other requests go on.
pub async fn hold_navigations(
    page: &Page,
    limit: std::time::Duration,
) -> Result<EventStream<EventRequestPaused>, BrowserError> {
    // Subscribe first: a navigation may be held as soon as holding starts.
    let held = tokio::time::timeout(limit, page.event_listener::<EventRequestPaused>())
        .await
        .map_err(|_| BrowserError::Timeout("the page did not answer in time".into()))?
        .map_err(BrowserError::from_cdp)?;
    // Every request, not only documents: a page's scripts fetch too.
    let everything = RequestPattern::builder()
        .url_pattern("*")
        .request_stage(RequestStage::Request)
        .build();
    let params = fetch::EnableParams::builder()
        .patterns(vec![everything])
        .build();
    cdp::run(page, params, limit).await?;
    Ok(held)
}

/// Stops holding the tab's documents (any still held go on).
pub async fn release_navigations(page: &Page, limit: std::time::Duration) {
    let _ = cdp::run(page, fetch::DisableParams::default(), limit).await;
}

/// Lets a held document load.
pub async fn let_through(page: &Page, request: fetch::RequestId, limit: std::time::Duration) {
    let _ = cdp::run(page, fetch::ContinueRequestParams::new(request), limit).await;
}

/// Fails a held document: the tab shows the browser's error page.
pub async fn refuse_navigation(page: &Page, request: fetch::RequestId, limit: std::time::Duration) {
    let params = fetch::FailRequestParams::new(request, ErrorReason::AccessDenied);
    let _ = cdp::run(page, params, limit).await;
}

/// The tab's address now.
pub async fn page_url(page: &Page, limit: std::time::Duration) -> Option<String> {
    tokio::time::timeout(limit, page.url())
        .await
        .ok()
        .and_then(Result::ok)
        .flatten()
}

/// Replaces what the tab shows with an empty page.
pub async fn blank(page: &Page, limit: std::time::Duration) {
    let _ = cdp::run(page, NavigateParams::new("about:blank"), limit).await;
}

/// Stops whatever the tab is loading.
pub async fn stop_loading(page: &Page, limit: std::time::Duration) {
    let _ = cdp::run(page, StopLoadingParams::default(), limit).await;
}

/// Stops the tab's screencast.
pub async fn stop_screencast(page: &Page, limit: std::time::Duration) {
    let _ = cdp::run(page, StopScreencastParams::default(), limit).await;
}

/// A JPEG of the page now, for a viewer that connects while the page is idle.
pub async fn snapshot_jpeg(
    page: &Page,
    quality: u8,
    limit: std::time::Duration,
) -> Result<Vec<u8>, BrowserError> {
    use base64::Engine;
    let data = cdp::screenshot_base64(page, i64::from(quality), limit).await?;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| BrowserError::Internal(format!("bad screenshot data: {e}")))
}
