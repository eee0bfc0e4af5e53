//! The agent's actions on fixture pages: clicks, typing into every kind of field, keys,
//! selects, scrolling, tabs, drag and drop, history, hover, and a state that waits for what
//! a click sets off.

use super::*;

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
