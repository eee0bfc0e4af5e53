//! The browser's boundaries: no debugging port, a person's browser kept from the sandbox
//! itself, pages that cannot open windows or rewrite what the agent reads, the takeover's
//! token and commands held to the takeover.

use super::*;

/// C1, H1: Chromium is driven over a pipe, so no process of its tree listens on any port,
/// and coved listens on its API port alone (the pipe's one-shot bridge is closed).
#[tokio::test]
async fn the_browser_has_no_debugging_port_for_anyone_to_reach() {
    chromium_path();
    let d = daemon().await;
    let site = FixtureSite::start().await.unwrap();
    open(&d.client, &site.url("counter.html")).await;

    let browser: Vec<_> = procs::descendants(d.pid())
        .into_iter()
        .filter(|p| p.cmdline.contains("chromium") || p.cmdline.contains("chrome"))
        .collect();
    assert!(!browser.is_empty(), "the browser runs under coved");
    let main = browser
        .iter()
        .find(|p| p.ppid == d.pid())
        .expect("Chromium's main process");
    assert!(
        main.cmdline.contains("--remote-debugging-pipe")
            && !main.cmdline.contains("--remote-debugging-port"),
        "{}",
        main.cmdline
    );
    let browser_pids: HashSet<i32> = browser.iter().map(|p| p.pid).collect();
    let listening = listening_pids();
    let api_port = d.url.rsplit(':').next().unwrap();
    let mine: Vec<_> = listening
        .iter()
        .filter(|(_, pids)| pids.contains(&d.pid()))
        .map(|(local, _)| local.clone())
        .collect();
    assert_eq!(
        mine,
        vec![format!("127.0.0.1:{api_port}")],
        "coved listens on its API port only"
    );
    let theirs: Vec<_> = listening
        .iter()
        .filter(|(_, pids)| !pids.is_disjoint(&browser_pids))
        .collect();
    assert!(theirs.is_empty(), "the browser listens: {theirs:?}");
}

/// H1: a person taking over cannot point the browser at the sandbox itself (DevTools, coved,
/// the image's other servers, cloud metadata) or at pages that read files or run script.
#[tokio::test]
async fn a_person_cannot_steer_the_browser_to_the_sandbox_itself() {
    let (d, web, local, mut live) = person_on_the_web().await;
    let c = &d.client;

    let port = local
        .url("")
        .rsplit(':')
        .next()
        .unwrap()
        .trim_matches('/')
        .to_string();
    let attempts = [
        local.url("counter.html"),
        format!("localhost:{port}/counter.html"),
        format!("http://p{port}.localhost:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0.0.0.0:{port}/"),
        format!("{}/v1/info", d.url),
        "http://169.254.169.254/latest/meta-data/".into(),
        format!("file://{}", d.path("").display()),
        "file:///etc/passwd".into(),
        "data:text/html,<script>window.open('http://127.0.0.1:9222/json')</script>".into(),
        "javascript:location='http://127.0.0.1'".into(),
        "view-source:http://127.0.0.1/".into(),
        "chrome://version".into(),
    ];
    for url in &attempts {
        let error = person_opens(&mut live, url).await;
        assert!(
            error
                .as_ref()
                .and_then(|e| e["message"].as_str())
                .is_some_and(|m| !m.is_empty()),
            "{url}: {error:?}"
        );
    }
    let state = c.browser_state(LEAN).await.unwrap();
    assert!(state.url.ends_with("/takeover.html"), "{}", state.url);
    assert_eq!(state.tabs.len(), 1, "{:?}", state.tabs);

    // The control: a page on the web opens.
    person_opens(&mut live, &web.url("counter.html")).await;
    wait_for(c, "/counter.html").await;
    live.close().await;
}

