//! JavaScript dialogs against real Chromium: an action that opens one returns at once, the
//! state shows it while nothing else on the page can be used, `handle_dialog` answers it
//! as the page then reports, and one left alone is dismissed, so no page holds the browser.

use std::time::Duration;

use cove_harness::{DaemonBuilder, DaemonProcess, FixtureSite};
use cove_protocol::ErrorCode;
use cove_protocol::browser::{
    BrowserAction, BrowserState, ClickElement, HandleDialog, NavigateTo, StateQuery,
};
use cove_protocol::client::CovedClient;
use serde_json::{Value, json};

const LEAN: StateQuery = StateQuery {
    screenshot: false,
    content: false,
    full: false,
};

async fn setup(dialog_timeout_secs: u64) -> (DaemonProcess, FixtureSite) {
    cove_harness::viewer::chromium_path();
    let daemon = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--dialog-timeout-secs")
        .arg(dialog_timeout_secs.to_string())
        .spawn()
        .await
        .expect("coved starts");
    let site = FixtureSite::start().await.expect("fixture site starts");
    (daemon, site)
}

async fn act<A: BrowserAction>(c: &CovedClient, action: &A) -> BrowserState {
    c.browser(action, LEAN)
        .await
        .unwrap_or_else(|e| panic!("{} failed: {e}", A::NAME))
}

async fn click(c: &CovedClient, state: &BrowserState, needle: &str) -> BrowserState {
    let index = cove_harness::browser_text::index_of(&state.elements, needle)
        .unwrap_or_else(|| panic!("no {needle:?} in:\n{}", state.elements));
    act(
        c,
        &ClickElement {
            index,
            snapshot_id: Some(state.snapshot_id),
        },
    )
    .await
}

async fn reported(site: &FixtureSite, key: &str) -> Value {
    site.wait_for_report(|r| r.get(key).is_some())
        .await
        .unwrap_or_else(|| panic!("no {key:?} report: {:?}", site.reports()))[key]
        .clone()
}

#[tokio::test]
async fn a_dialog_is_shown_answered_and_never_holds_the_browser() {
    let (d, site) = setup(120).await;
    let c = &d.client;
    let page = act(
        c,
        &NavigateTo {
            url: site.url("dialogs.html"),
        },
    )
    .await;

    // The click opens a confirm: the action returns (the browser's own deadline is 30 s)
    // with the dialog in the state.
    let asked = tokio::time::timeout(Duration::from_secs(10), click(c, &page, "Delete"))
        .await
        .expect("the click returned while the dialog is open");
    let dialog = asked.dialog.clone().expect("the state shows the dialog");
    assert_eq!(
        (dialog.kind.as_str(), dialog.message.as_str()),
        ("confirm", "Delete it?")
    );
    assert!(
        asked.elements.starts_with("[dialog]") && asked.elements.contains("handle_dialog"),
        "{}",
        asked.elements
    );
    // Reading the state does not wait on the held page either, and says the same.
    let again = tokio::time::timeout(Duration::from_secs(10), c.browser_state(LEAN))
        .await
        .expect("the state answered")
        .unwrap();
    assert_eq!(
        again.dialog.as_ref().map(|d| d.kind.as_str()),
        Some("confirm")
    );
    // Anything else on the page waits for the answer, and says so.
    let refused = c
        .browser(
            &ClickElement {
                index: 1,
                snapshot_id: None,
            },
            LEAN,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(&ErrorCode::ElementNotClickable));
    assert!(refused.to_string().contains("answer it first"), "{refused}");

    // Cancel: the page hears false, and reads as before.
    let dismissed = act(
        c,
        &HandleDialog {
            accept: false,
            text: None,
        },
    )
    .await;
    assert_eq!(reported(&site, "deleted").await, json!(false));
    assert!(dismissed.dialog.is_none());
    assert!(
        dismissed
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("Dismissed the confirm dialog"),
        "{:?}",
        dismissed.message
    );
    assert!(
        dismissed.elements.contains("Rename"),
        "{}",
        dismissed.elements
    );

    // A prompt takes the answer given.
    let asked = click(c, &dismissed, "Rename").await;
    assert_eq!(
        asked
            .dialog
            .as_ref()
            .and_then(|d| d.default_text.as_deref()),
        Some("Item one")
    );
    let answered = act(
        c,
        &HandleDialog {
            accept: true,
            text: Some("Item two".into()),
        },
    )
    .await;
    assert_eq!(reported(&site, "renamed").await, json!("Item two"));

    // An alert is accepted; the page goes on after it.
    let asked = click(c, &answered, "Greet").await;
    assert_eq!(
        asked.dialog.as_ref().map(|d| d.kind.as_str()),
        Some("alert")
    );
    let after = act(
        c,
        &HandleDialog {
            accept: true,
            text: None,
        },
    )
    .await;
    assert_eq!(reported(&site, "greeted").await, json!(true));

    // A dialog that opens just after the action is found by the next state.
    let clicked = click(c, &after, "Ask later").await;
    let shown = match clicked.dialog {
        Some(d) => d,
        None => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            c.browser_state(LEAN)
                .await
                .unwrap()
                .dialog
                .expect("the late dialog")
        }
    };
    assert_eq!(shown.message, "Still there?");
    act(
        c,
        &HandleDialog {
            accept: true,
            text: None,
        },
    )
    .await;
    assert_eq!(reported(&site, "late").await, json!(true));

    // With none open, answering is refused.
    let none = c
        .browser(
            &HandleDialog {
                accept: true,
                text: None,
            },
            LEAN,
        )
        .await
        .unwrap_err();
    assert_eq!(none.code(), Some(&ErrorCode::NoMatch));
}

#[tokio::test]
async fn a_dialog_left_alone_is_dismissed_and_the_page_goes_on() {
    let (d, site) = setup(2).await;
    let c = &d.client;
    let page = act(
        c,
        &NavigateTo {
            url: site.url("dialogs.html"),
        },
    )
    .await;
    let asked = click(c, &page, "Delete").await;
    assert_eq!(asked.dialog.map(|d| d.dismissed_in_secs <= 2), Some(true));
    // Nobody answers: after its time it is dismissed (Cancel), and the page works again.
    assert_eq!(reported(&site, "deleted").await, json!(false));
    let state = c.browser_state(LEAN).await.unwrap();
    assert!(state.dialog.is_none());
    click(c, &state, "Other").await;
    assert_eq!(reported(&site, "other").await, json!(true));
}
