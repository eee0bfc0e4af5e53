//! Browser endpoints against real Chromium on the fixture site. Each action is checked by
//! what the page itself reported (clicks, values, scroll offsets, drops), not just a 200.

mod actions;
mod failures;
mod reading;

use std::time::Duration;

use base64::Engine;
use cove_harness::{DaemonBuilder, DaemonProcess, FixtureSite, procs};
use cove_protocol::ErrorCode;
use cove_protocol::browser::{
    BrowserAction, BrowserState, ClickCoordinates, ClickElement, CloseTab, DragDrop,
    GetDropdownOptions, GoBack, HoverElement, InputText, NavigateTo, ScrollDown, ScrollToText,
    ScrollUp, SelectDropdownOption, SendKeys, StateQuery, SwitchTab, Wait,
};
use cove_protocol::client::{ClientError, CovedClient};
use cove_protocol::files::ReadRequest;
use cove_protocol::shell::ExecRequest;
use serde_json::{Value, json};

/// The browser tests need Chromium; say so loudly rather than skip.
fn require_chromium() {
    cove_harness::viewer::chromium_path();
}

async fn setup() -> (DaemonProcess, FixtureSite) {
    require_chromium();
    let daemon = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts");
    let site = FixtureSite::start().await.expect("fixture site starts");
    (daemon, site)
}

const LEAN: StateQuery = StateQuery {
    screenshot: false,
    content: false,
    full: false,
};

async fn open(c: &CovedClient, site: &FixtureSite, page: &str) -> BrowserState {
    c.browser(
        &NavigateTo {
            url: site.url(page),
        },
        LEAN,
    )
    .await
    .unwrap_or_else(|e| panic!("navigate to {page}: {e}"))
}

/// The index of the first element line containing `needle`.
fn index_of(state: &BrowserState, needle: &str) -> u32 {
    find_index(state, needle)
        .unwrap_or_else(|| panic!("no element with {needle:?} in:\n{}", state.elements))
}

fn find_index(state: &BrowserState, needle: &str) -> Option<u32> {
    cove_harness::browser_text::index_of(&state.elements, needle)
}

async fn click(c: &CovedClient, state: &BrowserState, needle: &str) -> BrowserState {
    c.browser(
        &ClickElement {
            index: index_of(state, needle),
            snapshot_id: Some(state.snapshot_id),
        },
        LEAN,
    )
    .await
    .unwrap_or_else(|e| panic!("click {needle}: {e}"))
}

/// The state a browser action answers with (it must succeed).
async fn act<A: BrowserAction>(c: &CovedClient, action: &A) -> BrowserState {
    c.browser(action, LEAN)
        .await
        .unwrap_or_else(|e| panic!("{} failed: {e}", A::NAME))
}

/// The error a browser action answers with (it must fail).
async fn refused<A: BrowserAction>(c: &CovedClient, action: &A) -> ClientError {
    match c.browser(action, LEAN).await {
        Ok(state) => panic!("{} succeeded: {:?}", A::NAME, state.message),
        Err(e) => e,
    }
}

async fn report(site: &FixtureSite, key: &str) -> Value {
    site.wait_for_report(|r| r.get(key).is_some())
        .await
        .unwrap_or_else(|| {
            panic!(
                "the page never reported {key:?}; reports: {:?}",
                site.reports()
            )
        })[key]
        .clone()
}

#[test]
fn chromium_is_installed() {
    require_chromium();
}