/// H1: pages cannot open windows on their own (the popup blocker is on), so a page cannot
/// open a hundred tabs to scan for ports.
#[tokio::test]
async fn pages_cannot_open_windows_without_a_click() {
    chromium_path();
    let d = daemon().await;
    let page = "data:text/html,<title>opener</title><script>for (let i = 0; i < 50; i++) window.open('about:blank#' + i)</script>";
    let state = open(&d.client, page).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let state_after = d.client.browser_state(LEAN).await.unwrap();
    assert_eq!(state.tabs.len(), 1, "{:?}", state.tabs);
    assert_eq!(state_after.tabs.len(), 1, "{:?}", state_after.tabs);
    assert_eq!(state_after.title, "opener");
}

/// M3: a person's commands run one at a time and die with the takeover: a navigation still
/// waiting when they hand back never runs after the agent has the browser again.
#[tokio::test]
async fn a_persons_commands_end_with_the_takeover() {
    let (d, web, _, mut live) = person_on_the_web().await;
    let c = &d.client;

    // The first navigation hangs; the ones after it are refused while it lasts.
    live.send(json!({"t": "navigate", "url": web.url("hang")}))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for page in ["counter.html", "form.html", "keys.html"] {
        live.send(json!({"t": "navigate", "url": web.url(page)}))
            .await
            .unwrap();
        let error = live.expect_json("error", WAIT).await.unwrap();
        assert!(
            error["message"].as_str().unwrap().contains("busy"),
            "{error}"
        );
    }
    live.send(json!({"t": "done"})).await.unwrap();
    live.expect_json("ended", WAIT).await.unwrap();

    // The agent acts at once, and what the person queued never runs after it.
    let started = Instant::now();
    let state = open(c, &web.url("select.html")).await;
    assert!(state.url.ends_with("/select.html"), "{}", state.url);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the agent waited {:?} behind the person's navigation",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let state = c.browser_state(LEAN).await.unwrap();
    assert!(state.url.ends_with("/select.html"), "{}", state.url);
    assert_eq!(state.tabs.len(), 1);
}

/// L6: the takeover socket serves the takeover page only (a page elsewhere that learnt the
/// token cannot use it from the person's browser), and the token leaves the page's address
/// as soon as it loads, yet a reload keeps working.
#[tokio::test]
async fn the_takeover_token_stays_on_the_takeover_page() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    chromium_path();
    let d = daemon().await;
    let c = &d.client;
    open(c, "data:text/html,<title>agent page</title>hi").await;
    let grant = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: None,
        })
        .await
        .unwrap();
    let socket_url = format!("{}/takeover/ws", d.url.replacen("http://", "ws://", 1));
    let connect = |origin: Option<String>| {
        let mut request = socket_url.as_str().into_client_request().unwrap();
        let headers = request.headers_mut();
        headers.insert(
            "sec-websocket-protocol",
            format!("cove-takeover, cove-token.{}", grant.token)
                .parse()
                .unwrap(),
        );
        if let Some(origin) = origin {
            headers.insert("origin", origin.parse().unwrap());
        }
        tokio_tungstenite::connect_async(request)
    };
    for origin in [
        "http://evil.example",
        "null",
        "http://p8000.localhost:1",
        "http://127.0.0.1:1",
    ] {
        let refused = connect(Some(origin.into())).await.expect_err(origin);
        assert!(refused.to_string().contains("403"), "{origin}: {refused}");
    }
    // The control: the page's own origin, and clients that are not browsers.
    assert!(connect(Some(d.url.clone())).await.is_ok());
    assert!(connect(None).await.is_ok());

    let mut person = Person::launch().await.unwrap();
    person.goto(&grant.url).await.unwrap();
    let frames = "Number(document.getElementById('view').dataset.frames || 0) > 0";
    person
        .wait_until(frames, WAIT)
        .await
        .expect("frames arrive");
    let href = person.eval("location.href").await.unwrap();
    assert_eq!(
        href,
        format!("{}/takeover", d.url),
        "the token stayed in the URL"
    );
    person
        .eval("window.beforeReload = true; location.reload()")
        .await
        .ok();
    person
        .wait_until(&format!("!window.beforeReload && {frames}"), WAIT)
        .await
        .expect("frames arrive after a reload");
    person.close().await;
}

