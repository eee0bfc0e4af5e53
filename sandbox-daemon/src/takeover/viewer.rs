//! One takeover page's WebSocket: frames and the tab list out, the person's input in.
//!
//! Frames are binary messages (the JPEG bytes). The page acknowledges each one it has drawn;
//! at most [`IN_FLIGHT`] are unacknowledged, and a newer frame replaces any not yet sent, so
//! a slow viewer sees the latest picture late rather than a backlog. Everything else is JSON
//! text: `hello`, `view`, `error`, `ended` out; [`ViewerMessage`]s in.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use cove_protocol::takeover::TakeoverEnd;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::input::{ViewerMessage, to_input};
use super::{Frame, Live, Seat, View};
use crate::AppState;
use crate::browser::takeover_tab::{self, TabInput};
use crate::browser::{Action, reach};
use crate::timestamp::rfc3339;
use cove_protocol::browser::NavigateTo;

/// Frames sent and not yet acknowledged, at most.
const IN_FLIGHT: usize = 2;
/// Deadline of one input event.
const INPUT_LIMIT: Duration = Duration::from_secs(5);
/// Longest a viewer's socket waits for the page's Close once the takeover ended.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// Largest message a page may send.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

fn text(value: &Value) -> Message {
    Message::Text(Utf8Bytes::from(value.to_string()))
}

fn view_message(view: &View, me: u64) -> Message {
    text(&json!({
        "type": "view",
        "role": if view.controller == Some(me) { "control" } else { "watch" },
        "tabs": view.tabs,
        "active_tab": view.active_tab,
        "viewport": view.viewport,
        "problem": view.problem,
        "dialog": view.dialog,
    }))
}

fn ended_message(reason: TakeoverEnd) -> Message {
    text(&json!({ "type": "ended", "reason": reason }))
}

fn frame_message(frame: &Frame) -> Message {
    Message::Binary(frame.jpeg.clone())
}

/// Serves one viewer until it leaves or the takeover ends.
pub async fn serve(socket: WebSocket, app: AppState, seat: Seat) {
    let (live, me) = (Arc::clone(&seat.live), seat.id);
    tracing::info!(takeover = %live.id, viewer = me, "takeover viewer connected");
    let result = run(socket, &app, &live, me).await;
    drop(seat);
    if let Err(e) = result {
        tracing::debug!(viewer = me, error = %e, "takeover viewer left");
    } else {
        tracing::info!(takeover = %live.id, viewer = me, "takeover viewer left");
    }
}

async fn run(
    socket: WebSocket,
    app: &AppState,
    live: &Arc<Live>,
    me: u64,
) -> Result<(), axum::Error> {
    let (mut out, mut incoming) = socket.split();
    let mut frames = live.frames.subscribe();
    let mut view = live.view.subscribe();
    let mut ended = live.ended.subscribe();
    // Answers to commands run in the background.
    let (notes, mut pending_notes) = mpsc::unbounded_channel::<Value>();

    out.send(text(&json!({
        "type": "hello",
        "viewer": me,
        "message": live.message,
        "expires_at": rfc3339(live.expires_at),
    })))
    .await?;
    let current = view.borrow_and_update().clone();
    out.send(view_message(&current, me)).await?;
    let mut in_flight = 0usize;
    let first = frames.borrow_and_update().clone();
    if let Some(frame) = first {
        out.send(frame_message(&frame)).await?;
        in_flight += 1;
    }
    loop {
        tokio::select! {
            reason = async { ended.wait_for(Option::is_some).await.ok().and_then(|r| *r) } => {
                let reason = reason.unwrap_or(TakeoverEnd::Released);
                out.send(ended_message(reason)).await?;
                let _ = out.send(Message::Close(Some(CloseFrame {
                    code: 1000,
                    reason: Utf8Bytes::from_static("the takeover ended"),
                }))).await;
                // Finish the closing handshake: read what the page still sends (acks of the
                // frames in flight) until its Close. Dropping the connection now would reset
                // it under a page that has not yet read `ended`.
                let _ = tokio::time::timeout(CLOSE_WAIT, async {
                    while let Some(Ok(message)) = incoming.next().await {
                        if matches!(message, Message::Close(_)) {
                            break;
                        }
                    }
                })
                .await;
                return Ok(());
            }
            changed = frames.changed(), if in_flight < IN_FLIGHT => {
                if changed.is_err() {
                    return Ok(());
                }
                let frame = frames.borrow_and_update().clone();
                if let Some(frame) = frame {
                    out.send(frame_message(&frame)).await?;
                    in_flight += 1;
                }
            }
            changed = view.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
                let current = view.borrow_and_update().clone();
                out.send(view_message(&current, me)).await?;
            }
            Some(note) = pending_notes.recv() => out.send(text(&note)).await?,
            message = incoming.next() => {
                let Some(message) = message else { return Ok(()) };
                match message? {
                    // A page of an older coved sent `null` after a press: nothing to do.
                    Message::Text(body) if body.as_str().trim() == "null" => {}
                    Message::Text(body) => {
                        let parsed: Result<ViewerMessage, _> = serde_json::from_str(body.as_str());
                        match parsed {
                            Ok(ViewerMessage::Ack) => in_flight = in_flight.saturating_sub(1),
                            Ok(message) => {
                                if let Some(answer) = handle(app, live, me, message, &notes).await {
                                    out.send(text(&answer)).await?;
                                }
                            }
                            Err(e) => {
                                out.send(text(&json!({
                                    "type": "error",
                                    "message": format!("the daemon did not understand a message: {e}"),
                                }))).await?;
                            }
                        }
                    }
                    Message::Close(_) => return Ok(()),
                    _ => {}
                }
            }
        }
    }
}

