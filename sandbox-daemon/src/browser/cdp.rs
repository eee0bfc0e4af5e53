//! CDP calls with the daemon's own deadline on each, and the page agent's entry point.

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, TerminateExecutionParams};
use chromiumoxide::types::Command;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::BrowserError;

const AGENT_JS: &str = include_str!("agent.js");

/// Runs one CDP command, giving up after `limit`.
pub async fn run<T: Command>(
    page: &Page,
    cmd: T,
    limit: Duration,
) -> Result<T::Response, BrowserError> {
    match tokio::time::timeout(limit, page.execute(cmd)).await {
        Ok(Ok(response)) => Ok(response.result),
        Ok(Err(e)) => Err(BrowserError::from_cdp(e)),
        Err(_) => Err(BrowserError::Timeout(format!(
            "the page did not answer within {} s",
            limit.as_secs_f32()
        ))),
    }
}

/// Evaluates `expression` and returns its JSON value: in the page's main world, or with
/// `isolated` in chromiumoxide's utility world when the page has one.
pub async fn evaluate<T: DeserializeOwned>(
    page: &Page,
    expression: String,
    isolated: bool,
    limit: Duration,
) -> Result<T, BrowserError> {
    let mut params = EvaluateParams::builder()
        .expression(expression)
        .return_by_value(true)
        .await_promise(true)
        .include_command_line_api(true);
    if isolated
        && let Ok(Ok(Some(context))) =
            tokio::time::timeout(limit, page.secondary_execution_context()).await
    {
        params = params.context_id(context);
    }
    let params = params
        .build()
        .map_err(|e| BrowserError::Internal(format!("bad evaluate params: {e}")))?;
    let result = match run(page, params, limit).await {
        Err(BrowserError::Timeout(msg)) => {
            // A script stuck in a loop holds the page: interrupt it so the next call works.
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                page.execute(TerminateExecutionParams::default()),
            )
            .await;
            return Err(BrowserError::Timeout(msg));
        }
        other => other?,
    };
    if let Some(exception) = result.exception_details {
        let detail = exception
            .exception
            .as_ref()
            .and_then(|e| e.description.clone())
            .unwrap_or(exception.text);
        return Err(BrowserError::Script(detail));
    }
    let value = result.result.value.unwrap_or(Value::Null);
    serde_json::from_value(value)
        .map_err(|e| BrowserError::Internal(format!("unexpected answer from the page agent: {e}")))
}

/// Calls `agent.<method>(args...)` of the page agent, installing it first if needed. An
/// `{error, reason}` answer becomes the matching [`BrowserError`].
pub async fn agent<T: DeserializeOwned>(
    page: &Page,
    method: &str,
    args: &[Value],
    limit: Duration,
) -> Result<T, BrowserError> {
    let args: Vec<String> = args.iter().map(Value::to_string).collect();
    let expression = format!("({}).{method}({})", AGENT_JS.trim_end(), args.join(","));
    // The main world: DevTools' getEventListeners only sees the page's own listeners there.
    let value: Value = evaluate(page, expression, false, limit).await?;
    if let Some(kind) = value.get("error").and_then(Value::as_str) {
        let reason = value
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("the page agent refused")
            .to_string();
        return Err(match kind {
            "stale" => BrowserError::Stale(reason),
            "not_found" => BrowserError::ElementNotFound(reason),
            "wrong_kind" => BrowserError::WrongElementKind(reason),
            "no_match" => BrowserError::NoMatch(reason),
            _ => BrowserError::Script(reason),
        });
    }
    serde_json::from_value(value)
        .map_err(|e| BrowserError::Internal(format!("unexpected answer from the page agent: {e}")))
}

async fn mouse(
    page: &Page,
    kind: DispatchMouseEventType,
    x: f64,
    y: f64,
    pressed: bool,
    limit: Duration,
) -> Result<(), BrowserError> {
    let mut params = DispatchMouseEventParams::builder()
        .r#type(kind.clone())
        .x(x)
        .y(y);
    if kind != DispatchMouseEventType::MouseMoved {
        params = params.button(MouseButton::Left).click_count(1);
    } else if pressed {
        // A move with the button held must name the button, or no drag starts.
        params = params.button(MouseButton::Left);
    }
    params = params.buttons(if pressed { 1 } else { 0 });
    let params = params
        .build()
        .map_err(|e| BrowserError::Internal(format!("bad mouse event: {e}")))?;
    run(page, params, limit).await.map(|_| ())
}

/// Moves the mouse to a viewport point.
pub async fn mouse_move(
    page: &Page,
    x: f64,
    y: f64,
    held: bool,
    limit: Duration,
) -> Result<(), BrowserError> {
    mouse(page, DispatchMouseEventType::MouseMoved, x, y, held, limit).await
}

/// Presses the left button at a point.
pub async fn mouse_down(page: &Page, x: f64, y: f64, limit: Duration) -> Result<(), BrowserError> {
    mouse(
        page,
        DispatchMouseEventType::MousePressed,
        x,
        y,
        true,
        limit,
    )
    .await
}

/// Releases the left button at a point.
pub async fn mouse_up(page: &Page, x: f64, y: f64, limit: Duration) -> Result<(), BrowserError> {
    mouse(
        page,
        DispatchMouseEventType::MouseReleased,
        x,
        y,
        false,
        limit,
    )
    .await
}

/// A real left click: move, press, release.
pub async fn click(page: &Page, x: f64, y: f64, limit: Duration) -> Result<(), BrowserError> {
    mouse_move(page, x, y, false, limit).await?;
    mouse_down(page, x, y, limit).await?;
    mouse_up(page, x, y, limit).await
}

/// Types text into the focused element as one insertion (input events fire as for typing).
pub async fn insert_text(page: &Page, text: &str, limit: Duration) -> Result<(), BrowserError> {
    run(page, InsertTextParams::new(text), limit)
        .await
        .map(|_| ())
}

/// One key event.
pub async fn key_event(
    page: &Page,
    kind: DispatchKeyEventType,
    key: &super::keys::Key,
    modifiers: i64,
    limit: Duration,
) -> Result<(), BrowserError> {
    let mut params = DispatchKeyEventParams::builder()
        .r#type(kind.clone())
        .key(key.key.clone())
        .code(key.code.clone())
        .windows_virtual_key_code(key.key_code)
        .native_virtual_key_code(key.key_code)
        .modifiers(modifiers);
    // Only a key-down without Control/Alt/Meta produces text.
    if kind == DispatchKeyEventType::KeyDown
        && modifiers & (super::keys::ALT | super::keys::CONTROL | super::keys::META) == 0
        && let Some(text) = &key.text
    {
        params = params.text(text.clone()).unmodified_text(text.clone());
    }
    let params = params
        .build()
        .map_err(|e| BrowserError::Internal(format!("bad key event: {e}")))?;
    run(page, params, limit).await.map(|_| ())
}

/// A JPEG of the viewport, base64-encoded as CDP sends it.
pub async fn screenshot_base64(
    page: &Page,
    quality: i64,
    limit: Duration,
) -> Result<String, BrowserError> {
    let params = CaptureScreenshotParams::builder()
        .format(CaptureScreenshotFormat::Jpeg)
        .quality(quality)
        .build();
    let shot = run(page, params, limit).await?;
    Ok(String::from(shot.data))
}

/// `document.readyState` in the main world, or None while a navigation swaps documents.
pub async fn ready_state(page: &Page, limit: Duration) -> Option<String> {
    evaluate::<String>(page, "document.readyState".into(), false, limit)
        .await
        .ok()
}
