//! Browser takeover against real Chromium: a second Chromium opens the takeover page and
//! drives the sandbox's browser through the live view; the fixture page inside the sandbox
//! reports what reached it.

use std::time::{Duration, Instant};

use cove_harness::live::{LiveEvent, refusal_status};
use cove_harness::viewer::chromium_path;
use cove_harness::{DaemonBuilder, DaemonProcess, FixtureSite, LiveClient, Viewer};
use cove_protocol::ErrorCode;
use cove_protocol::browser::{NavigateTo, StateQuery};
use cove_protocol::client::{ClientError, CovedClient};
use cove_protocol::takeover::{InControl, StartTakeover, TakeoverEnd, TakeoverGrant};
use serde_json::{Value, json};

const LEAN: StateQuery = StateQuery {
    screenshot: false,
    content: false,
    full: false,
};
const WAIT: Duration = Duration::from_secs(15);
/// The sandbox browser's viewport (coved's default).
const VW: f64 = 1280.0;
const VH: f64 = 720.0;

async fn setup(extra_env: &[(&str, &str)]) -> (DaemonProcess, FixtureSite) {
    chromium_path();
    let mut builder = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"));
    for (k, v) in extra_env {
        builder = builder.env(k, v);
    }
    let daemon = builder.spawn().await.expect("coved starts");
    let site = FixtureSite::start().await.expect("fixture site starts");
    (daemon, site)
}

async fn open_fixture(c: &CovedClient, site: &FixtureSite) {
    c.browser(
        &NavigateTo {
            url: site.url("takeover.html"),
        },
        LEAN,
    )
    .await
    .expect("the fixture loads");
}

async fn start(c: &CovedClient, message: &str) -> TakeoverGrant {
    c.takeover_start(&StartTakeover {
        message: Some(message.into()),
        ttl_secs: None,
    })
    .await
    .expect("the takeover starts")
}

fn api_code(e: &ClientError) -> Option<&ErrorCode> {
    match e {
        ClientError::Api { code, .. } => Some(code),
        _ => None,
    }
}

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
async fn frames_come_after_a_change_and_none_while_idle() {
    let (daemon, site) = setup(&[]).await;
    let c = daemon.client.clone();
    open_fixture(&c, &site).await;
    let grant = start(&c, "watch").await;
    let mut live = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    let hello = live.expect_json("hello", WAIT).await.unwrap();
    assert_eq!(hello["message"], "watch");
    let view = live.expect_json("view", WAIT).await.unwrap();
    assert_eq!(view["role"], "control");
    let first = live.expect_frame(WAIT).await.unwrap();
    assert_eq!(&first[..2], &[0xFF, 0xD8], "frames are JPEG");
    // Let the page settle (the first paint may bring a frame or two), then nothing moves.
    live.frames_during(Duration::from_millis(1500))
        .await
        .unwrap();
    let idle = live.frames_during(Duration::from_secs(2)).await.unwrap();
    assert_eq!(idle, 0, "frames arrived while the page was idle");

    // A click on Alpha changes the background: frames follow.
    live.click(200.0, 350.0, VW, VH).await.unwrap();
    site.wait_for_report(|r| r["click"] == "a").await.unwrap();
    live.expect_frame(WAIT)
        .await
        .expect("a frame after the change");
    live.frames_during(Duration::from_millis(1500))
        .await
        .unwrap();
    let idle = live.frames_during(Duration::from_secs(2)).await.unwrap();
    assert_eq!(idle, 0, "frames kept coming after the change was drawn");
    live.close().await;
}

