//! CDP calls with the daemon's own deadline on each, and the page agent's entry point.

use std::sync::LazyLock;
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, CaptureScreenshotFormat, CaptureScreenshotParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, ExecutionContextId, TerminateExecutionParams,
};
use chromiumoxide::handler::frame::UTILITY_WORLD_NAME;
use chromiumoxide::types::Command;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::BrowserError;

/// The page agent, with the element order it shares with the listener probe.
static AGENT_JS: LazyLock<String> =
    LazyLock::new(|| include_str!("agent.js").replace("/* ORDER */", include_str!("order.js")));
/// The listener probe, run in the page's own world.
static PROBE_JS: LazyLock<String> =
    LazyLock::new(|| include_str!("probe.js").replace("/* ORDER */", include_str!("order.js")));
/// How often to look for the isolated world of a document that is being replaced.
const WORLD_POLL: Duration = Duration::from_millis(5);

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

/// The execution context of chromiumoxide's utility world in the page's main frame: an
/// isolated world, whose globals and builtins the page's scripts can neither see nor change.
/// A document being replaced has none for a moment; past `limit` the page has moved on.
async fn isolated_world(page: &Page, limit: Duration) -> Result<ExecutionContextId, BrowserError> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Ok(Ok(Some(context))) =
            tokio::time::timeout_at(deadline, page.secondary_execution_context()).await
        {
            return Ok(context);
        }
        if tokio::time::Instant::now() + WORLD_POLL >= deadline {
            return Err(BrowserError::ContextLost);
        }
        tokio::time::sleep(WORLD_POLL).await;
    }
}

/// Where a script runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    /// The page's own: its scripts can change what the script sees and answers.
    Page,
    /// An isolated world the page cannot reach.
    Isolated,
}

/// Evaluates `expression` in `world` and returns its JSON value.
pub async fn evaluate<T: DeserializeOwned>(
    page: &Page,
    expression: String,
    world: World,
    limit: Duration,
) -> Result<T, BrowserError> {
    let mut params = EvaluateParams::builder()
        .expression(expression)
        .return_by_value(true)
        .await_promise(true);
    match world {
        // DevTools' command-line API (getEventListeners) is for the probe.
        World::Page => params = params.include_command_line_api(true),
        World::Isolated => params = params.context_id(isolated_world(page, limit).await?),
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

/// Has the browser install the page agent in each new document of `page`, in the isolated
/// world calls reach, before the page's own scripts run: the first state after a navigation
/// then neither sends nor compiles it, and the agent's record of when the content last
/// changed covers the load, so a page that is still by then needs no wait.
pub async fn install_agent_on_new_documents(
    page: &Page,
    limit: Duration,
) -> Result<(), BrowserError> {
    let params = AddScriptToEvaluateOnNewDocumentParams::builder()
        .source(format!("{};", AGENT_JS.trim_end()))
        .world_name(UTILITY_WORLD_NAME)
        .build()
        .map_err(|e| BrowserError::Internal(format!("bad new-document script: {e}")))?;
    run(page, params, limit).await.map(|_| ())
}

/// The agent's `VERSION`: a call reaches an agent already installed in the document only
/// when it is this one.
const AGENT_VERSION: u32 = 12;
/// What a short call answers when the document has no agent (of this version) yet.
const NOT_INSTALLED: &str = "\u{0}cove:not-installed";

/// Calls `agent.<method>(args...)` of the page agent, installing it first if needed. An
/// `{error, reason}` answer becomes the matching [`BrowserError`].
pub async fn agent<T: DeserializeOwned>(
    page: &Page,
    method: &str,
    args: &[Value],
    limit: Duration,
) -> Result<T, BrowserError> {
    let args: Vec<String> = args.iter().map(Value::to_string).collect();
    let args = args.join(",");
    // Most calls find the agent installed: sending its whole source (45 KB) every time
    // costs the page a parse, about 4 ms a call.
    let short = format!(
        "(a => a && a.version === {AGENT_VERSION} ? a.{method}({args}) : {})(globalThis.__coveAgent)",
        Value::from(NOT_INSTALLED)
    );
    let mut value: Value = evaluate(page, short, World::Isolated, limit).await?;
    if value.as_str() == Some(NOT_INSTALLED) {
        let install = format!("({}).{method}({args})", AGENT_JS.trim_end());
        value = evaluate(page, install, World::Isolated, limit).await?;
    }
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
            "invalid_value" => BrowserError::InvalidRequest(reason),
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
    // Encoded for speed: the picture goes to a model or a person at once, not to storage.
    let params = CaptureScreenshotParams::builder()
        .format(CaptureScreenshotFormat::Jpeg)
        .quality(quality)
        .optimize_for_speed(true)
        .build();
    let shot = run(page, params, limit).await?;
    Ok(String::from(shot.data))
}

/// `document.readyState` in the main world, or None while a navigation swaps documents.
pub async fn ready_state(page: &Page, limit: Duration) -> Option<String> {
    evaluate::<String>(page, "document.readyState".into(), World::Page, limit)
        .await
        .ok()
}

/// Most element positions the probe may answer; more is a page lying about itself.
const MAX_PROBED: usize = 50_000;

/// The positions of the page's elements with a click-like listener, as its own world sees
/// them (see `probe.js`), in the whole page (`full`) or where the snapshot reads it; none
/// when the probe fails, which costs only those click targets.
pub async fn listener_positions(page: &Page, full: bool, limit: Duration) -> Vec<u64> {
    let probe = format!("({})({full})", PROBE_JS.trim_end());
    match evaluate::<Vec<u64>>(page, probe, World::Page, limit).await {
        Ok(mut positions) => {
            positions.truncate(MAX_PROBED);
            positions
        }
        Err(e) => {
            tracing::debug!(error = %e, "the listener probe failed");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_calls_expect_the_agent_version_the_source_declares() {
        let declared = format!("const VERSION = {AGENT_VERSION};");
        assert!(
            AGENT_JS.contains(&declared),
            "agent.js must declare {declared:?}: bump AGENT_VERSION with it"
        );
    }
}
