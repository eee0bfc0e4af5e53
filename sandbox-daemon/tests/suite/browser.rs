//! Browser endpoints against real Chromium on the fixture site. Each action is checked by
//! what the page itself reported (clicks, values, scroll offsets, drops), not just a 200.

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

#[tokio::test]
async fn state_lists_visible_interactive_elements_with_context() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = c
        .browser(
            &NavigateTo {
                url: site.url("counter.html"),
            },
            StateQuery::default(),
        )
        .await
        .unwrap();
    assert_eq!(state.title, "Counter");
    assert_eq!(state.url, site.url("counter.html"));
    assert_eq!((state.viewport.width, state.viewport.height), (1280, 720));
    assert_eq!(state.tabs.len(), 1);
    assert!(state.tabs[0].active);
    let e = &state.elements;
    for wanted in [
        "<button>Increment",
        "Listener div",
        "Pointer div",
        "role=\"button\"",
        "contenteditable",
        "Click pad",
    ] {
        assert!(e.contains(wanted), "{wanted:?} missing from:\n{e}");
    }
    for hidden in ["Hidden by", "Inside display none", "Zero size"] {
        assert!(!e.contains(hidden), "{hidden:?} should be hidden:\n{e}");
    }
    assert_eq!(
        e.matches("Pointer div").count(),
        1,
        "a pointer container's child is not listed again"
    );
    assert!(e.contains("count: 0"), "context text: {e}");
    assert!(e.lines().all(|l| l.len() <= 300), "lines are short");
    assert_eq!(
        state.element_count as usize,
        cove_harness::browser_text::controls(e).len()
    );
    let shot = state.screenshot.as_ref().expect("a screenshot by default");
    assert_eq!(
        (shot.mime.as_str(), shot.width, shot.height),
        ("image/jpeg", 1280, 720)
    );
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(&shot.base64)
        .unwrap();
    assert_eq!(&jpeg[..3], b"\xff\xd8\xff");

    // Reading the state again takes a new snapshot without acting.
    let again = c.browser_state(LEAN).await.unwrap();
    assert!(again.snapshot_id > state.snapshot_id);
    assert!(again.screenshot.is_none());
    let raw = c.screenshot().await.unwrap();
    assert_eq!(&raw[..3], b"\xff\xd8\xff");
    let with_content = c
        .browser_state(StateQuery {
            content: true,
            ..LEAN
        })
        .await
        .unwrap();
    assert!(with_content.content.unwrap().contains("Counter"));
}

#[tokio::test]
async fn click_element_and_click_coordinates_reach_the_page() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "counter.html").await;
    let after = click(c, &state, "Increment").await;
    let after = click(c, &after, "Increment").await;
    assert_eq!(report(&site, "clicks").await, json!(2));
    assert!(after.elements.contains("count: 2"), "{}", after.elements);
    assert!(after.message.as_deref().unwrap().starts_with("Clicked ["));
    click(c, &after, "Listener div").await;
    assert_eq!(report(&site, "listener").await, json!(true));
    click(c, &after, "ARIA button").await;
    assert_eq!(report(&site, "aria").await, json!(true));

    act(c, &ClickCoordinates { x: 700.0, y: 350.0 }).await;
    assert_eq!(report(&site, "pad").await, json!([700, 350]));
    let outside = refused(c, &ClickCoordinates { x: 5000.0, y: 10.0 }).await;
    assert_eq!(outside.code(), Some(&ErrorCode::InvalidRequest));
}