#[tokio::test]
async fn agent_actions_wait_while_a_person_has_control_and_reads_still_work() {
    let (daemon, site) = setup(&[]).await;
    let c = daemon.client.clone();
    open_fixture(&c, &site).await;
    let status = c.takeover_status(0).await.unwrap();
    assert_eq!(status.in_control, InControl::Agent);
    assert!(status.active.is_none() && status.last_ended.is_none());

    let grant = start(&c, "log in").await;
    // Asking again while it lasts answers with the same takeover.
    let again = start(&c, "log in").await;
    assert_eq!(
        (again.id.as_str(), again.token.as_str()),
        (grant.id.as_str(), grant.token.as_str())
    );

    let refused = c
        .browser(
            &NavigateTo {
                url: site.url("form.html"),
            },
            LEAN,
        )
        .await
        .expect_err("actions are refused during a takeover");
    assert_eq!(
        api_code(&refused),
        Some(&ErrorCode::TakeoverActive),
        "{refused}"
    );
    let state = c
        .browser_state(LEAN)
        .await
        .expect("reading the state works");
    assert!(state.url.ends_with("/takeover.html"));
    let shot = c.screenshot().await.expect("screenshots work");
    assert_eq!(&shot[..2], &[0xFF, 0xD8]);
    let status = c.takeover_status(0).await.unwrap();
    assert_eq!(status.in_control, InControl::Person);
    assert_eq!(
        status.active.as_ref().map(|a| a.id.as_str()),
        Some(grant.id.as_str())
    );

    // A long poll returns when the takeover ends, not at its timeout.
    let waiter = {
        let c = c.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let status = c.takeover_status(60).await.unwrap();
            (status, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = c
        .takeover_end()
        .await
        .expect("the controller takes the browser back");
    let ended = released.ended.expect("something ended");
    assert_eq!(
        (ended.id.as_str(), ended.reason),
        (grant.id.as_str(), TakeoverEnd::Released)
    );
    assert!(released.state.url.ends_with("/takeover.html"));
    assert!(
        released.state.screenshot.is_some(),
        "the hand-back state has a screenshot"
    );
    let (status, waited) = waiter.await.unwrap();
    assert_eq!(status.in_control, InControl::Agent);
    assert!(
        waited < Duration::from_secs(30),
        "the long poll waited {waited:?}"
    );

    // The agent acts again; a second release has nothing to end.
    c.browser(
        &NavigateTo {
            url: site.url("form.html"),
        },
        LEAN,
    )
    .await
    .expect("actions work after the hand-back");
    assert!(c.takeover_end().await.unwrap().ended.is_none());
}

async fn page_status(url: &str) -> u16 {
    reqwest::get(url).await.unwrap().status().as_u16()
}

#[tokio::test]
async fn wrong_ended_and_expired_tokens_get_401_and_no_frames() {
    let (daemon, site) = setup(&[("COVED_LOG", "debug")]).await;
    let c = daemon.client.clone();
    open_fixture(&c, &site).await;
    let grant = start(&c, "x").await;
    let base = grant.url.split('?').next().unwrap().to_string();

    assert_eq!(page_status(&grant.url).await, 200);
    assert_eq!(page_status(&format!("{base}?token=wrong")).await, 401);
    // Without a token the page is served: it finds the token its tab kept (see security.rs).
    assert_eq!(page_status(&base).await, 200);
    let refused = LiveClient::connect(&grant.url, "wrong")
        .await
        .err()
        .expect("refused");
    assert_eq!(refusal_status(&refused), Some(401), "{refused:#}");
    // The API's own token opens the API, not the takeover.
    let refused = LiveClient::connect(&grant.url, c.token())
        .await
        .err()
        .expect("refused");
    assert_eq!(refusal_status(&refused), Some(401));
    // And the takeover token opens nothing of the API.
    let scoped = CovedClient::new(c.base_url().as_str(), grant.token.clone()).unwrap();
    let e = scoped
        .browser_state(LEAN)
        .await
        .expect_err("API refuses the takeover token");
    assert_eq!(api_code(&e), Some(&ErrorCode::Unauthorized));

    // An open socket is told when the takeover ends, then the token is dead.
    let mut live = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    live.expect_frame(WAIT).await.unwrap();
    c.takeover_end().await.unwrap();
    let ended = live.expect_json("ended", WAIT).await.unwrap();
    assert_eq!(ended["reason"], "released");
    assert_eq!(page_status(&grant.url).await, 401);
    let refused = LiveClient::connect(&grant.url, &grant.token)
        .await
        .err()
        .expect("refused");
    assert_eq!(refusal_status(&refused), Some(401));

    // A takeover that runs out of time ends by itself.
    let short = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: Some(1),
        })
        .await
        .unwrap();
    assert_ne!(short.token, grant.token);
    let mut live = LiveClient::connect(&short.url, &short.token).await.unwrap();
    let ended = live
        .expect_json("ended", WAIT)
        .await
        .expect("the viewer hears of the expiry");
    assert_eq!(ended["reason"], "expired");
    assert_eq!(page_status(&short.url).await, 401);
    let status = c.takeover_status(0).await.unwrap();
    assert_eq!(status.in_control, InControl::Agent);
    assert_eq!(
        status.last_ended.map(|e| e.reason),
        Some(TakeoverEnd::Expired)
    );
    let e = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: Some(0),
        })
        .await
        .expect_err("a zero lifetime is refused");
    assert_eq!(api_code(&e), Some(&ErrorCode::InvalidRequest));

    // Tokens are secrets: the daemon's log (at debug level) never shows one.
    let log = daemon.stderr();
    assert!(log.contains("browser takeover started"), "{log}");
    for token in [&grant.token, &short.token] {
        assert!(
            !log.contains(token.as_str()),
            "a takeover token is in the log"
        );
    }
}