/// A page that tampers with everything a script in its own world could rely on: builtins
/// return 30 MB, a fake agent waits in the global the real one used, and every element
/// reports the "Real" button's box as the "Decoy" button's.
const TAMPERING_PAGE: &str = r#"<!doctype html><title>tampering</title>
<script>
function report(o){fetch("/report",{method:"POST",body:JSON.stringify(o),keepalive:true});}
const big = "A".repeat(30 * 1024 * 1024);
const slice = String.prototype.slice;
String.prototype.trim = function () { return big; };
String.prototype.slice = function () { return this.length > 1e6 ? big : slice.apply(this, arguments); };
const fake = {version: 7, snapshots: new Map(), snapshot: () => ({url: "x", title: "fake", elements: "[1]<button>Fake", element_count: 1, truncated: false, pixels_above: 0, pixels_below: 0, viewport: {width: 1, height: 1}, content: "fake"})};
Object.defineProperty(globalThis, "__coveAgent", {get: () => fake, set: () => {}});
const rect = Element.prototype.getBoundingClientRect;
Element.prototype.getBoundingClientRect = function () {
  const decoy = document.getElementById("decoy");
  return this.id === "real" && decoy ? rect.call(decoy) : rect.call(this);
};
</script>
<p>Some text on the page.</p>
<button id=real onclick="report({clicked: 'real'})">Real</button>
<div style="height:200px"></div>
<button id=decoy onclick="report({clicked: 'decoy'})">Decoy</button>"#;

/// L1: what the agent reads of a page is worked out where the page's scripts cannot reach,
/// and held to its caps in the daemon: a page cannot lift the caps, fake the element list, or
/// move a click onto another element.
#[tokio::test]
async fn a_page_cannot_rewrite_what_the_agent_reads() {
    chromium_path();
    let d = daemon().await;
    let site = FixtureSite::start().await.unwrap();
    site.put_file(
        "tampering.html",
        "text/html",
        TAMPERING_PAGE.as_bytes().to_vec(),
    );
    open(&d.client, &site.url("files/tampering.html")).await;
    let state = d
        .client
        .browser_state(StateQuery {
            screenshot: false,
            content: true,
            full: false,
        })
        .await
        .unwrap();
    assert_eq!(state.title, "tampering");
    let content = state.content.unwrap_or_default();
    assert!(content.len() < 30_000, "content of {} bytes", content.len());
    assert!(content.contains("Some text on the page"), "{content}");
    assert!(state.elements.len() < 20_000);
    assert!(!state.elements.contains("Fake"), "{}", state.elements);
    let real = cove_harness::browser_text::index_of(&state.elements, ">Real")
        .unwrap_or_else(|| panic!("no Real button in {}", state.elements));
    d.client
        .browser(
            &cove_protocol::browser::ClickElement {
                index: real,
                snapshot_id: Some(state.snapshot_id),
            },
            LEAN,
        )
        .await
        .unwrap();
    let clicked = site
        .wait_for_report(|r| r.get("clicked").is_some())
        .await
        .expect("a button was clicked");
    assert_eq!(clicked["clicked"], "real", "the click went to {clicked}");
}

