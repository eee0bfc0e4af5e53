//! How the agent reads a page: its visible controls with their context, frames and shadow
//! roots, what a modal hides, stale indices, huge pages, names and states of controls.

use super::*;

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

/// The listener probe passes over what the state only counts (far beyond the viewport), and
/// the state still finds a listener-only control once it is in view, or when the whole page
/// is read.
#[tokio::test]
async fn a_control_known_by_its_listener_is_found_wherever_the_state_reads() {
    let (d, site) = setup().await;
    let c = &d.client;
    let state = open(c, &site, "far-listeners.html").await;
    assert!(
        find_index(&state, "Near listener").is_some(),
        "{}",
        state.elements
    );
    assert!(
        !state.elements.contains("Far listener"),
        "{}",
        state.elements
    );
    let full = c
        .browser_state(StateQuery { full: true, ..LEAN })
        .await
        .unwrap();
    assert!(
        find_index(&full, "Far listener").is_some(),
        "{}",
        full.elements
    );
    let scrolled = act(
        c,
        &ScrollToText {
            text: "Far listener".into(),
        },
    )
    .await;
    assert!(
        find_index(&scrolled, "Near listener").is_none(),
        "{}",
        scrolled.elements
    );
    click(c, &scrolled, "Far listener").await;
    assert_eq!(report(&site, "far").await, json!(true));
}