#[tokio::test]
async fn a_second_viewer_watches_and_takes_control_when_the_first_leaves() {
    let (daemon, site) = setup(&[]).await;
    let c = daemon.client.clone();
    open_fixture(&c, &site).await;
    let grant = start(&c, "x").await;
    let mut first = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    assert_eq!(
        first.expect_json("view", WAIT).await.unwrap()["role"],
        "control"
    );
    let mut second = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    assert_eq!(
        second.expect_json("view", WAIT).await.unwrap()["role"],
        "watch"
    );
    second
        .expect_frame(WAIT)
        .await
        .expect("a watcher sees frames");
    assert_eq!(
        c.takeover_status(0).await.unwrap().active.unwrap().viewers,
        2
    );

    second.click(200.0, 350.0, VW, VH).await.unwrap();
    let error = second.expect_json("error", WAIT).await.unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("watching"),
        "{error}"
    );
    second
        .send(json!({"t": "done", "note": "not mine to give"}))
        .await
        .unwrap();
    second.expect_json("error", WAIT).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        site.reports().iter().all(|r| r.get("click").is_none()),
        "a watcher's click reached the page"
    );
    assert_eq!(
        c.takeover_status(0).await.unwrap().in_control,
        InControl::Person
    );

    first.close().await;
    let view = second.expect_json("view", WAIT).await.unwrap();
    assert_eq!(view["role"], "control", "{view}");
    second.click(200.0, 350.0, VW, VH).await.unwrap();
    site.wait_for_report(|r| r["click"] == "a")
        .await
        .expect("the new controller's click lands");

    // Junk is answered, not fatal.
    second.send(json!({"t": "explode"})).await.unwrap();
    second.expect_json("error", WAIT).await.unwrap();
    second.send(json!({"t": "done"})).await.unwrap();
    let ended = second.expect_json("ended", WAIT).await.unwrap();
    assert_eq!(ended["reason"], "handed_back");
    assert!(matches!(
        second.next(WAIT).await.unwrap(),
        Some(LiveEvent::Closed) | None
    ));
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

async fn view_until(live: &mut LiveClient, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let view = live.expect_json("view", WAIT).await.unwrap();
        if pred(&view) {
            return view;
        }
        assert!(Instant::now() < deadline, "no such view; last {view}");
    }
}

async fn wait_for_url(c: &CovedClient, suffix: &str) -> cove_protocol::browser::BrowserState {
    let deadline = Instant::now() + WAIT;
    loop {
        let state = c.browser_state(LEAN).await.unwrap();
        if state.url.ends_with(suffix) || Instant::now() > deadline {
            assert!(state.url.ends_with(suffix), "still at {}", state.url);
            return state;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
