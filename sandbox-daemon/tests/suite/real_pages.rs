//! The browser state on pages written by others: Python's documentation (Debian's
//! python3-doc) and Swagger UI (npm's swagger-ui-dist, a React app calling a live API).
//! Each test asserts on the text an agent needs to act: the paragraph after a heading, a
//! table's row, the response after a click.

use cove_harness::browser_text::index_of;
use cove_harness::real_site::{RealSite, real_site};
use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::browser::{
    BrowserAction, BrowserState, ClickElement, InputText, NavigateTo, ScrollToText, StateQuery,
};
use cove_protocol::client::CovedClient;

async fn setup() -> (DaemonProcess, RealSite) {
    cove_harness::viewer::chromium_path();
    let daemon = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts");
    (daemon, real_site().await)
}

async fn act<A: BrowserAction>(c: &CovedClient, action: &A) -> BrowserState {
    c.browser(action, StateQuery::lean())
        .await
        .unwrap_or_else(|e| panic!("{} failed: {e}", A::NAME))
}

/// The first control whose description holds `needle`.
fn index_in(state: &BrowserState, needle: &str) -> u32 {
    index_of(&state.elements, needle)
        .unwrap_or_else(|| panic!("no control with {needle:?} in:\n{}", state.elements))
}

async fn click(c: &CovedClient, state: &BrowserState, needle: &str) -> BrowserState {
    act(
        c,
        &ClickElement {
            index: index_in(state, needle),
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await
}

fn has(state: &BrowserState, text: &str) {
    assert!(
        state.elements.contains(text),
        "{text:?} missing from:\n{}",
        state.elements
    );
}

#[tokio::test]
async fn a_documentation_page_reads_as_its_words_with_links_in_their_sentences() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = act(
        c,
        &NavigateTo {
            url: site.url("python/library/os.html"),
        },
    )
    .await;
    // The module's introduction, whole, under its heading, with its links where they stand.
    let heading = state
        .elements
        .lines()
        .find(|l| l.contains("Miscellaneous operating system interfaces") && l.starts_with("# "));
    assert!(heading.is_some(), "{}", state.elements);
    has(
        &state,
        "This module provides a portable way of using operating system dependent functionality.",
    );
    has(
        &state,
        "]<a>open()</a>, if you want to manipulate paths, see the",
    );
    // Viewport first: the rest of the page is one line naming its sections.
    assert!(state.elements.len() <= 4_500, "{}", state.elements.len());
    let last = state.elements.lines().last().unwrap();
    assert!(
        last.starts_with("[below: ") && last.contains("Process Parameters"),
        "{last}"
    );

    // The paragraph after a heading further down.
    let there = act(
        c,
        &ScrollToText {
            text: "These functions and data items provide information".into(),
        },
    )
    .await;
    has(&there, "# Process Parameters");
    has(
        &there,
        "These functions and data items provide information and operate on the current process and user.",
    );
}

#[tokio::test]
async fn a_table_reads_row_by_row() {
    let (d, site) = setup().await;
    let c = &d.client;
    act(
        c,
        &NavigateTo {
            url: site.url("python/library/stdtypes.html"),
        },
    )
    .await;
    let state = act(
        c,
        &ScrollToText {
            text: "if x is false, then y, else".into(),
        },
    )
    .await;
    has(&state, "Operation | Result | Notes");
    has(&state, "x or y | if x is false, then y, else x | (1)");
}

#[tokio::test]
async fn a_react_app_shows_the_response_of_the_call_it_made() {
    let (d, site) = setup().await;
    let c = &d.client;
    // The app renders after it fetched the API description: the state waits for it.
    let state = act(
        c,
        &NavigateTo {
            url: site.url("swagger/index.html"),
        },
    )
    .await;
    has(&state, "Pet Shop");
    has(&state, "List all pets");
    let open = click(c, &state, "List all pets").await;
    let trying = click(c, &open, "Try it out").await;
    let limit = index_in(&trying, "limit");
    let filled = act(
        c,
        &InputText {
            index: limit,
            text: "2".into(),
            snapshot_id: Some(trying.snapshot_id),
        },
    )
    .await;
    let executed = click(c, &filled, "Execute").await;
    has(&executed, "curl -X 'GET' \\");
    // The response lies below, as a person would scroll to it.
    let answered = act(
        c,
        &ScrollToText {
            text: "Response body".into(),
        },
    )
    .await;
    // The highlighted JSON reads as JSON, not as tokens spaced apart.
    has(&answered, "\"name\": \"Rex\"");
    has(&answered, "\"name\": \"Tom\"");
    assert!(
        !answered.elements.contains("\"Nemo\""),
        "limit=2 was sent:\n{}",
        answered.elements
    );
}
