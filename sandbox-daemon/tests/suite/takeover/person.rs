//! What a person does in the live view: click and type (in a narrow window, in every
//! takeover of one daemon, into a field just clicked), answer a dialog, switch tabs and
//! navigate, in Chromium and in Firefox.

use super::*;

#[tokio::test]
async fn a_person_clicks_and_types_through_the_live_view_in_a_narrow_window() {
    let (daemon, site) = setup(&[]).await;
    let c = daemon.client.clone();
    open_fixture(&c, &site).await;
    let grant = start(&c, "Please log in").await;
    assert!(grant.url.contains(&grant.token), "{}", grant.url);

    // A phone-sized window: the live view is scaled down to fit.
    let viewer = Viewer::open(&grant.url, 420, 800)
        .await
        .expect("viewer opens");
    viewer
        .wait_until(
            "Number(document.getElementById('view').dataset.frames || 0) > 0 && document.getElementById('view').dataset.role === 'control'",
            WAIT,
        )
        .await
        .expect("the live view shows a frame and has control");
    let shown = viewer
        .eval("document.getElementById('view').getBoundingClientRect().width")
        .await
        .unwrap();
    assert!(
        shown.as_f64().unwrap() < 420.0,
        "scaled to the window: {shown}"
    );
    let ask = viewer
        .eval("document.getElementById('ask').textContent")
        .await
        .unwrap();
    assert_eq!(ask, json!("The agent asks: Please log in"));

    // Bravo's middle is (800, 350) in the sandbox viewport; Alpha is elsewhere.
    let (x, y) = viewer.live_point(800.0, 350.0, VW, VH).await.unwrap();
    viewer.click(x, y).await.unwrap();
    let click = site
        .wait_for_report(|r| r.get("click").is_some())
        .await
        .expect("the click reached the fixture");
    assert_eq!(click["click"], "b", "{click}");
    assert_eq!(click["trusted"], true);
    // Scaling loses precision: a few pixels is the most the mapping may be off.
    assert!(
        (click["x"].as_f64().unwrap() - 800.0).abs() < 8.0,
        "{click}"
    );
    assert!(
        (click["y"].as_f64().unwrap() - 350.0).abs() < 8.0,
        "{click}"
    );

    // A double-click on Bravo is one.
    viewer.double_click(x, y).await.unwrap();
    site.wait_for_report(|r| r["dblclick"] == "b")
        .await
        .expect("the double-click reached the fixture");

    // Click into the name field, type, correct a typo, select all with a shortcut, Enter.
    let (x, y) = viewer.live_point(300.0, 120.0, VW, VH).await.unwrap();
    viewer.click(x, y).await.unwrap();
    viewer.type_text("alicex").await.unwrap();
    viewer
        .key("Backspace", "Backspace", 8, None, 0)
        .await
        .unwrap();
    site.wait_for_report(|r| r["value"] == "alice")
        .await
        .expect("typed keys and Backspace reached the input");
    viewer.key("a", "KeyA", 65, None, 2).await.unwrap();
    site.wait_for_report(|r| r["select_all"] == true)
        .await
        .expect("Control+A reached the page");
    viewer
        .key("Enter", "Enter", 13, Some("\r"), 0)
        .await
        .unwrap();
    site.wait_for_report(|r| r["enter"] == "alice")
        .await
        .expect("Enter reached the input");
    // Tab moves the sandbox page's focus, not the viewer's.
    viewer.key("Tab", "Tab", 9, None, 0).await.unwrap();
    site.wait_for_report(|r| r["focused"] == "other")
        .await
        .expect("Tab moved focus inside the sandbox page");

    // The wheel scrolls the sandbox page.
    let (x, y) = viewer.live_point(640.0, 600.0, VW, VH).await.unwrap();
    let wheel = chromiumoxide::cdp::browser_protocol::input::DispatchMouseEventParams::builder()
        .r#type(chromiumoxide::cdp::browser_protocol::input::DispatchMouseEventType::MouseWheel)
        .x(x)
        .y(y)
        .delta_x(0.0)
        .delta_y(400.0)
        .build()
        .unwrap();
    viewer.page.execute(wheel).await.unwrap();
    site.wait_for_report(|r| r["scrolled"].as_f64().is_some_and(|s| s >= 100.0))
        .await
        .expect("the wheel scrolled the sandbox page");

    // The URL box shows the sandbox's page.
    viewer
        .wait_until(
            "document.getElementById('url').value.endsWith('/takeover.html')",
            WAIT,
        )
        .await
        .unwrap();

    // Done: the page says so, the agent has the browser back, with the person's note.
    viewer
        .eval("document.getElementById('note').value = 'logged in as alice'; document.getElementById('done').click(); true")
        .await
        .unwrap();
    viewer
        .wait_until("document.body.dataset.ended === 'handed_back'", WAIT)
        .await
        .expect("the page shows the hand-back");
    let status = c.takeover_status(0).await.unwrap();
    assert_eq!(status.in_control, InControl::Agent);
    let ended = status.last_ended.expect("the hand-back is recorded");
    assert_eq!(ended.reason, TakeoverEnd::HandedBack);
    assert_eq!(ended.note.as_deref(), Some("logged in as alice"));
    assert_eq!(ended.id, grant.id);
    viewer.close().await;
}

