//! Browser tools: Suna's action set on the sandbox's Chromium. Each result is short; the
//! page's elements (and a screenshot, for models with vision) ride along in the next call.

use cove_protocol::browser::{
    BrowserAction, ClickCoordinates, ClickElement, CloseTab, DragDrop, GetDropdownOptions, GoBack,
    HandleDialog, HoverElement, InputText, NavigateTo, ScrollDown, ScrollToText, ScrollUp,
    SelectDropdownOption, SendKeys, StateQuery, SwitchTab, Wait,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::{SandboxEnv, ToolDef, ToolResult, tool};

/// Performs `action` and reports the page it left the browser on.
async fn act<A: BrowserAction>(env: &SandboxEnv, action: &A) -> ToolResult {
    let query = StateQuery {
        screenshot: env.vision,
        ..StateQuery::lean()
    };
    reported(env, env.sandbox.browser(action, query).await)
}

/// The tool's result for a state (or the failure to get it).
fn reported(
    env: &SandboxEnv,
    state: Result<cove_protocol::browser::BrowserState, cove_protocol::client::ClientError>,
) -> ToolResult {
    match state {
        Ok(state) => {
            let mut text = state.message.clone().unwrap_or_else(|| "Done.".to_string());
            if let Some(options) = &state.dropdown_options {
                for o in options {
                    let mark = if o.selected { " (selected)" } else { "" };
                    text.push_str(&format!(
                        "\n{}: {:?} value={:?}{mark}",
                        o.index, o.text, o.value
                    ));
                }
            }
            text.push_str(&format!(
                "\nNow on {:?} ({}), {} tab(s). The page's elements{} come with this result.",
                state.title,
                state.url,
                state.tabs.len(),
                if env.vision { " and a screenshot" } else { "" }
            ));
            if let Some(notice) = &state.notice {
                text.push_str(&format!("\nNote: {notice}"));
            }
            let mut result = ToolResult::ok(text);
            result.browser_state = Some(state);
            result
        }
        Err(e) => ToolResult::from_client(&e),
    }
}

fn snapshot(env: &SandboxEnv) -> Option<u64> {
    env.snapshot_id
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Url {
    /// The address to open (https:// is assumed when missing).
    url: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Nothing {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Seconds {
    /// How long to wait (default 3, at most 30).
    seconds: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Index {
    /// The element's number in the latest page state, as in [12].
    index: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Point {
    /// Horizontal position in the viewport, in pixels from the left.
    x: f64,
    /// Vertical position in the viewport, in pixels from the top.
    y: f64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct IndexText {
    /// The element's number in the latest page state.
    index: u32,
    /// The text to type (it replaces what the field holds).
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Keys {
    /// Keys to press: Enter, Escape, Tab, ArrowDown, a chord like Control+a, several separated
    /// by spaces (Tab Tab Enter), or plain text to type.
    keys: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Tab {
    /// The tab's id from the page state's tab list.
    tab_id: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Amount {
    /// Pixels to scroll (default: one screen).
    amount: Option<u32>,
    /// A scrollable box's number in the latest page state (or an element inside it): scroll
    /// that box instead of the page.
    index: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DialogAnswer {
    /// true: OK (or leave the page); false: Cancel (or stay).
    accept: bool,
    /// A prompt's answer.
    text: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Text {
    /// Visible text to find on the page.
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct IndexOption {
    /// The select element's number in the latest page state.
    index: u32,
    /// The visible text of the option to pick.
    text: String,
    /// Unselect the option (a select that takes several); picking adds to those chosen.
    deselect: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Drag {
    /// Element to drag, by number (or give source_x and source_y).
    source_index: Option<u32>,
    source_x: Option<f64>,
    source_y: Option<f64>,
    /// Element to drop on, by number (or give target_x and target_y).
    target_index: Option<u32>,
    target_x: Option<f64>,
    target_y: Option<f64>,
}

async fn navigate_to(env: &SandboxEnv, a: Url) -> ToolResult {
    act(env, &NavigateTo { url: a.url }).await
}

async fn go_back(env: &SandboxEnv, _a: Nothing) -> ToolResult {
    act(env, &GoBack {}).await
}

async fn wait(env: &SandboxEnv, a: Seconds) -> ToolResult {
    act(
        env,
        &Wait {
            seconds: a.seconds.unwrap_or(3.0),
        },
    )
    .await
}

async fn click_element(env: &SandboxEnv, a: Index) -> ToolResult {
    let action = ClickElement {
        index: a.index,
        snapshot_id: snapshot(env),
    };
    act(env, &action).await
}

async fn click_coordinates(env: &SandboxEnv, a: Point) -> ToolResult {
    act(env, &ClickCoordinates { x: a.x, y: a.y }).await
}

async fn input_text(env: &SandboxEnv, a: IndexText) -> ToolResult {
    let action = InputText {
        index: a.index,
        text: a.text,
        snapshot_id: snapshot(env),
    };
    act(env, &action).await
}

async fn send_keys(env: &SandboxEnv, a: Keys) -> ToolResult {
    act(env, &SendKeys { keys: a.keys }).await
}

async fn switch_tab(env: &SandboxEnv, a: Tab) -> ToolResult {
    act(env, &SwitchTab { tab_id: a.tab_id }).await
}

async fn close_tab(env: &SandboxEnv, a: Tab) -> ToolResult {
    act(env, &CloseTab { tab_id: a.tab_id }).await
}

async fn scroll_down(env: &SandboxEnv, a: Amount) -> ToolResult {
    let action = ScrollDown {
        amount: a.amount,
        index: a.index,
        snapshot_id: a.index.and(snapshot(env)),
    };
    act(env, &action).await
}

async fn scroll_up(env: &SandboxEnv, a: Amount) -> ToolResult {
    let action = ScrollUp {
        amount: a.amount,
        index: a.index,
        snapshot_id: a.index.and(snapshot(env)),
    };
    act(env, &action).await
}

async fn hover_element(env: &SandboxEnv, a: Index) -> ToolResult {
    let action = HoverElement {
        index: a.index,
        snapshot_id: snapshot(env),
    };
    act(env, &action).await
}

async fn read_page(env: &SandboxEnv, _: Nothing) -> ToolResult {
    let query = StateQuery {
        screenshot: env.vision,
        full: true,
        ..StateQuery::lean()
    };
    reported(env, env.sandbox.browser_state(query).await)
}

async fn handle_dialog(env: &SandboxEnv, a: DialogAnswer) -> ToolResult {
    let action = HandleDialog {
        accept: a.accept,
        text: a.text,
    };
    act(env, &action).await
}

async fn scroll_to_text(env: &SandboxEnv, a: Text) -> ToolResult {
    act(env, &ScrollToText { text: a.text }).await
}

async fn get_dropdown_options(env: &SandboxEnv, a: Index) -> ToolResult {
    let action = GetDropdownOptions {
        index: a.index,
        snapshot_id: snapshot(env),
    };
    act(env, &action).await
}

async fn select_dropdown_option(env: &SandboxEnv, a: IndexOption) -> ToolResult {
    let action = SelectDropdownOption {
        index: a.index,
        text: a.text,
        deselect: a.deselect.unwrap_or(false),
        snapshot_id: snapshot(env),
    };
    act(env, &action).await
}

async fn drag_drop(env: &SandboxEnv, a: Drag) -> ToolResult {
    let action = DragDrop {
        source_index: a.source_index,
        source_x: a.source_x,
        source_y: a.source_y,
        target_index: a.target_index,
        target_x: a.target_x,
        target_y: a.target_y,
        snapshot_id: snapshot(env),
    };
    act(env, &action).await
}

/// The browser tools.
pub fn tools() -> Vec<ToolDef> {
    vec![
        tool! {
            name: "browser_navigate_to",
            args: Url,
            summary: Some("url"),
            raw: &[],
            description: "Open a URL in the browser's active tab.",
            example: json!({"url": "https://example.com"}),
            run: navigate_to,
        },
        tool! {
            name: "browser_go_back",
            args: Nothing,
            summary: None,
            raw: &[],
            description: "Go back to the previous page of the active tab.",
            example: json!({}),
            run: go_back,
        },
        tool! {
            name: "browser_wait",
            args: Seconds,
            summary: Some("seconds"),
            raw: &[],
            description: "Wait a few seconds for the page to finish what it is doing, then look again.",
            example: json!({"seconds": 3.0}),
            run: wait,
        },
        tool! {
            name: "browser_click_element",
            args: Index,
            summary: Some("index"),
            raw: &[],
            description: "Click an element of the latest page state by its number.",
            example: json!({"index": 5}),
            run: click_element,
        },
        tool! {
            name: "browser_click_coordinates",
            args: Point,
            summary: None,
            raw: &[],
            description: "Click a point of the viewport (use when the element list lacks what you see in the screenshot).",
            example: json!({"x": 640.0, "y": 360.0}),
            run: click_coordinates,
        },
        tool! {
            name: "browser_input_text",
            args: IndexText,
            summary: Some("text"),
            raw: &["text"],
            description: "Type text into an input, textarea or editable element by its number, replacing its content.",
            example: json!({"index": 3, "text": "hello@example.com"}),
            run: input_text,
        },
        tool! {
            name: "browser_send_keys",
            args: Keys,
            summary: Some("keys"),
            raw: &[],
            description: "Press keys in the focused element: Enter to submit, Escape, Tab, arrows, chords like Control+a.",
            example: json!({"keys": "Enter"}),
            run: send_keys,
        },
        tool! {
            name: "browser_switch_tab",
            args: Tab,
            summary: Some("tab_id"),
            raw: &[],
            description: "Make another tab the active one.",
            example: json!({"tab_id": 2}),
            run: switch_tab,
        },
        tool! {
            name: "browser_close_tab",
            args: Tab,
            summary: Some("tab_id"),
            raw: &[],
            description: "Close a tab.",
            example: json!({"tab_id": 2}),
            run: close_tab,
        },
        tool! {
            name: "browser_scroll_down",
            args: Amount,
            summary: Some("amount"),
            raw: &[],
            description: "Scroll the page down (by a screen, or by amount pixels); with index, scroll that scrollable box instead (a list, a terms box).",
            example: json!({"amount": 600}),
            run: scroll_down,
        },
        tool! {
            name: "browser_scroll_up",
            args: Amount,
            summary: Some("amount"),
            raw: &[],
            description: "Scroll the page up (by a screen, or by amount pixels); with index, scroll that scrollable box instead.",
            example: json!({"amount": 600}),
            run: scroll_up,
        },
        tool! {
            name: "browser_read_page",
            args: Nothing,
            summary: None,
            raw: &[],
            description: "Read the whole page, not just what is in view: every element and line of text (up to a cap) comes in the next message.",
            example: json!({}),
            run: read_page,
        },
        tool! {
            name: "browser_hover_element",
            args: Index,
            summary: Some("index"),
            raw: &[],
            description: "Move the mouse over an element, for menus that open on hover.",
            example: json!({"index": 3}),
            run: hover_element,
        },
        tool! {
            name: "browser_handle_dialog",
            args: DialogAnswer,
            summary: None,
            raw: &[],
            description: "Answer the dialog the page shows (alert, confirm, prompt, or asking before it is left): accept (OK) or not (Cancel), with text for a prompt. The page cannot be used until it is answered.",
            example: json!({"accept": true}),
            run: handle_dialog,
        },
        tool! {
            name: "browser_scroll_to_text",
            args: Text,
            summary: Some("text"),
            raw: &[],
            description: "Scroll until a visible text is in view.",
            example: json!({"text": "Pricing"}),
            run: scroll_to_text,
        },
        tool! {
            name: "browser_get_dropdown_options",
            args: Index,
            summary: Some("index"),
            raw: &[],
            description: "List the options of a native <select> element.",
            example: json!({"index": 7}),
            run: get_dropdown_options,
        },
        tool! {
            name: "browser_select_dropdown_option",
            args: IndexOption,
            summary: Some("text"),
            raw: &[],
            description: "Pick an option of a native <select> by its visible text (in a select that takes several, it is added; deselect removes it).",
            example: json!({"index": 7, "text": "Germany"}),
            run: select_dropdown_option,
        },
        tool! {
            name: "browser_drag_drop",
            args: Drag,
            summary: None,
            raw: &[],
            description: "Drag an element (or a point) and drop it on another element (or point).",
            example: json!({"source_index": 4, "target_index": 9}),
            run: drag_drop,
        },
    ]
}