/// H1: while a person has the browser, what their tab loads is checked, not only what they
/// type: a page on the web that redirects, or links, to the sandbox itself or to a metadata
/// address fails with "access denied", and once the agent has the browser back it may open
/// its own servers again.
#[tokio::test]
async fn a_persons_tab_cannot_be_led_to_the_sandbox_by_a_page() {
    let (d, web, local, mut live) = person_on_the_web().await;
    let c = &d.client;
    let deny = |url: String| format!("{}?to={}", web.url("redirect"), url.replace(':', "%3A"));
    for target in [
        local.url("counter.html"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("{}/v1/info", d.url),
    ] {
        // Start from a page of the web, so the error page below is this attempt's.
        person_opens(&mut live, &web.url("takeover.html")).await;
        wait_for(c, "/takeover.html").await;
        person_opens(&mut live, &deny(target.clone())).await;
        let deadline = Instant::now() + WAIT;
        loop {
            let state = c.browser_state(LEAN).await.unwrap();
            if state.url.starts_with("chrome-error://")
                || state.elements.contains("ERR_ACCESS_DENIED")
            {
                break;
            }
            assert!(
                !state.url.starts_with(&target),
                "the redirect reached {target}"
            );
            assert!(Instant::now() < deadline, "still {}", state.url);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert!(local.reports().is_empty(), "{:?}", local.reports());
    // The control: a redirect that stays on the web is followed.
    person_opens(&mut live, &deny(web.url("counter.html"))).await;
    wait_for(c, "/counter.html").await;
    // The agent has the browser back: its own servers open again.
    c.takeover_end().await.unwrap();
    let state = open(c, &local.url("counter.html")).await;
    assert!(state.url.ends_with("/counter.html"), "{}", state.url);
}

/// L1: during a takeover Back and a page's own requests are checked too: a loopback site
/// the agent visited before does not come back when the person goes back (the browser
/// keeps no back/forward cache, so Back asks again), and a page on the web cannot make the
/// person's browser fetch from the sandbox's loopback, nor open a WebSocket to it (which
/// the request interception does not see: Chromium's Local Network Access checks, which
/// coved turns on, hold it before its handshake).
#[tokio::test]
async fn back_and_a_pages_requests_are_checked_during_a_takeover() {
    chromium_path();
    let d = daemon().await;
    let c = &d.client;
    let internal = EchoServer::start().await;
    let agents = FixtureSite::start().await.unwrap();
    let web = FixtureSite::start_on_network().await.unwrap();
    // The agent looked at an internal app earlier, then went to its own site.
    open(
        c,
        &format!("http://127.0.0.1:{}/unrelated/before", internal.port),
    )
    .await;
    assert_eq!(internal.requests().len(), 1);
    open(c, &agents.url("counter.html")).await;
    let (_, mut live) = take_over(c).await;

    live.send(json!({"t": "back"})).await.unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let state = c.browser_state(LEAN).await.unwrap();
        if state.url.starts_with("chrome-error://") || state.elements.contains("ERR_ACCESS_DENIED")
        {
            break;
        }
        assert!(
            !state.elements.contains("ok"),
            "Back brought the internal app back: {}",
            state.url
        );
        assert!(Instant::now() < deadline, "still {}", state.url);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(internal.requests().len(), 1, "{:?}", internal.requests());

    // A page of the web whose script reaches for the sandbox's loopback.
    web.put_file(
        "leak.html",
        "text/html",
        format!(
            "<title>leak</title><script>
            const socket = new Promise(done => {{ const ws = new WebSocket('ws://127.0.0.1:{port}/unrelated/socket'); ws.onerror = ws.onclose = ws.onopen = done; }});
            const fetched = fetch('http://127.0.0.1:{port}/unrelated/leak', {{mode: 'no-cors'}}).catch(() => null);
            Promise.all([socket, fetched]).finally(() => document.title = 'tried');
            </script>",
            port = internal.port
        )
        .into_bytes(),
    );
    person_opens(&mut live, &web.url("files/leak.html")).await;
    let deadline = Instant::now() + WAIT;
    while c.browser_state(LEAN).await.unwrap().title != "tried" {
        assert!(Instant::now() < deadline, "the page never tried");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        internal.requests().len(),
        1,
        "a page's script reached the loopback: {:?}",
        internal.requests()
    );
    // The control: the agent, with the browser back, reaches it as before.
    c.takeover_end().await.unwrap();
    open(
        c,
        &format!("http://127.0.0.1:{}/unrelated/after", internal.port),
    )
    .await;
    assert_eq!(internal.requests().len(), 2);
}