#[tokio::test]
async fn the_page_switches_tabs_and_navigates_for_the_person() {
    // A person may only open pages off this machine: the site is on its network address.
    let (daemon, _) = setup(&[]).await;
    let site = FixtureSite::start_on_network().await.unwrap();
    let c = daemon.client.clone();
    // The agent opens a second tab before asking for help.
    let state = c
        .browser(
            &NavigateTo {
                url: site.url("tabs.html"),
            },
            LEAN,
        )
        .await
        .unwrap();
    let index = cove_harness::browser_text::index_of(&state.elements, "window.open")
        .expect("the window.open button");
    let state = c
        .browser(
            &cove_protocol::browser::ClickElement {
                index,
                snapshot_id: Some(state.snapshot_id),
            },
            LEAN,
        )
        .await
        .unwrap();
    assert_eq!(state.tabs.len(), 2);
    let (first_tab, second_tab) = (state.tabs[0].tab_id, state.tabs[1].tab_id);

    let grant = start(&c, "x").await;
    let mut live = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    let view = live.expect_json("view", WAIT).await.unwrap();
    assert_eq!(view["tabs"].as_array().unwrap().len(), 2, "{view}");
    assert_eq!(view["active_tab"], second_tab);

    live.send(json!({"t": "tab", "id": first_tab}))
        .await
        .unwrap();
    let view = view_until(&mut live, |v| v["active_tab"] == first_tab).await;
    assert!(
        view["tabs"][0]["url"]
            .as_str()
            .unwrap()
            .ends_with("/tabs.html"),
        "{view}"
    );
    live.expect_frame(WAIT)
        .await
        .expect("frames of the newly active tab");
    let state = c.browser_state(LEAN).await.unwrap();
    assert!(state.url.ends_with("/tabs.html"), "{}", state.url);

    live.send(json!({"t": "navigate", "url": site.url("takeover.html")}))
        .await
        .unwrap();
    let url = site.url("takeover.html");
    view_until(&mut live, |v| v["tabs"][0]["url"] == url.as_str()).await;
    live.send(json!({"t": "back"})).await.unwrap();
    wait_for_url(&c, "/tabs.html").await;
    live.send(json!({"t": "forward"})).await.unwrap();
    wait_for_url(&c, "/takeover.html").await;
    live.send(json!({"t": "reload"})).await.unwrap();
    wait_for_url(&c, "/takeover.html").await;
    // A bad URL is the person's error, shown on the page.
    live.send(json!({"t": "navigate", "url": "notaurl://x"}))
        .await
        .unwrap();
    live.expect_json("error", WAIT).await.unwrap();
    live.close().await;
}

#[tokio::test]
async fn the_takeover_page_works_in_firefox() {
    let (daemon, site) = setup(&[]).await;
    let c = daemon.client.clone();
    open_fixture(&c, &site).await;
    let grant = start(&c, "Please log in").await;
    let mut ff = cove_harness::firefox::Firefox::open(&grant.url, 500, 800)
        .await
        .expect("Firefox opens the page");
    ff.wait_until(
        "Number(document.getElementById('view').dataset.frames || 0) > 0 && document.getElementById('view').dataset.role === 'control'",
        WAIT,
    )
    .await
    .expect("Firefox draws a frame and has control");
    let rect = ff
        .eval("(() => { const r = document.getElementById('view').getBoundingClientRect(); return [r.left, r.top, r.width, r.height].join(','); })()")
        .await
        .unwrap();
    let r: Vec<f64> = rect
        .as_str()
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        r[2] < 500.0,
        "the view is scaled to the narrow window: {r:?}"
    );
    let at = |x: f64, y: f64| (r[0] + x / VW * r[2], r[1] + y / VH * r[3]);

    let (x, y) = at(800.0, 350.0);
    ff.click(x, y).await.unwrap();
    let click = site
        .wait_for_report(|r| r.get("click").is_some())
        .await
        .expect("Firefox's click reached the fixture");
    assert_eq!(click["click"], "b", "{click}");

    let (x, y) = at(300.0, 120.0);
    ff.click(x, y).await.unwrap();
    ff.keys("bobx\u{E003}").await.unwrap();
    site.wait_for_report(|r| r["value"] == "bob")
        .await
        .expect("Firefox's keys and Backspace reached the input");
    ff.keys("\u{E007}").await.unwrap();
    site.wait_for_report(|r| r["enter"] == "bob")
        .await
        .expect("Enter reached the input");

    ff.eval("document.getElementById('done').click(); true")
        .await
        .unwrap();
    ff.wait_until("document.body.dataset.ended === 'handed_back'", WAIT)
        .await
        .expect("the page shows the hand-back");
    assert_eq!(
        c.takeover_status(0).await.unwrap().in_control,
        InControl::Agent
    );
    ff.close().await;
}

