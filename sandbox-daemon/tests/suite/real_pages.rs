//! The browser state on pages written by others: Python's documentation (Debian's
//! python3-doc), Swagger UI (npm's swagger-ui-dist, a React app calling a live API) and
//! jQuery UI's widget demos (Debian's libjs-jquery-ui-docs).
//! Each test asserts on the text an agent needs to act: the paragraph after a heading, a
//! table's row, the response after a click.

use cove_harness::browser_text::{controls, index_of};
use cove_harness::real_site::{RealSite, real_site};
use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::browser::{
    BrowserAction, BrowserState, ClickElement, InputText, NavigateTo, ScrollToText, StateQuery,
    Wait,
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

async fn type_into(
    c: &CovedClient,
    state: &BrowserState,
    needle: &str,
    text: &str,
) -> BrowserState {
    act(
        c,
        &InputText {
            index: index_in(state, needle),
            text: text.into(),
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await
}

/// A jQuery UI demo, once it shows itself: the demos hide the page until RequireJS has run
/// their script, which it may do from a timer after the load event (a page's own timers are
/// not waited for, and the reveal is a class change on `<html>`, not new content).
async fn open_demo(c: &CovedClient, site: &RealSite, path: &str) -> BrowserState {
    act(
        c,
        &NavigateTo {
            url: site.url(path),
        },
    )
    .await;
    act(c, &Wait { seconds: 0.5 }).await
}

/// The description of the control whose description holds `needle`.
fn control(state: &BrowserState, needle: &str) -> String {
    let index = index_in(state, needle);
    controls(&state.elements)
        .into_iter()
        .find_map(|(i, desc)| (i == index).then_some(desc))
        .unwrap_or_default()
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

#[tokio::test]
async fn a_modal_form_says_what_is_wrong_and_takes_the_corrected_entry() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open_demo(c, &site, "jquery-ui/dialog/modal-form.html").await;
    has(&state, "John Doe | john.doe@example.com | johndoe1");
    let state = click(c, &state, "Create new user").await;

    // The dialog's fields, by their labels, with the values the page filled in.
    has(&state, "All form fields are required.");
    assert!(control(&state, "Email").contains(r#"value="jane@smith.com""#));
    assert!(control(&state, "Name").contains(r#"value="Jane Smith""#));
    // Behind the modal, the page's own button is out of reach: not offered.
    assert!(
        controls(&state.elements)
            .iter()
            .all(|(_, desc)| !desc.contains("Create new user")),
        "{}",
        state.elements
    );
    // Nothing lies above the page's top to scroll to (the form's hidden submit button is
    // placed there).
    assert!(!state.elements.contains("[above:"), "{}", state.elements);

    let state = type_into(c, &state, "Email", "x").await;
    let state = click(c, &state, "Create an account").await;
    has(&state, "Length of email must be between 6 and 80.");

    let state = type_into(c, &state, "Email", "ann@example.org").await;
    let state = type_into(c, &state, "Name", "Ann").await;
    let state = click(c, &state, "Create an account").await;
    has(&state, "Ann | ann@example.org | xxxxxxx");
    assert!(
        !state.elements.contains("Length of email"),
        "{}",
        state.elements
    );
}

#[tokio::test]
async fn styled_radios_and_select_menus_show_their_labels_and_state() {
    let (d, site) = setup().await;
    let c = &d.client;
    // jQuery UI hides the native radios and styles their labels in their place.
    let state = open_demo(c, &site, "jquery-ui/checkboxradio/default.html").await;
    has(&state, r#"<label type="radio" name="radio-1">New York"#);
    let state = click(c, &state, "Paris").await;
    assert!(
        control(&state, "Paris").contains("checked"),
        "{}",
        state.elements
    );
    assert!(!control(&state, "New York").contains("checked"));

    // A select replaced by a button and a list of options.
    let state = open_demo(c, &site, "jquery-ui/selectmenu/default.html").await;
    let state = click(c, &state, ">Medium").await;
    assert!(control(&state, ">Medium").contains(r#"aria-expanded="true""#));
    has(&state, r#"<div role="option">Faster"#);
    let state = click(c, &state, r#"role="option">Fast"#).await;
    assert!(
        control(&state, "combobox").contains(r#"aria-expanded="false">Fast"#),
        "{}",
        state.elements
    );
}

#[tokio::test]
async fn a_date_picker_and_an_autocomplete_are_driven_by_clicks() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open_demo(c, &site, "jquery-ui/datepicker/default.html").await;
    let state = click(c, &state, "<input").await;
    // The calendar reads as a table; its days are links without an address to show.
    has(&state, "Su | Mo | Tu | We | Th | Fr | Sa");
    assert!(
        !control(&state, ">15").contains("href"),
        "{}",
        state.elements
    );
    let state = click(c, &state, "<a>15").await;
    assert!(
        control(&state, "<input").contains("/15/"),
        "{}",
        state.elements
    );

    // Suggestions come 300 ms after typing (the widget's own delay): a wait shows them.
    let state = open_demo(c, &site, "jquery-ui/autocomplete/default.html").await;
    type_into(c, &state, "Tags:", "ja").await;
    let state = act(c, &Wait { seconds: 0.6 }).await;
    has(&state, "<li>Java");
    // The list is not one control: its items are.
    assert!(!state.elements.contains("<ul>"), "{}", state.elements);
    let state = click(c, &state, "<li>JavaScript").await;
    assert!(control(&state, "Tags:").contains(r#"value="JavaScript""#));
}
