//! The screencast pump of one takeover: follows the active tab, acknowledges each frame the
//! browser sends (so it sends the next), and publishes the newest frame for the viewers.
//! It also keeps the viewers' tab list current.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::EventScreencastFrame;
use chromiumoxide::cdp::browser_protocol::target::TargetId;
use chromiumoxide::listeners::EventStream;
use futures_util::StreamExt;

use super::guard::Guard;
use super::{Frame, Live, lock};
use crate::AppState;
use crate::browser::takeover_tab::{self, TakeoverTab};

/// How often the tab list is re-read while someone watches and nothing asks sooner.
const TAB_POLL: Duration = Duration::from_secs(1);
/// Deadline of the pump's own CDP calls.
const CALL_LIMIT: Duration = Duration::from_secs(5);

struct Cast {
    target: TargetId,
    page: Page,
    frames: EventStream<EventScreencastFrame>,
}

impl Cast {
    async fn start(tab: &TakeoverTab, quality: u8) -> Option<Cast> {
        match takeover_tab::start_screencast(&tab.page, tab.viewport, quality, CALL_LIMIT).await {
            Ok(frames) => Some(Cast {
                target: tab.page.target_id().clone(),
                page: tab.page.clone(),
                frames,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the screencast");
                None
            }
        }
    }
}

async fn next_frame(cast: &mut Option<Cast>) -> Option<Arc<EventScreencastFrame>> {
    match cast {
        Some(cast) => cast.frames.next().await,
        None => std::future::pending().await,
    }
}

/// Runs until the takeover ends, then stops the screencast.
pub async fn pump(app: AppState, live: Arc<Live>, first: TakeoverTab) {
    let quality = app.browser.screencast_quality();
    let mut ended = live.ended.subscribe();
    let mut guard = Guard::new(app.browser.tab_targets().await.unwrap_or_default());
    guard.cover(&first.page).await;
    let mut cast = Cast::start(&first, quality).await;
    // The browser sends a first frame when the cast starts only if something paints; a
    // still page would leave a new viewer with nothing to see.
    publish_snapshot(&live, &first, quality).await;
    let dialogs = app.browser.dialog_signals().changed();
    let mut poll = tokio::time::interval(TAB_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = async { let _ = ended.wait_for(Option::is_some).await; } => break,
            frame = next_frame(&mut cast) => match frame {
                Some(frame) => {
                    if let Some(cast) = &cast
                        && let Err(e) = takeover_tab::ack_frame(&cast.page, frame.session_id, CALL_LIMIT).await
                    {
                        tracing::debug!(error = %e, "screencast ack failed");
                    }
                    publish(&live, &frame);
                }
                // The tab closed or the browser went away; the next poll finds what is left.
                None => cast = None,
            },
            // Nobody watches: the tab list can wait until someone joins (which asks for it).
            _ = poll.tick(), if live.viewer_count() > 0 => follow(&app, &live, &mut cast, &mut guard, quality).await,
            _ = live.refresh.notified() => follow(&app, &live, &mut cast, &mut guard, quality).await,
            () = dialogs.notified() => follow(&app, &live, &mut cast, &mut guard, quality).await,
        }
    }
    if let Some(cast) = cast {
        takeover_tab::stop_screencast(&cast.page, CALL_LIMIT).await;
    }
    guard.release().await;
    live.released.send_replace(true);
}

/// Re-reads the tabs; moves the screencast when the active tab changed.
async fn follow(
    app: &AppState,
    live: &Live,
    cast: &mut Option<Cast>,
    guard: &mut Guard,
    quality: u8,
) {
    let tab = match app.browser.live_tab().await {
        Ok(tab) => tab,
        Err(e) => {
            live.view.send_if_modified(|v| {
                let problem = Some(format!("the browser cannot be reached: {e}"));
                let changed = v.problem != problem;
                v.problem = problem;
                changed
            });
            return;
        }
    };
    live.view.send_if_modified(|v| {
        let changed = v.tabs != tab.tabs
            || v.active_tab != tab.tab_id
            || v.viewport != tab.viewport
            || v.problem.is_some()
            || v.dialog.as_ref().map(|d| (&d.kind, &d.message))
                != tab.dialog.as_ref().map(|d| (&d.kind, &d.message));
        v.tabs = tab.tabs.clone();
        v.active_tab = tab.tab_id;
        v.viewport = tab.viewport;
        v.problem = None;
        v.dialog = tab.dialog.clone();
        changed
    });
    let moved = cast
        .as_ref()
        .is_none_or(|c| &c.target != tab.page.target_id());
    if moved {
        if let Some(old) = cast.take() {
            takeover_tab::stop_screencast(&old.page, CALL_LIMIT).await;
        }
        guard.cover(&tab.page).await;
        *lock(&live.page) = Some(tab.page.clone());
        *cast = Cast::start(&tab, quality).await;
        publish_snapshot(live, &tab, quality).await;
    }
}

fn publish(live: &Live, frame: &EventScreencastFrame) {
    let data: &str = frame.data.as_ref();
    match base64::engine::general_purpose::STANDARD.decode(data) {
        Ok(jpeg) => {
            live.frames.send_replace(Some(Arc::new(Frame {
                jpeg: Bytes::from(jpeg),
                width: frame.metadata.device_width,
                height: frame.metadata.device_height,
            })));
        }
        Err(e) => tracing::debug!(error = %e, "bad screencast frame"),
    }
}

async fn publish_snapshot(live: &Live, tab: &TakeoverTab, quality: u8) {
    match takeover_tab::snapshot_jpeg(&tab.page, quality, CALL_LIMIT).await {
        Ok(jpeg) => {
            live.frames.send_replace(Some(Arc::new(Frame {
                jpeg: Bytes::from(jpeg),
                width: f64::from(tab.viewport.width),
                height: f64::from(tab.viewport.height),
            })));
        }
        Err(e) => tracing::debug!(error = %e, "cannot take the first frame"),
    }
}