#[tokio::test]
async fn typing_reaches_the_page_in_every_takeover_of_one_daemon() {
    let (daemon, site) = setup(&[]).await;
    let c = daemon.client.clone();
    open_fixture(&c, &site).await;
    for round in 1..=3 {
        let grant = start(&c, &format!("Round {round}")).await;
        let viewer = Viewer::open(&grant.url, 1300, 800)
            .await
            .expect("viewer opens");
        viewer
            .wait_until(
                "Number(document.getElementById('view').dataset.frames || 0) > 0 && document.getElementById('view').dataset.role === 'control'",
                WAIT,
            )
            .await
            .unwrap_or_else(|e| panic!("round {round}: the live view has control: {e}"));
        let (x, y) = viewer.live_point(300.0, 120.0, VW, VH).await.unwrap();
        viewer.click(x, y).await.unwrap();
        // Select what an earlier round typed, then type over it.
        viewer.key("a", "KeyA", 65, None, 2).await.unwrap();
        let typed = format!("round{round}");
        viewer.type_text(&typed).await.unwrap();
        site.wait_for_report(|r| r["value"] == typed.as_str())
            .await
            .unwrap_or_else(|| {
                panic!(
                    "round {round}: the typing reached the input; reports: {:?}",
                    site.reports()
                )
            });
        viewer
            .eval("document.getElementById('done').click(); true")
            .await
            .unwrap();
        viewer
            .wait_until("document.body.dataset.ended === 'handed_back'", WAIT)
            .await
            .unwrap_or_else(|e| panic!("round {round}: handed back: {e}"));
        viewer.close().await;
        // Between takeovers the agent works in the browser as it would: a link opens a new
        // tab, the fixture loads there, and text goes into a field.
        let tabs = c
            .browser(
                &NavigateTo {
                    url: site.url("tabs.html"),
                },
                LEAN,
            )
            .await
            .unwrap();
        let link = cove_harness::browser_text::index_of(&tabs.elements, "Open in a new tab")
            .expect("the link");
        c.browser(
            &cove_protocol::browser::ClickElement {
                index: link,
                snapshot_id: Some(tabs.snapshot_id),
            },
            LEAN,
        )
        .await
        .unwrap();
        let state = c
            .browser(
                &NavigateTo {
                    url: site.url("takeover.html"),
                },
                LEAN,
            )
            .await
            .unwrap();
        assert_eq!(state.tabs.len(), round + 1, "{:?}", state.tabs);
        let other = cove_harness::browser_text::index_of(&state.elements, "placeholder=\"other\"")
            .expect("the other field");
        c.browser(
            &cove_protocol::browser::InputText {
                index: other,
                text: format!("agent{round}"),
                snapshot_id: Some(state.snapshot_id),
            },
            LEAN,
        )
        .await
        .unwrap();
    }
}

