//! JavaScript dialogs (`alert`, `confirm`, `prompt`, and a page asking before it is left).
//! While one is open the page's scripts stand still, so the page reader, and any action
//! whose events the page must handle, would wait for an answer that never comes. Each tab
//! is watched for them: an action that opens one returns at once, the state shows it, an
//! action answers it, and one left alone is dismissed after a while, so no page can hold
//! the browser.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{
    DialogType, EventJavascriptDialogClosed, EventJavascriptDialogOpening,
    HandleJavaScriptDialogParams,
};
use cove_protocol::browser::DialogInfo;
use futures_util::StreamExt;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::{BrowserError, cdp};

/// Signals shared by every tab's watcher, kept across relaunches of the browser.
#[derive(Clone)]
pub struct DialogSignals {
    /// Counts dialogs opened: an action in flight stops waiting when it moves.
    opened: Arc<watch::Sender<u64>>,
    /// Rung when any dialog opens or closes (a takeover's view shows them).
    changed: Arc<Notify>,
}

impl Default for DialogSignals {
    fn default() -> Self {
        DialogSignals {
            opened: Arc::new(watch::Sender::new(0)),
            changed: Arc::new(Notify::new()),
        }
    }
}

impl DialogSignals {
    /// A receiver whose `changed()` resolves at the next dialog opened in any tab.
    pub fn opened(&self) -> watch::Receiver<u64> {
        self.opened.subscribe()
    }

    /// Rung when a dialog opens or closes.
    pub fn changed(&self) -> Arc<Notify> {
        self.changed.clone()
    }
}

#[derive(Debug, Clone)]
struct Open {
    /// How long it waits for an answer before it is dismissed.
    dismiss_after: Duration,
    kind: DialogType,
    message: String,
    default_text: Option<String>,
    opened: Instant,
    /// Which dialog of this tab it is, so a late timer never answers a newer one.
    number: u64,
}

/// One tab's dialog, kept current by a task reading the browser's events.
pub struct DialogWatch {
    open: Arc<Mutex<Option<Open>>>,
    task: JoinHandle<()>,
}

impl Drop for DialogWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The name of a dialog's kind, as the state says it.
fn kind_name(kind: &DialogType) -> &'static str {
    match kind {
        DialogType::Alert => "alert",
        DialogType::Confirm => "confirm",
        DialogType::Prompt => "prompt",
        DialogType::Beforeunload => "beforeunload",
    }
}

impl DialogWatch {
    /// Starts watching `page` for dialogs.
    pub async fn start(
        page: &Page,
        signals: DialogSignals,
        dismiss_after: Duration,
    ) -> Result<DialogWatch, BrowserError> {
        let mut opening = page
            .event_listener::<EventJavascriptDialogOpening>()
            .await
            .map_err(BrowserError::from_cdp)?;
        let mut closed = page
            .event_listener::<EventJavascriptDialogClosed>()
            .await
            .map_err(BrowserError::from_cdp)?;
        let open: Arc<Mutex<Option<Open>>> = Arc::new(Mutex::new(None));
        let (task_open, page) = (open.clone(), page.clone());
        let task = tokio::spawn(async move {
            let mut count = 0u64;
            loop {
                tokio::select! {
                    Some(event) = opening.next() => {
                        count += 1;
                        let dialog = Open {
                            dismiss_after,
                            kind: event.r#type.clone(),
                            message: event.message.clone(),
                            default_text: event.default_prompt.clone(),
                            opened: Instant::now(),
                            number: count,
                        };
                        if let Ok(mut slot) = task_open.lock() {
                            *slot = Some(dialog);
                        }
                        tokio::spawn(dismiss_later(page.clone(), task_open.clone(), count, dismiss_after));
                        signals.opened.send_modify(|n| *n += 1);
                        signals.changed.notify_one();
                    }
                    Some(_) = closed.next() => {
                        if let Ok(mut slot) = task_open.lock() {
                            *slot = None;
                        }
                        signals.changed.notify_one();
                    }
                    else => return,
                }
            }
        });
        Ok(DialogWatch { open, task })
    }

    /// Which dialog of the tab is open now, if any.
    pub fn open_number(&self) -> Option<u64> {
        self.open.lock().ok()?.as_ref().map(|o| o.number)
    }

    /// Dialog `number` was answered: it is gone at once (the browser's word that it closed
    /// comes a moment later), unless another took its place meanwhile.
    pub fn answered(&self, number: u64) {
        if let Ok(mut slot) = self.open.lock()
            && slot.as_ref().is_some_and(|o| o.number == number)
        {
            *slot = None;
        }
    }

    /// The dialog open now, if any.
    pub fn current(&self) -> Option<DialogInfo> {
        let open = self.open.lock().ok()?.clone()?;
        let left = open.dismiss_after.saturating_sub(open.opened.elapsed());
        Some(DialogInfo {
            kind: kind_name(&open.kind).to_string(),
            message: open.message,
            default_text: open.default_text.filter(|t| !t.is_empty()),
            dismissed_in_secs: left.as_secs(),
        })
    }
}

/// Dismisses dialog `number` of the tab once it has waited `after`, unless it was answered
/// (or another took its place) meanwhile.
async fn dismiss_later(page: Page, open: Arc<Mutex<Option<Open>>>, number: u64, after: Duration) {
    tokio::time::sleep(after).await;
    let still = open
        .lock()
        .ok()
        .and_then(|slot| slot.as_ref().map(|o| o.number == number))
        .unwrap_or(false);
    if still {
        tracing::info!("a dialog waited {} s: dismissing it", after.as_secs());
        if let Err(e) = answer(&page, false, None, Duration::from_secs(5)).await {
            tracing::debug!(error = %e, "cannot dismiss a dialog");
        }
    }
}

/// Answers the page's open dialog.
pub async fn answer(
    page: &Page,
    accept: bool,
    text: Option<String>,
    limit: Duration,
) -> Result<(), BrowserError> {
    let mut params = HandleJavaScriptDialogParams::new(accept);
    params.prompt_text = text;
    cdp::run(page, params, limit).await.map(|_| ())
}

/// The state's text for a page held by `dialog`: what it asks and how to answer.
pub fn describe(dialog: &DialogInfo) -> String {
    let how = match dialog.kind.as_str() {
        "alert" => "handle_dialog with accept true (OK)".to_string(),
        "prompt" => format!(
            "handle_dialog with accept true and the text to answer{}, or accept false (Cancel)",
            dialog
                .default_text
                .as_ref()
                .map(|t| format!(" (it holds {t:?})"))
                .unwrap_or_default()
        ),
        "beforeunload" => {
            "handle_dialog with accept true (leave the page) or false (stay)".to_string()
        }
        _ => "handle_dialog with accept true (OK) or false (Cancel)".to_string(),
    };
    format!(
        "[dialog] The page shows a {} dialog: {:?}. Nothing on the page can be read or used until it is answered: {how}. Left alone, it is dismissed in {} s.",
        dialog.kind, dialog.message, dialog.dismissed_in_secs
    )
}