/// Stops the tab's loading when dropped while armed: a person's command that was aborted
/// after it had started acting (armed once the takeover was checked, with the browser held).
struct StopLoadingOnDrop {
    page: Option<chromiumoxide::Page>,
    armed: Arc<AtomicBool>,
}

impl Drop for StopLoadingOnDrop {
    fn drop(&mut self) {
        if self.armed.load(Ordering::SeqCst)
            && let Some(page) = self.page.take()
        {
            tokio::spawn(async move { takeover_tab::stop_loading(&page, INPUT_LIMIT).await });
        }
    }
}

/// Acts on one message; returns an answer to send at once, if any.
async fn handle(
    app: &AppState,
    live: &Arc<Live>,
    me: u64,
    message: ViewerMessage,
    notes: &mpsc::UnboundedSender<Value>,
) -> Option<Value> {
    // The agent has the browser again; input still in flight is not the person's to give.
    if live.ended.borrow().is_some() {
        return None;
    }
    if live.view.borrow().controller != Some(me) {
        return Some(json!({
            "type": "error",
            "message": "another viewer has control; you are watching",
        }));
    }
    if let ViewerMessage::Done { note } = &message {
        app.takeover
            .end(Some(&live.id), TakeoverEnd::HandedBack, note.clone());
        return None;
    }
    match command_of(&message) {
        Some(action) => start_command(app, live, action, notes),
        None => send_input(app, live, &message).await,
    }
}

/// The browser command a message asks for (navigate, history, a tab, a dialog's answer);
/// none for input (pointer, wheel, keys).
fn command_of(message: &ViewerMessage) -> Option<Action> {
    match message {
        ViewerMessage::Navigate { url } => {
            Some(Action::NavigateTo(NavigateTo { url: url.clone() }))
        }
        ViewerMessage::Back => Some(Action::GoBack),
        ViewerMessage::Forward => Some(Action::GoForward),
        ViewerMessage::Reload => Some(Action::Reload),
        ViewerMessage::Tab { id } => Some(Action::SwitchTab(cove_protocol::browser::SwitchTab {
            tab_id: *id,
        })),
        ViewerMessage::Dialog { accept, text } => {
            Some(Action::HandleDialog(cove_protocol::browser::HandleDialog {
                accept: *accept,
                text: text.clone(),
            }))
        }
        _ => None,
    }
}

/// Starts a person's browser command in the background (navigations take seconds; the
/// socket keeps serving frames meanwhile), one at a time; an answer when one still runs.
fn start_command(
    app: &AppState,
    live: &Arc<Live>,
    action: Action,
    notes: &mpsc::UnboundedSender<Value>,
) -> Option<Value> {
    let app = app.clone();
    let notes = notes.clone();
    let task_live = live.clone();
    let started = live.run_command(async move {
        let live = task_live;
        // Cut off when the takeover ends: a navigation it started must not finish later.
        let armed = Arc::new(AtomicBool::new(false));
        let unfinished = StopLoadingOnDrop {
            page: live.page(),
            armed: armed.clone(),
        };
        let action = match action {
            Action::NavigateTo(NavigateTo { url }) => match reach::person_may_open(&url).await {
                Ok(url) => Action::NavigateTo(NavigateTo { url }),
                Err(e) => {
                    let _ = notes.send(json!({ "type": "error", "message": e.to_string() }));
                    return;
                }
            },
            other => other,
        };
        let id = live.id.clone();
        let takeover_app = app.clone();
        let still_current = {
            let armed = armed.clone();
            move || {
                let current = takeover_app.takeover.is_current(&id);
                armed.store(current, Ordering::SeqCst);
                current
            }
        };
        if let Err(e) = app.browser.viewer_act(action, still_current).await {
            let _ = notes.send(json!({ "type": "error", "message": e.to_string() }));
        }
        armed.store(false, Ordering::SeqCst);
        drop(unfinished);
        live.refresh.notify_one();
    });
    if !started {
        return Some(json!({
            "type": "error",
            "message": "still busy with your previous command; try again when it is done",
        }));
    }
    None
}

/// Sends a person's pointer, wheel or key input to the tab, mapped from the size they see
/// it at; an answer when it could not be.
async fn send_input(app: &AppState, live: &Arc<Live>, message: &ViewerMessage) -> Option<Value> {
    let (vw, vh) = {
        let frame = live.frames.borrow();
        match frame.as_ref() {
            Some(f) if f.width > 0.0 && f.height > 0.0 => (f.width, f.height),
            _ => {
                let vp = live.view.borrow().viewport;
                (f64::from(vp.width), f64::from(vp.height))
            }
        }
    };
    let input = match to_input(message, vw, vh) {
        Ok(Some(input)) => input,
        Ok(None) => return None,
        Err(e) => return Some(json!({ "type": "error", "message": e.to_string() })),
    };
    let settles = matches!(
        &input,
        TabInput::Mouse {
            kind: takeover_tab::MouseKind::Up,
            ..
        } | TabInput::Key {
            kind: takeover_tab::KeyKind::Up,
            ..
        }
    );
    let page = live.page()?;
    // A press that opens a dialog holds the page until the dialog is answered, which this
    // viewer does: stop waiting for the press once one opens.
    let mut opened = app.browser.dialog_signals().opened();
    opened.borrow_and_update();
    let dispatched = tokio::select! {
        done = takeover_tab::dispatch(&page, input, INPUT_LIMIT) => done,
        _ = opened.changed() => Ok(()),
    };
    if let Err(e) = dispatched {
        return Some(json!({ "type": "error", "message": e.to_string() }));
    }
    if settles {
        // A click or a key may have opened a tab or navigated: re-read the tabs soon.
        live.refresh.notify_one();
    }
    None
}