/// Issue 30: a person clicks a button, waits, clicks a field where they saw it, and types:
/// the field takes the typing. Where the view was is read once, before the clicks, as a
/// person aims at what they see: nothing the page shows meanwhile (a message in its status
/// line) may move the view under their pointer, and nothing it sends is refused.
#[tokio::test]
async fn a_click_on_a_field_then_typing_reaches_it() {
    let (daemon, site) = setup(&[]).await;
    let c = daemon.client.clone();
    open_fixture(&c, &site).await;
    let grant = start(&c, "Fill in the name").await;
    let viewer = Viewer::open(&grant.url, 1300, 800)
        .await
        .expect("viewer opens");
    viewer
        .wait_until(
            "Number(document.getElementById('view').dataset.frames || 0) > 0 && document.getElementById('view').dataset.role === 'control'",
            WAIT,
        )
        .await
        .unwrap();
    let button = viewer.live_point(800.0, 350.0, VW, VH).await.unwrap();
    let field = viewer.live_point(300.0, 120.0, VW, VH).await.unwrap();
    let status = "document.getElementById('status').textContent";
    for round in 1..=3 {
        viewer.click(button.0, button.1).await.unwrap();
        site.wait_for_report(|r| r["click"] == "b")
            .await
            .expect("the button was clicked");
        tokio::time::sleep(Duration::from_millis(500)).await;
        viewer.click(field.0, field.1).await.unwrap();
        let typed = format!("cove{round}");
        // Select what an earlier round typed, then type over it.
        viewer.key("a", "KeyA", 65, None, 2).await.unwrap();
        viewer.type_text(&typed).await.unwrap();
        let landed = site.wait_for_report(|r| r["value"] == typed.as_str()).await;
        let shown = viewer.eval(status).await.unwrap();
        assert!(
            landed.is_some(),
            "round {round}: the typing reached the field; reports: {:?}; status {shown}",
            site.reports()
        );
        assert!(
            !shown.as_str().unwrap_or("").contains("did not understand"),
            "{shown}"
        );
    }
    // However long a message, the view stays where it was.
    let before = viewer.live_point(0.0, 0.0, VW, VH).await.unwrap();
    viewer
        .eval("document.getElementById('status').textContent = 'a message long enough to need several lines of the header, '.repeat(8); true")
        .await
        .unwrap();
    let after = viewer.live_point(0.0, 0.0, VW, VH).await.unwrap();
    assert_eq!(before, after, "the live view moved when the status changed");
    viewer.close().await;
}

#[tokio::test]
async fn the_person_answers_the_pages_dialog_in_the_live_view() {
    let (daemon, site) = setup(&[]).await;
    let c = daemon.client.clone();
    c.browser(
        &NavigateTo {
            url: site.url("dialogs.html"),
        },
        LEAN,
    )
    .await
    .expect("the fixture loads");
    let grant = start(&c, "Delete the item").await;
    let viewer = Viewer::open(&grant.url, 1300, 800)
        .await
        .expect("viewer opens");
    viewer
        .wait_until(
            "Number(document.getElementById('view').dataset.frames || 0) > 0 && document.getElementById('view').dataset.role === 'control'",
            WAIT,
        )
        .await
        .unwrap();
    // The Delete button (300×60 at 600,300) asks confirm('Delete it?'): a headless browser
    // draws no dialog, so the takeover page shows it.
    let delete = viewer.live_point(750.0, 330.0, VW, VH).await.unwrap();
    viewer.click(delete.0, delete.1).await.unwrap();
    viewer
        .wait_until(
            "!document.getElementById('pagedialog').hidden && document.getElementById('dialogmessage').textContent === 'Delete it?'",
            WAIT,
        )
        .await
        .expect("the person sees what the page asks");
    if let Ok(dir) = std::env::var("COVE_SCREENSHOTS") {
        let shot = viewer
            .page
            .screenshot(chromiumoxide::page::ScreenshotParams::builder().build())
            .await
            .unwrap();
        std::fs::write(format!("{dir}/takeover-dialog.png"), shot).unwrap();
    }
    let ok = viewer
        .eval("(() => { const r = document.getElementById('dialogok').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        .await
        .unwrap();
    viewer
        .click(ok[0].as_f64().unwrap(), ok[1].as_f64().unwrap())
        .await
        .unwrap();
    assert!(
        site.wait_for_report(|r| r["deleted"] == json!(true))
            .await
            .is_some(),
        "the page heard OK: {:?}",
        site.reports()
    );
    viewer
        .wait_until("document.getElementById('pagedialog').hidden", WAIT)
        .await
        .expect("the dialog is gone from the takeover page");
    // The live view goes on: the next press reaches the page.
    let status = viewer
        .eval("document.getElementById('status').textContent")
        .await
        .unwrap();
    assert!(
        !status.as_str().unwrap_or("").contains("did not"),
        "{status}"
    );
    viewer.click(delete.0, delete.1).await.unwrap();
    viewer
        .wait_until("!document.getElementById('pagedialog').hidden", WAIT)
        .await
        .expect("the second dialog shows");
    viewer
        .eval("document.getElementById('dialogcancel').click(); true")
        .await
        .unwrap();
    assert!(
        site.wait_for_report(|r| r["deleted"] == json!(false))
            .await
            .is_some()
    );
    viewer.close().await;
}
