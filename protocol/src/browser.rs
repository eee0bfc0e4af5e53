//! Browser wire types: the Suna action set and the browser state every action returns.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default viewport of the daemon's browser.
pub const DEFAULT_VIEWPORT: Viewport = Viewport {
    width: 1280,
    height: 720,
};
/// Default cap on the `elements` text, in characters.
pub const DEFAULT_ELEMENTS_CAP: usize = 12_000;
/// Longest `wait` action.
pub const MAX_WAIT_SECS: f64 = 30.0;

fn default_true() -> bool {
    true
}

/// Size of the browser viewport in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
}

/// One open tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TabInfo {
    /// Small integer naming the tab for `switch_tab` and `close_tab`; never reused.
    pub tab_id: u32,
    pub url: String,
    pub title: String,
    /// The tab actions apply to.
    pub active: bool,
}

/// A screenshot of the viewport.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Screenshot {
    /// `image/jpeg`.
    pub mime: String,
    pub base64: String,
    pub width: u32,
    pub height: u32,
}

/// One option of a native `<select>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DropdownOption {
    /// Position among the select's options, from 0.
    pub index: u32,
    pub text: String,
    pub value: String,
    pub selected: bool,
}

/// What the browser shows now. Every browser action answers with one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BrowserState {
    pub url: String,
    pub title: String,
    pub tabs: Vec<TabInfo>,
    /// The snapshot the indices in `elements` belong to.
    pub snapshot_id: u64,
    /// The page as a model reads it: its words in reading order with each control as
    /// `[index]<tag attrs>name` (alone on its line, or inside its sentence closed by
    /// `</tag>`); the viewport and a margin around it, with one line summing up what lies
    /// above and below (everything with `full=true`).
    pub elements: String,
    /// Controls the snapshot indexed (those read, shown or cut by the cap); controls in
    /// parts of the page wholly out of view are only counted in the summary lines.
    pub element_count: u64,
    /// `elements` does not hold the whole page: the cap cut it, or parts of the page are
    /// summed up rather than listed.
    pub truncated: bool,
    /// How far the page is scrolled down.
    pub pixels_above: u64,
    /// How much of the page lies below the viewport.
    pub pixels_below: u64,
    pub viewport: Viewport,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<Screenshot>,
    /// The page's visible text, when asked for with `content=true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// What the action did, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The options `get_dropdown_options` found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropdown_options: Option<Vec<DropdownOption>>,
    /// Something the caller should know, such as the browser having been relaunched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// The JavaScript dialog the active tab has open: until it is answered
    /// (`handle_dialog`) the page's scripts wait, and the page cannot be read or used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<DialogInfo>,
}

/// A JavaScript dialog a page opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DialogInfo {
    /// `alert`, `confirm`, `prompt` or `beforeunload` (the page asks before it is left).
    pub kind: String,
    pub message: String,
    /// A prompt's text as the page filled it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_text: Option<String>,
    /// Seconds until it is dismissed by itself (Cancel; an alert's OK), so that no page can
    /// hold the browser.
    pub dismissed_in_secs: u64,
}

/// Query of every browser route: what the returned state carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateQuery {
    /// Include a JPEG screenshot of the viewport.
    #[serde(default = "default_true")]
    pub screenshot: bool,
    /// Include the page's visible text.
    #[serde(default)]
    pub content: bool,
    /// List the whole page in `elements` (up to its cap), not just the viewport and what
    /// lies around it.
    #[serde(default)]
    pub full: bool,
}

impl Default for StateQuery {
    fn default() -> Self {
        StateQuery {
            screenshot: true,
            content: false,
            full: false,
        }
    }
}

impl StateQuery {
    /// No screenshot, no content: the cheapest state.
    pub fn lean() -> Self {
        StateQuery {
            screenshot: false,
            content: false,
            full: false,
        }
    }
}

/// A browser action: its route is `POST /v1/browser/{NAME}`.
pub trait BrowserAction: Serialize {
    /// The action's name, as in its route.
    const NAME: &'static str;
}

macro_rules! action {
    ($ty:ident, $name:literal) => {
        impl BrowserAction for $ty {
            const NAME: &'static str = $name;
        }
    };
}