#[tokio::test]
async fn input_text_fills_every_kind_of_field() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "form.html").await;
    assert!(
        !state.elements.contains("hidden"),
        "hidden inputs are not listed"
    );
    let cases = [
        ("name=\"text\"", "plain text", "text"),
        ("name=\"password\"", "s3cret!", "password"),
        ("name=\"email\"", "a@b.example", "email"),
        ("name=\"number\"", "42", "number"),
        ("name=\"search\"", "find me", "search"),
        ("name=\"tel\"", "+1 555 0100", "tel"),
        ("name=\"url\"", "https://example.com/", "url"),
        ("name=\"date\"", "2024-05-06", "date"),
        ("name=\"time\"", "13:45", "time"),
        ("name=\"datetime\"", "2024-05-06T13:45", "datetime"),
        ("name=\"month\"", "2024-05", "month"),
        ("name=\"week\"", "2024-W19", "week"),
        ("name=\"range\"", "73", "range"),
        ("name=\"color\"", "#ff8800", "color"),
        ("name=\"notes\"", "new notes\nsecond line", "notes"),
    ];
    let mut state = state;
    for (needle, text, name) in cases {
        state = c
            .browser(
                &InputText {
                    index: index_of(&state, needle),
                    text: text.into(),
                    snapshot_id: Some(state.snapshot_id),
                },
                LEAN,
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let seen = site
            .wait_for_report(|r| r["name"] == name && r["event"] == "change")
            .await
            .unwrap_or_else(|| panic!("no change report for {name}: {:?}", site.reports()));
        assert_eq!(seen["value"], json!(text), "{name}");
    }
    assert!(
        state.elements.contains("value=\"••••\""),
        "passwords are masked: {}",
        state.elements
    );
    // Checkboxes and radios are clicked, not typed into.
    let wrong = refused(
        c,
        &InputText {
            index: index_of(&state, "name=\"agree\""),
            text: "yes".into(),
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await;
    assert_eq!(wrong.code(), Some(&ErrorCode::WrongElementKind));
    let state = click(c, &state, "name=\"agree\"").await;
    assert!(
        site.wait_for_report(|r| r["name"] == "agree" && r["value"] == true)
            .await
            .is_some()
    );
    assert!(
        state.elements.contains("name=\"agree\" checked"),
        "{}",
        state.elements
    );
    let state = click(c, &state, "value=\"large\"").await;
    assert!(
        site.wait_for_report(|r| r["name"] == "size" && r["value"] == true)
            .await
            .is_some()
    );
    click(c, &state, "<button>Submit").await;
    let submitted = report(&site, "submitted").await;
    let submitted = submitted.as_str().unwrap();
    for part in [
        "text=plain+text",
        "number=42",
        "agree=on",
        "size=large",
        "date=2024-05-06",
        "range=73",
    ] {
        assert!(submitted.contains(part), "{part} missing from {submitted}");
    }
    // Emptying a field works too.
    let state = c.browser_state(LEAN).await.unwrap();
    act(
        c,
        &InputText {
            index: index_of(&state, "name=\"text\""),
            text: String::new(),
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await;
    assert!(
        site.wait_for_report(|r| r["name"] == "text" && r["value"] == "")
            .await
            .is_some()
    );
}

#[tokio::test]
async fn send_keys_types_and_presses_chords() {
    let (d, site) = setup().await;
    let c = &d.client;
    open(c, &site, "keys.html").await;
    act(
        c,
        &SendKeys {
            keys: "hello world".into(),
        },
    )
    .await;
    act(
        c,
        &SendKeys {
            keys: "Enter".into(),
        },
    )
    .await;
    assert_eq!(report(&site, "submitted").await, json!("hello world"));
    act(
        c,
        &SendKeys {
            keys: "Control+a".into(),
        },
    )
    .await;
    assert!(
        site.wait_for_report(|r| r["key"] == "a" && r["ctrl"] == true)
            .await
            .is_some()
    );
    act(
        c,
        &SendKeys {
            keys: "Backspace".into(),
        },
    )
    .await;
    act(
        c,
        &SendKeys {
            keys: "Enter".into(),
        },
    )
    .await;
    assert!(
        site.wait_for_report(|r| r["submitted"] == "")
            .await
            .is_some(),
        "Control+a then Backspace cleared the field: {:?}",
        site.reports()
    );
    act(
        c,
        &SendKeys {
            keys: "Shift+Tab".into(),
        },
    )
    .await;
    assert!(
        site.wait_for_report(|r| r["key"] == "Tab" && r["shift"] == true)
            .await
            .is_some()
    );
    let empty = refused(
        c,
        &SendKeys {
            keys: String::new(),
        },
    )
    .await;
    assert_eq!(empty.code(), Some(&ErrorCode::InvalidRequest));
}

#[tokio::test]
async fn native_selects_list_and_pick_options() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "select.html").await;
    let select = index_of(&state, "name=\"fruit\"");
    let listed = act(
        c,
        &GetDropdownOptions {
            index: select,
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await;
    let options = listed.dropdown_options.unwrap();
    let texts: Vec<_> = options.iter().map(|o| o.text.as_str()).collect();
    assert_eq!(texts, ["Apple", "Banana", "Cherry pie", "Durian"]);
    assert!(options[0].selected);
    assert_eq!(options[2].value, "c");
    let pick = |text: &str, sid| SelectDropdownOption {
        index: select,
        text: text.into(),
        deselect: false,
        snapshot_id: Some(sid),
    };
    let after = act(c, &pick("Cherry pie", listed.snapshot_id)).await;
    assert_eq!(report(&site, "fruit").await, json!("c"));
    assert!(
        after.elements.contains("value=\"Cherry pie\""),
        "{}",
        after.elements
    );
    let missing = refused(c, &pick("Mango", after.snapshot_id)).await;
    assert_eq!(missing.code(), Some(&ErrorCode::NoMatch));
    assert!(
        missing.to_string().contains("Banana"),
        "names the options: {missing}"
    );
    let disabled = refused(c, &pick("Durian", after.snapshot_id)).await;
    assert_eq!(disabled.code(), Some(&ErrorCode::WrongElementKind));
    let custom = refused(
        c,
        &GetDropdownOptions {
            index: index_of(&after, "Custom list"),
            snapshot_id: Some(after.snapshot_id),
        },
    )
    .await;
    assert_eq!(custom.code(), Some(&ErrorCode::WrongElementKind));
}

#[tokio::test]
async fn scrolling_moves_the_page_and_the_offsets_are_right() {
    let (d, site) = setup().await;
    let c = &d.client;
    let top = open(c, &site, "long.html").await;
    assert_eq!(top.pixels_above, 0);
    assert!(top.pixels_below > 3000, "{}", top.pixels_below);
    let total = top.pixels_above + top.pixels_below + 720;
    let down = act(c, &ScrollDown::default()).await;
    assert_eq!(down.pixels_above, 720);
    assert_eq!(report(&site, "scrollY").await, json!(720));
    let more = act(
        c,
        &ScrollDown {
            amount: Some(100),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(more.pixels_above, 820);
    let up = act(
        c,
        &ScrollUp {
            amount: Some(300),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(up.pixels_above, 520);
    assert_eq!(up.pixels_above + up.pixels_below + 720, total);
    assert!(
        site.wait_for_report(|r| r["scrollY"] == 520)
            .await
            .is_some()
    );
    let found = act(
        c,
        &ScrollToText {
            text: "hidden TREASURE".into(),
        },
    )
    .await;
    assert!(found.pixels_above > 3000, "{}", found.pixels_above);
    assert!(
        find_index(&found, "Bottom button").is_some(),
        "the text's surroundings are now in view"
    );
    let first_line = found
        .elements
        .lines()
        .position(|l| l.contains("The hidden treasure"));
    let below = found
        .elements
        .lines()
        .position(|l| l == "[below the viewport]");
    assert!(
        first_line.is_some() && below.is_none_or(|b| first_line < Some(b)),
        "{}",
        found.elements
    );
    assert!(
        site.wait_for_report(|r| r["scrollY"] == json!(found.pixels_above))
            .await
            .is_some()
    );
    let missing = refused(
        c,
        &ScrollToText {
            text: "not on this page".into(),
        },
    )
    .await;
    assert_eq!(missing.code(), Some(&ErrorCode::NoMatch));
}

#[tokio::test]
async fn new_tabs_open_active_and_can_be_switched_and_closed() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "tabs.html").await;
    let opened = click(c, &state, "Open in a new tab").await;
    assert_eq!(opened.tabs.len(), 2, "{:?}", opened.tabs);
    let active: Vec<_> = opened.tabs.iter().filter(|t| t.active).collect();
    assert_eq!(active.len(), 1);
    assert!(
        active[0].url.ends_with("tab-target.html?via=link"),
        "{:?}",
        opened.tabs
    );
    assert_eq!(opened.title, "Target tab");
    assert_eq!(report(&site, "opened").await, json!("link"));
    let first = opened.tabs[0].tab_id;
    let back = act(c, &SwitchTab { tab_id: first }).await;
    assert_eq!(back.title, "Tabs");
    assert!(back.tabs.iter().find(|t| t.tab_id == first).unwrap().active);
    let popup = click(c, &back, "Open with window.open").await;
    assert_eq!(popup.tabs.len(), 3, "{:?}", popup.tabs);
    assert!(popup.url.ends_with("via=open"), "{}", popup.url);
    assert!(
        site.wait_for_report(|r| r["opened"] == "open")
            .await
            .is_some()
    );
    let newest = popup.tabs.iter().find(|t| t.active).unwrap().tab_id;
    let closed = act(c, &CloseTab { tab_id: newest }).await;
    assert_eq!(closed.tabs.len(), 2);
    assert!(closed.tabs.iter().all(|t| t.tab_id != newest));
    assert_eq!(closed.tabs.iter().filter(|t| t.active).count(), 1);
    let unknown = refused(c, &CloseTab { tab_id: 99 }).await;
    assert_eq!(unknown.code(), Some(&ErrorCode::NotFound));
    let unknown = refused(c, &SwitchTab { tab_id: 99 }).await;
    assert_eq!(unknown.code(), Some(&ErrorCode::NotFound));
    let mut last = closed;
    for tab in last.tabs.clone() {
        last = act(c, &CloseTab { tab_id: tab.tab_id }).await;
    }
    assert_eq!(
        last.tabs.len(),
        1,
        "closing the last tab leaves a blank one"
    );
    assert_eq!(last.url, "about:blank");
}

#[tokio::test]
async fn iframes_and_open_shadow_roots_are_covered() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "iframe.html").await;
    assert!(
        state.elements.contains("Inside the frame"),
        "{}",
        state.elements
    );
    let state = click(c, &state, "Inner button").await;
    assert_eq!(report(&site, "frame").await, json!("clicked"));
    act(
        c,
        &InputText {
            index: index_of(&state, "Inner input"),
            text: "typed in a frame".into(),
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await;
    assert_eq!(
        report(&site, "frame_input").await,
        json!("typed in a frame")
    );

    let state = open(c, &site, "shadow.html").await;
    assert!(state.elements.contains("Shadow text"), "{}", state.elements);
    assert!(
        !state.elements.contains("Closed root button"),
        "closed roots are out of reach"
    );
    let state = click(c, &state, "Shadow button").await;
    assert_eq!(report(&site, "shadow").await, json!("clicked"));
    act(
        c,
        &InputText {
            index: index_of(&state, "Nested shadow input"),
            text: "deep".into(),
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await;
    assert_eq!(report(&site, "nested").await, json!("deep"));
}

#[tokio::test]
async fn a_modal_hides_what_it_covers_until_closed() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "modal.html").await;
    assert!(
        state.elements.contains("Close dialog"),
        "{}",
        state.elements
    );
    for covered in ["Behind A", "Behind B", "[below: "] {
        assert!(
            !state.elements.contains(covered),
            "{covered} is covered:\n{}",
            state.elements
        );
    }
    let closed = click(c, &state, "Close dialog").await;
    assert_eq!(report(&site, "closed").await, json!(true));
    for visible in ["Behind A", "Behind B", "[below: 1 elements"] {
        assert!(
            closed.elements.contains(visible),
            "{visible}:\n{}",
            closed.elements
        );
    }
    // A full read lists what lies below too.
    let full = c
        .browser_state(StateQuery { full: true, ..LEAN })
        .await
        .unwrap();
    assert!(
        full.elements
            .contains("[below the viewport]\n[3]<button>Behind far below"),
        "{}",
        full.elements
    );
    click(c, &closed, "Behind B").await;
    assert_eq!(report(&site, "behind").await, json!("B"));
}

#[tokio::test]
async fn stale_indices_are_refused_with_the_fresh_state() {
    let (d, site) = setup().await;
    let c = &d.client;
    let before = open(c, &site, "stale.html").await;
    let target = index_of(&before, "<button>Target");
    let after = click(c, &before, "Remove target").await;
    assert_eq!(report(&site, "removed").await, json!(true));
    // The old snapshot's [target] is gone; something else now sits first on the page.
    assert!(
        find_index(&after, "Replacement").is_some(),
        "{}",
        after.elements
    );
    let err = refused(
        c,
        &ClickElement {
            index: target,
            snapshot_id: Some(before.snapshot_id),
        },
    )
    .await;
    assert_eq!(err.code(), Some(&ErrorCode::StaleElement), "{err}");
    let fresh = err
        .browser_state()
        .expect("the fresh state rides with the error");
    assert!(fresh.snapshot_id > after.snapshot_id);
    assert!(fresh.elements.contains("Replacement"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !site
            .reports()
            .iter()
            .any(|r| r.get("replacement").is_some() || r.get("target").is_some()),
        "nothing was clicked: {:?}",
        site.reports()
    );
    let err = refused(
        c,
        &ClickElement {
            index: 99,
            snapshot_id: Some(fresh.snapshot_id),
        },
    )
    .await;
    assert_eq!(err.code(), Some(&ErrorCode::ElementNotFound));
    assert!(err.browser_state().is_some());
    // A snapshot from before a navigation belongs to a page that is gone.
    let other = open(c, &site, "counter.html").await;
    let err = refused(
        c,
        &ClickElement {
            index: 1,
            snapshot_id: Some(fresh.snapshot_id),
        },
    )
    .await;
    assert_eq!(err.code(), Some(&ErrorCode::StaleElement));
    assert_eq!(err.browser_state().unwrap().title, other.title);
}

#[tokio::test]
async fn drag_and_drop_moves_items_between_zones_and_by_points() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "dragdrop.html").await;
    act(
        c,
        &DragDrop {
            source_index: Some(index_of(&state, ">Item")),
            target_index: Some(index_of(&state, "Zone B")),
            snapshot_id: Some(state.snapshot_id),
            ..DragDrop::default()
        },
    )
    .await;
    assert_eq!(report(&site, "dropped_in").await, json!("zoneB"));
    act(
        c,
        &DragDrop {
            source_x: Some(130.0),
            source_y: Some(430.0),
            target_x: Some(430.0),
            target_y: Some(530.0),
            ..DragDrop::default()
        },
    )
    .await;
    assert_eq!(report(&site, "box").await, json!([400, 500]));
    let half = refused(
        c,
        &DragDrop {
            source_x: Some(1.0),
            ..DragDrop::default()
        },
    )
    .await;
    assert_eq!(half.code(), Some(&ErrorCode::InvalidRequest));
}

#[tokio::test]
async fn go_back_and_wait() {
    let (d, site) = setup().await;
    let c = &d.client;
    let a = open(c, &site, "nav-a.html").await;
    let b = click(c, &a, "Go to B").await;
    assert_eq!(b.title, "Page B");
    let back = act(c, &GoBack {}).await;
    assert_eq!(back.title, "Page A");
    assert!(back.url.ends_with("nav-a.html"));
    let waited = act(c, &Wait { seconds: 0.2 }).await;
    assert_eq!(waited.title, "Page A");
    let too_long = refused(c, &Wait { seconds: 99.0 }).await;
    assert_eq!(too_long.code(), Some(&ErrorCode::InvalidRequest));
}

#[tokio::test]
async fn a_huge_page_is_capped_with_a_hint() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "huge.html").await;
    assert!(state.truncated);
    // Hundreds of controls fill the viewport itself: the text stops at the cap, says how
    // many in view it left out, and sums up the thousands below in one line.
    assert!(state.elements.len() <= 12_200, "{}", state.elements.len());
    let lines: Vec<&str> = state.elements.lines().collect();
    let (cut, last) = (lines[lines.len() - 2], lines[lines.len() - 1]);
    assert!(cut.ends_with("more elements in view not shown"), "{cut}");
    assert!(last.starts_with("[below: "), "{last}");
    assert!(last.contains("scroll down"), "{last}");
    let count = |line: &str, skip: usize| -> u64 {
        line[skip..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    // The controls in view, shown or cut, are the snapshot's; those below are counted.
    let shown = cove_harness::browser_text::controls(&state.elements).len() as u64;
    let cut_off = count(cut, "... ".len());
    assert_eq!(shown + cut_off, state.element_count);
    let below = count(last, "[below: ".len());
    assert!(
        shown + cut_off + below >= 10_000,
        "{shown} + {cut_off} + {below}"
    );
    // Indices past the cap still act on the right element.
    let past = shown + cut_off / 2;
    let clicked = act(
        c,
        &ClickElement {
            index: u32::try_from(past).unwrap(),
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await;
    let message = clicked.message.unwrap();
    let which = past - 1;
    assert!(
        message.contains(&format!("{which}")),
        "element {past} is button/link {which}: {message}"
    );
}

#[tokio::test]
async fn bad_navigation_is_an_error_not_a_page() {
    let (d, site) = setup().await;
    let c = &d.client;
    // A port nothing listens on (and that Chromium does not consider unsafe).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let conn_refused = refused(
        c,
        &NavigateTo {
            url: format!("http://{closed}/"),
        },
    )
    .await;
    assert_eq!(
        conn_refused.code(),
        Some(&ErrorCode::NavigationFailed),
        "{conn_refused}"
    );
    assert!(
        conn_refused.to_string().contains("ERR_CONNECTION_REFUSED"),
        "{conn_refused}"
    );
    let empty = refused(c, &NavigateTo { url: " ".into() }).await;
    assert_eq!(empty.code(), Some(&ErrorCode::InvalidRequest));
    let scheme = refused(
        c,
        &NavigateTo {
            url: "ftp://example.com/".into(),
        },
    )
    .await;
    assert_eq!(scheme.code(), Some(&ErrorCode::InvalidRequest));
    // file: is refused at once (it used to hang for the whole deadline), saying what to do.
    let file = refused(
        c,
        &NavigateTo {
            url: format!("file://{}", d.path("").display()),
        },
    )
    .await;
    assert_eq!(file.code(), Some(&ErrorCode::InvalidRequest));
    assert!(file.to_string().contains("http.server"), "{file}");
    // A missing page still loads: the server's 404 page is what a person would see.
    let missing = open(c, &site, "nope.html").await;
    assert_eq!(missing.title, "Not found");
}

#[tokio::test]
async fn a_hung_page_times_out_in_seconds_and_the_browser_recovers() {
    require_chromium();
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--browser-timeout-secs")
        .arg("3")
        .spawn()
        .await
        .unwrap();
    let site = FixtureSite::start().await.unwrap();
    let c = &d.client;
    let hung = refused(
        c,
        &NavigateTo {
            url: site.url("hang"),
        },
    )
    .await;
    assert_eq!(hung.code(), Some(&ErrorCode::Timeout), "{hung}");
    let fine = open(c, &site, "counter.html").await;
    assert_eq!(fine.title, "Counter");
}

fn chromium_main_pid(daemon_pid: i32) -> Option<i32> {
    let tree = procs::descendants(daemon_pid);
    tree.iter()
        .find(|p| p.ppid == daemon_pid && p.cmdline.contains("coved-chromium-"))
        .map(|p| p.pid)
}

#[tokio::test]
async fn a_dead_browser_is_relaunched_by_the_next_call() {
    let (d, site) = setup().await;
    let c = &d.client;
    open(c, &site, "counter.html").await;
    let pid = chromium_main_pid(d.pid()).expect("Chromium runs under coved");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let state = c.browser_state(LEAN).await.unwrap();
    let notice = state.notice.expect("the relaunch is announced");
    assert!(notice.contains("relaunched"), "{notice}");
    assert_eq!(state.url, "about:blank");
    let again = open(c, &site, "counter.html").await;
    assert!(again.notice.is_none(), "announced once");
    let new_pid = chromium_main_pid(d.pid()).unwrap();
    assert_ne!(new_pid, pid);
    // The old browser left nothing behind.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let zombies: Vec<_> = procs::descendants(d.pid())
        .into_iter()
        .filter(|p| p.is_zombie())
        .collect();
    assert!(zombies.is_empty(), "{zombies:?}");
}

#[tokio::test]
async fn shell_and_files_answer_while_a_browser_call_hangs() {
    let (d, site) = setup().await;
    let c = d.client.clone();
    let hang_url = site.url("hang");
    let browsing =
        tokio::spawn(async move { c.browser(&NavigateTo { url: hang_url }, LEAN).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c = &d.client;
    for i in 0..5 {
        let out = c
            .exec(&ExecRequest::new(format!("echo {i}")))
            .await
            .unwrap();
        assert_eq!(out.output, format!("{i}\n"));
    }
    std::fs::write(d.path("note.txt"), "still here").unwrap();
    let read = c.read(&ReadRequest::whole("note.txt")).await.unwrap();
    assert_eq!(read.content, "still here");
    assert!(
        !browsing.is_finished(),
        "the browser call is still waiting on the hung page"
    );
    browsing.abort();
}

#[tokio::test]
async fn malformed_browser_requests_are_refused() {
    let (d, _site) = setup().await;
    let http = reqwest::Client::new();
    for (path, body) in [
        ("/v1/browser/click_element", json!({})),
        ("/v1/browser/click_element", json!({"index": "one"})),
        ("/v1/browser/navigate_to", json!({"href": "x"})),
        ("/v1/browser/scroll_down", json!({"amount": -5})),
        (
            "/v1/browser/drag_drop",
            json!({"source_x": 1, "source_y": 2}),
        ),
    ] {
        let response = http
            .post(format!("{}{path}", d.url))
            .bearer_auth(&d.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{path} {body}");
        let envelope: cove_protocol::ErrorEnvelope = response.json().await.unwrap();
        assert_eq!(
            envelope.error.code,
            ErrorCode::InvalidRequest,
            "{path} {body}"
        );
    }
    let query = http
        .get(format!("{}/v1/browser/state?screenshot=maybe", d.url))
        .bearer_auth(&d.token)
        .send()
        .await
        .unwrap();
    assert_eq!(query.status(), 400);
}

#[tokio::test]
async fn chromium_dies_with_its_daemon_even_a_killed_one() {
    for signal in [rustix::process::Signal::TERM, rustix::process::Signal::KILL] {
        let (d, site) = setup().await;
        open(&d.client, &site, "counter.html").await;
        let main = chromium_main_pid(d.pid()).expect("Chromium runs under coved");
        let group: Vec<i32> = procs::all()
            .into_iter()
            .filter(|p| {
                p.cmdline.contains("--user-data-dir=")
                    && procs::descendants(main).iter().any(|c| c.pid == p.pid)
                    || p.pid == main
            })
            .map(|p| p.pid)
            .collect();
        assert!(group.len() > 1, "Chromium runs helper processes: {group:?}");
        d.signal(signal).unwrap();
        let mut alive = group.clone();
        for _ in 0..200 {
            alive.retain(|pid| procs::status_kib(*pid, "VmRSS").is_some());
            if alive.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            alive.is_empty(),
            "Chromium processes outlived a daemon stopped by {signal:?}: {alive:?}"
        );
    }
}

#[tokio::test]
async fn controls_carry_their_names_and_state_and_text_is_never_swallowed() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "widgets.html").await;
    let e = &state.elements;
    // A listener on the whole form does not make it one control: its words are all there.
    for text in [
        "## Order form",
        "Choose your colour. Fields marked * are required.",
        // Letters styled one by one read as the word.
        "Status: OK, ready.",
    ] {
        assert!(e.contains(text), "{text:?} missing from:\n{e}");
    }
    // Names from a wrapping label, a label[for], aria-labelledby and the words after an
    // unlabelled checkbox (said once).
    for control in [
        "<input type=\"radio\" name=\"colour\" value=\"blue\">Blue",
        "<input type=\"checkbox\">Wrap it as a gift",
        "<input type=\"number\" name=\"qty\" value=\"1\" required>Quantity *",
        "<textarea name=\"notes\">Delivery notes",
        "<select multiple options=\"Ham|Olives|Onion|Basil\">Toppings",
        "<input type=\"date\" name=\"day\">Delivery day",
    ] {
        assert!(
            find_index(&state, control).is_some(),
            "{control:?} in:\n{e}"
        );
    }
    assert_eq!(e.matches("Wrap it as a gift").count(), 1, "{e}");
    // Links inside a menu item are listed, not swallowed by it.
    assert!(e.contains("]<a>Docs</a> ["), "{e}");
    let blue = click(c, &state, "value=\"blue\"").await;
    assert_eq!(report(&site, "colour").await, json!("blue"));
    assert!(
        find_index(&blue, "value=\"blue\" checked>Blue").is_some(),
        "{}",
        blue.elements
    );

    // A badge over the button's centre: the button is kept and clicked where it is free.
    let wide = click(c, &blue, "Wide button").await;
    assert_eq!(report(&site, "wide").await, json!(true));

    // Several toppings stay chosen; one can be taken back.
    let toppings = index_of(&wide, "Toppings");
    let mut now = wide;
    for topping in ["Olives", "Basil"] {
        now = act(
            c,
            &SelectDropdownOption {
                index: toppings,
                text: topping.into(),
                deselect: false,
                snapshot_id: Some(now.snapshot_id),
            },
        )
        .await;
    }
    assert!(
        site.wait_for_report(|r| r["toppings"] == json!(["olives", "basil"]))
            .await
            .is_some(),
        "{:?}",
        site.reports()
    );
    assert!(
        now.elements.contains("value=\"Olives, Basil\""),
        "{}",
        now.elements
    );
    act(
        c,
        &SelectDropdownOption {
            index: toppings,
            text: "Olives".into(),
            deselect: true,
            snapshot_id: Some(now.snapshot_id),
        },
    )
    .await;
    assert!(
        site.wait_for_report(|r| r["toppings"] == json!(["basil"]))
            .await
            .is_some()
    );
}

#[tokio::test]
async fn dates_and_times_are_set_as_people_write_them_or_refused() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "widgets.html").await;
    let day = index_of(&state, "Delivery day");
    let input = |index: u32, text: &str, sid: u64| InputText {
        index,
        text: text.into(),
        snapshot_id: Some(sid),
    };
    let set = act(c, &input(day, "06/09/2019", state.snapshot_id)).await;
    assert_eq!(report(&site, "day").await, json!("2019-06-09"));
    assert!(
        set.elements.contains("value=\"2019-06-09\""),
        "{}",
        set.elements
    );
    let time = index_of(&set, "Time");
    act(c, &input(time, "2:30 PM", set.snapshot_id)).await;
    assert_eq!(report(&site, "time").await, json!("14:30"));
    let nonsense = refused(c, &input(day, "next blue moon", set.snapshot_id)).await;
    assert_eq!(
        nonsense.code(),
        Some(&ErrorCode::InvalidRequest),
        "{nonsense}"
    );
    assert!(nonsense.to_string().contains("yyyy-mm-dd"), "{nonsense}");
}

#[tokio::test]
async fn an_inner_box_scrolls_by_its_index_and_a_menu_opens_on_hover() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "widgets.html").await;
    // The box hides its last terms and its button; its line says how much lies below.
    assert!(!state.elements.contains("I accept"), "{}", state.elements);
    let terms = index_of(&state, "scrollable 0px above");
    let scrolled = act(
        c,
        &ScrollDown {
            index: Some(terms),
            snapshot_id: Some(state.snapshot_id),
            ..Default::default()
        },
    )
    .await;
    assert!(
        scrolled
            .message
            .as_deref()
            .unwrap()
            .starts_with("Scrolled down"),
        "{:?}",
        scrolled.message
    );
    let accepted = click(c, &scrolled, "I accept").await;
    assert_eq!(report(&site, "accepted").await, json!(true));

    // The page cannot scroll a box that is not there.
    let not_a_box = refused(
        c,
        &ScrollDown {
            index: Some(index_of(&accepted, "Account")),
            snapshot_id: Some(accepted.snapshot_id),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(not_a_box.code(), Some(&ErrorCode::WrongElementKind));

    assert!(!accepted.elements.contains("Profile"));
    let hovered = act(
        c,
        &HoverElement {
            index: index_of(&accepted, "Account"),
            snapshot_id: Some(accepted.snapshot_id),
        },
    )
    .await;
    click(c, &hovered, "Profile").await;
    assert_eq!(report(&site, "menu").await, json!("profile"));
}

#[tokio::test]
async fn a_state_waits_for_the_answers_a_click_sets_off() {
    let (daemon, site) = setup().await;
    let c = &daemon.client;
    // The page keeps a request open for good: a long poll must not hold every state back.
    let state = open(c, &site, "fetch.html").await;
    assert!(
        state.elements.contains("No answer yet"),
        "{}",
        state.elements
    );

    // Two slow requests in a row (300 ms, then 200 ms) before the page shows the answer.
    let state = click(c, &state, "Ask").await;
    assert!(
        state.elements.contains("The answer is 42"),
        "the state was read before the API answered:\n{}",
        state.elements
    );
    assert!(!state.elements.contains("Loading"), "{}", state.elements);

    // Content that arrives a piece every 10 ms is read whole.
    let state = click(c, &state, "Render in steps").await;
    assert!(
        state.elements.contains("- Step 6 (last)"),
        "the state was read mid-render:\n{}",
        state.elements
    );

    // A page that never stops asking cannot hold the agent: the state comes back (its wait
    // is bounded) with the answers so far.
    let state = click(c, &state, "Poll forever").await;
    assert!(
        state.elements.contains("Polls answered: "),
        "{}",
        state.elements
    );
    assert!(
        !state.elements.contains("Polls answered: 0"),
        "{}",
        state.elements
    );
}

#[tokio::test]
async fn a_database_ui_reads_as_shown_and_takes_typing_where_a_person_types() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "admin.html").await;
    let e = &state.elements;
    // A script beside an unlabelled checkbox, a style sheet and a template say nothing.
    for code in ["onclick", "qs(", "never-words", "Template button"] {
        assert!(!e.contains(code), "{code:?} in:\n{e}");
    }
    // A cell that starts with a link is parted from the one before, so cells line up.
    assert!(
        e.contains("Hana Weber | 25 | [") && e.contains("hana.weber@example.org</a> | Brno"),
        "{e}"
    );
    // Blocks inside a cell are words apart.
    assert!(e.contains("name required | string"), "{e}");

    // A long text is shown exactly (lines and quotes) well past 120 characters, and says
    // where it was cut; the whole page shows more of it.
    let notes = e
        .lines()
        .find(|l| l.contains("<textarea"))
        .unwrap_or_else(|| panic!("no textarea in:\n{e}"));
    assert!(
        notes.contains(r#"line 1: the \"quoted\" note number 1 of the long text\nline 2: "#)
            && notes.contains("line 30: "),
        "{notes}"
    );
    assert!(
        notes.contains("cut=\"at 2000 of 6") && notes.contains("full=true shows 6000"),
        "{notes}"
    );
    let whole = c
        .browser_state(StateQuery { full: true, ..LEAN })
        .await
        .unwrap();
    let notes = whole
        .elements
        .lines()
        .find(|l| l.contains("<textarea"))
        .unwrap();
    assert!(notes.contains("line 100: "), "{notes}");

    // A code editor that takes keys itself gets the text as typed, lines and all.
    let typed = act(
        c,
        &InputText {
            index: index_of(&state, "SQL command"),
            text: "SELECT *\nFROM people;".into(),
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await;
    let said = typed.message.unwrap_or_default();
    assert!(
        said.starts_with("Typed") && !said.contains("but it shows"),
        "{said}"
    );
    assert!(
        site.wait_for_report(|r| r["sql"] == json!("SELECT *\nFROM people;"))
            .await
            .is_some(),
        "{:?}",
        site.reports().last()
    );

    // A button wholly in view is clicked where it is: the page does not scroll first.
    let fresh = c.browser_state(LEAN).await.unwrap();
    assert_eq!(fresh.pixels_above, 0);
    let after = click(c, &fresh, "Low button").await;
    assert_eq!(report(&site, "low").await, json!(true));
    assert_eq!(after.pixels_above, 0, "the page scrolled before the click");
    assert!(
        site.reports().iter().all(|r| r.get("scrolled").is_none()),
        "{:?}",
        site.reports()
    );
}

#[tokio::test]
async fn closing_the_last_tab_leaves_one_that_draws_and_takes_clicks() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "counter.html").await;
    let only = state.tabs[0].tab_id;
    let closed = act(c, &CloseTab { tab_id: only }).await;
    assert_eq!(closed.tabs.len(), 1);
    assert!(closed.tabs[0].active && closed.tabs[0].tab_id != only);
    let shot = c
        .browser_state(StateQuery {
            screenshot: true,
            ..LEAN
        })
        .await
        .expect("the blank tab draws");
    assert!(shot.screenshot.is_some());
    let again = open(c, &site, "counter.html").await;
    click(c, &again, "Increment").await;
    assert_eq!(report(&site, "clicks").await, json!(1));
}