/// `navigate_to`: load a URL in the active tab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NavigateTo {
    pub url: String,
}
action!(NavigateTo, "navigate_to");

/// `go_back`: the previous page of the active tab's history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoBack {}
action!(GoBack, "go_back");

/// `wait`: let the page work for a while (at most 30 s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Wait {
    #[serde(default = "default_wait")]
    pub seconds: f64,
}
action!(Wait, "wait");

fn default_wait() -> f64 {
    1.0
}

/// `click_element`: a real mouse click at the element's centre.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClickElement {
    /// Index from the `elements` text.
    pub index: u32,
    /// Snapshot the index comes from; the latest when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<u64>,
}
action!(ClickElement, "click_element");

/// `click_coordinates`: a real mouse click at a viewport point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClickCoordinates {
    pub x: f64,
    pub y: f64,
}
action!(ClickCoordinates, "click_coordinates");

/// `input_text`: replace an input's, textarea's or editable element's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputText {
    pub index: u32,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<u64>,
}
action!(InputText, "input_text");

/// `send_keys`: key presses to the focused element, e.g. `Enter`, `Control+a`,
/// `Shift+Tab`, or plain text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendKeys {
    pub keys: String,
}
action!(SendKeys, "send_keys");

/// `switch_tab`: make a tab the active one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchTab {
    pub tab_id: u32,
}
action!(SwitchTab, "switch_tab");

/// `close_tab`: close a tab (the last one is replaced by a blank tab).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseTab {
    pub tab_id: u32,
}
action!(CloseTab, "close_tab");

/// `scroll_down`: scroll the page down by `amount` pixels (a viewport when absent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScrollDown {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<u32>,
    /// Scroll this element (a scrollable box listed in the state, or the box around it)
    /// instead of the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<u64>,
}
action!(ScrollDown, "scroll_down");

/// `scroll_up`: scroll the page up by `amount` pixels (a viewport when absent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScrollUp {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<u32>,
    /// Scroll this element (a scrollable box listed in the state, or the box around it)
    /// instead of the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<u64>,
}
action!(ScrollUp, "scroll_up");

/// `scroll_to_text`: bring the first visible occurrence of a text into view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScrollToText {
    pub text: String,
}
action!(ScrollToText, "scroll_to_text");

/// `get_dropdown_options`: the options of a native `<select>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetDropdownOptions {
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<u64>,
}
action!(GetDropdownOptions, "get_dropdown_options");

/// `select_dropdown_option`: pick an option of a native `<select>` by its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectDropdownOption {
    pub index: u32,
    /// The option's visible text (or, failing that, its value). In a `multiple` select it is
    /// added to the options already selected.
    pub text: String,
    /// Unselect the option instead (a `multiple` select).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deselect: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<u64>,
}
action!(SelectDropdownOption, "select_dropdown_option");

/// `hover_element`: move the mouse over an element (a menu that opens on hover).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HoverElement {
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<u64>,
}
action!(HoverElement, "hover_element");

/// `handle_dialog`: answer the JavaScript dialog the active tab has open: accept (OK, or
/// leave the page) or dismiss (Cancel, or stay), with the text a prompt asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandleDialog {
    pub accept: bool,
    /// A prompt's answer (its default text when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}
action!(HandleDialog, "handle_dialog");

/// `drag_drop`: press on the source, move, release on the target. Each end is an element
/// index or a viewport point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DragDrop {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_x: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_y: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_x: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_y: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<u64>,
}
action!(DragDrop, "drag_drop");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_query_defaults_to_a_screenshot_without_content() {
        let q: StateQuery = serde_json::from_str("{}").unwrap();
        assert_eq!(q, StateQuery::default());
        assert!(q.screenshot && !q.content);
    }

    #[test]
    fn optional_fields_stay_off_the_wire() {
        let body = serde_json::to_string(&ClickElement {
            index: 3,
            snapshot_id: None,
        })
        .unwrap();
        assert_eq!(body, r#"{"index":3}"#);
        let wait: Wait = serde_json::from_str("{}").unwrap();
        assert_eq!(wait.seconds, 1.0);
        assert_eq!(<DragDrop as BrowserAction>::NAME, "drag_drop");
    }
}
