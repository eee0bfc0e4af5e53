//! The trust boundaries of SECURITY.md, tried as an attacker would against a real `coved`
//! (the findings of the November 2026 review, by their numbers). Each test makes the attack
//! and its obvious variants, and checks a control that shows the test can see success.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use cove_harness::images::{blank_png, gif_bomb};
use cove_harness::person::Person;
use cove_harness::preview::{app_origin, free_port, origin, trade_link};
use cove_harness::viewer::chromium_path;
use cove_harness::{DaemonBuilder, DaemonProcess, FixtureSite, LiveClient, procs};
use cove_protocol::browser::{NavigateTo, StateQuery};
use cove_protocol::client::CovedClient;
use cove_protocol::files::CreateRequest;
use cove_protocol::shell::ExecRequest;
use cove_protocol::takeover::{StartTakeover, TakeoverGrant};
use serde_json::json;

const LEAN: StateQuery = StateQuery {
    screenshot: false,
    content: false,
    full: false,
};
const WAIT: Duration = Duration::from_secs(15);

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

async fn open(c: &CovedClient, url: &str) -> cove_protocol::browser::BrowserState {
    c.browser(&NavigateTo { url: url.into() }, LEAN)
        .await
        .unwrap_or_else(|e| panic!("{url} loads: {e}"))
}

/// Hands the browser to a person: the grant, and the person's socket once it shows the view.
async fn take_over(c: &CovedClient) -> (TakeoverGrant, LiveClient) {
    let grant = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: None,
        })
        .await
        .unwrap();
    let mut live = LiveClient::connect(&grant.url, &grant.token).await.unwrap();
    live.expect_json("view", WAIT).await.unwrap();
    (grant, live)
}

/// A person has the browser of a fresh daemon, showing a page of a site on the web; a site on
/// loopback stands for the sandbox's own services.
async fn person_on_the_web() -> (DaemonProcess, FixtureSite, FixtureSite, LiveClient) {
    chromium_path();
    let d = daemon().await;
    let web = FixtureSite::start_on_network().await.unwrap();
    let local = FixtureSite::start().await.unwrap();
    open(&d.client, &web.url("takeover.html")).await;
    let (_, live) = take_over(&d.client).await;
    (d, web, local, live)
}

/// Has the person open `url`, again while the page says it is still busy with the last one;
/// returns the first other answer the page got within a moment, if any.
async fn person_opens(live: &mut LiveClient, url: &str) -> Option<serde_json::Value> {
    loop {
        live.send(json!({"t": "navigate", "url": url}))
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut answer = None;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match live.next(left).await.unwrap() {
                Some(cove_harness::live::LiveEvent::Json(j)) if j["type"] == "error" => {
                    answer = Some(j);
                    break;
                }
                Some(_) => {}
                None => break,
            }
        }
        match answer {
            Some(j) if j["message"].as_str().is_some_and(|m| m.contains("busy")) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => return other,
        }
    }
}

/// Creates `path` in the workspace with `content`.
async fn put(c: &CovedClient, path: &str, content: &str) {
    c.create(&CreateRequest {
        path: path.into(),
        content: content.into(),
        mode: None,
    })
    .await
    .unwrap();
}

/// Waits until the browser shows a page whose URL ends with `suffix`.
async fn wait_for(c: &CovedClient, suffix: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let url = c.browser_state(LEAN).await.unwrap().url;
        if url.ends_with(suffix) {
            return;
        }
        assert!(Instant::now() < deadline, "the browser stayed on {url}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Pids listening on TCP, as `ss` (iproute2) reports them.
fn listening_pids() -> Vec<(String, HashSet<i32>)> {
    let out = std::process::Command::new("ss")
        .args(["-Hltnp"])
        .output()
        .expect("ss (iproute2) is installed: the security tests read listening sockets with it");
    assert!(out.status.success(), "ss failed: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let local = line.split_whitespace().nth(3).unwrap_or("").to_string();
            let pids = line
                .split("pid=")
                .skip(1)
                .filter_map(|p| p.split(',').next()?.parse().ok())
                .collect();
            (local, pids)
        })
        .collect()
}

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

const HOSTILE: &str = include_str!("../../../harness/fixtures/preview/hostile.py");

/// Starts the hostile app in a shell session, trying to read `targets`; returns its port
/// and preview link.
async fn start_hostile(c: &CovedClient, targets: &[String]) -> (u16, String) {
    put(c, "hostile.py", HOSTILE).await;
    let port = free_port();
    let targets = serde_json::to_string(targets).unwrap();
    c.exec(
        &ExecRequest::new(format!(
            "python3 hostile.py {port} {}",
            cove_harness::shell_quote(&targets)
        ))
        .in_session("hostile")
        .non_blocking(),
    )
    .await
    .unwrap();
    for _ in 0..100 {
        let exposed = c.expose(port).await.unwrap();
        if exposed.listening {
            return (port, exposed.url);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the hostile app never listened");
}

/// What the hostile app has logged so far.
fn hostile_log(d: &DaemonProcess) -> String {
    std::fs::read_to_string(d.path("hostile.log")).unwrap_or_default()
}

/// H2: an app the agent runs is previewed on an origin of its own, so the service worker it
/// registers controls that origin alone and never sees the takeover page (nor its token),
/// and its page cannot read the workspace's files or the API with the person's cookies.
#[tokio::test]
async fn a_previewed_app_cannot_reach_the_takeover_or_the_files() {
    chromium_path();
    let d = daemon().await;
    let c = &d.client;
    put(c, "secret.txt", "the workspace's secret").await;
    let files = c.expose(1).await.unwrap().files_url;
    let files_origin = files.split("/?").next().unwrap().to_string();
    let targets = vec![
        format!("{files_origin}/secret.txt"),
        format!("{}/preview/secret.txt", d.url),
        format!("{}/v1/info", d.url),
    ];
    let (_, link) = start_hostile(c, &targets).await;
    let app_origin = link.split("/?").next().unwrap().to_string();

    // The person opens the files link, then the app's link, in their browser.
    let mut person = Person::launch().await.unwrap();
    person.goto(&files).await.unwrap();
    person
        .wait_until(
            "document.body && document.body.innerText.includes('secret.txt')",
            WAIT,
        )
        .await
        .expect("the files' listing opens");
    person.goto(&link).await.unwrap();
    if person
        .wait_until("document.title === 'done'", WAIT)
        .await
        .is_err()
    {
        let seen = person
            .eval("navigator.serviceWorker.getRegistrations().then(rs => location.href + ' | ' + document.title + ' | ' + isSecureContext + ' | ' + JSON.stringify(rs.map(r => [r.scope, !!r.installing, !!r.waiting, !!r.active, r.active && r.active.state])))")
            .await;
        panic!(
            "the app's page did not run: {seen:?}; log {}",
            hostile_log(&d)
        );
    }
    let log = hostile_log(&d);
    assert!(
        log.contains(&format!("sw {app_origin}/")),
        "the worker's scope is the app's origin: {log}"
    );
    for target in &targets {
        assert!(
            log.contains(&format!("blocked {target}")),
            "{target}: {log}"
        );
    }
    assert!(!log.contains("the workspace's secret"), "{log}");

    // Later the agent asks for help; the person opens the takeover link in the same browser.
    open(c, "data:text/html,<title>agent page</title>").await;
    let grant = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: None,
        })
        .await
        .unwrap();
    person.goto(&grant.url).await.unwrap();
    person
        .wait_until("document.title.includes('Cove takeover')", WAIT)
        .await
        .expect("the takeover page opens");
    // The control: the worker is alive on its own origin and reports what it sees there.
    // (It may have reported the first visit's own requests already: wait for this one.)
    person.goto(&format!("{app_origin}/again")).await.unwrap();
    let deadline = Instant::now() + WAIT;
    let again = format!("steal {app_origin}/again");
    while !hostile_log(&d).contains(&again) {
        assert!(
            Instant::now() < deadline,
            "the worker never ran: {}",
            hostile_log(&d)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = hostile_log(&d);
    assert!(!log.contains("takeover"), "the app saw the takeover: {log}");
    assert!(!log.contains(&grant.token), "the app has the token: {log}");
    person.close().await;
}

/// M1: each daemon's preview cookie has a name of its own and stays on its origin: two
/// sandboxes on one host never overwrite each other's, and no other service of the host
/// (another port, another name) receives it.
#[tokio::test]
async fn preview_cookies_stay_with_their_sandbox_and_origin() {
    chromium_path();
    let a = daemon().await;
    let b = daemon().await;
    for (d, text) in [(&a, "hello-a"), (&b, "hello-b")] {
        put(&d.client, "index.txt", text).await;
    }
    let link_a = a.client.expose(1).await.unwrap().files_url;
    let link_b = b.client.expose(1).await.unwrap().files_url;
    let page_a = format!("{}/index.txt", link_a.split("/?").next().unwrap());
    // An unrelated service of the host that shows what it receives.
    let echo = EchoServer::start().await;

    let mut person = Person::launch().await.unwrap();
    let body = "document.body ? document.body.innerText : ''";
    person.goto(&link_a).await.unwrap();
    person.goto(&page_a).await.unwrap();
    assert_eq!(person.eval(body).await.unwrap(), "hello-a");
    person.goto(&link_b).await.unwrap();
    person
        .wait_until(
            "document.body && document.body.innerText.includes('index.txt')",
            WAIT,
        )
        .await
        .unwrap();
    person.goto(&page_a).await.unwrap();
    assert_eq!(
        person.eval(body).await.unwrap(),
        "hello-a",
        "b's cookie replaced a's"
    );

    for host in ["127.0.0.1", "localhost"] {
        person
            .goto(&format!("http://{host}:{}/unrelated", echo.port))
            .await
            .unwrap();
    }
    let seen = echo.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen.iter().all(|r| !r.contains("cove_preview")),
        "a preview cookie reached another service: {seen:?}"
    );
    person.close().await;
}

/// A server on loopback that keeps the head of every request it gets.
struct EchoServer {
    port: u16,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl EchoServer {
    async fn start() -> EchoServer {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    if head.starts_with("GET /unrelated") {
                        log.lock().unwrap().push(head);
                    }
                    let _ = stream
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                        )
                        .await;
                });
            }
        });
        EchoServer { port, seen, task }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// M1, M7: a page of another site cannot make a preview change state (a cross-site form
/// post), with or without the preview token in force.
#[tokio::test]
async fn other_sites_cannot_post_to_a_preview() {
    for public in [false, true] {
        let mut builder = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"));
        if public {
            builder = builder.arg("--preview-public");
        }
        let d = builder.spawn().await.unwrap();
        let c = &d.client;
        let (_, link) = start_hostile(c, &[]).await;
        let app = link.split("/?").next().unwrap().to_string();
        let http = cove_harness::preview::client(&[&app]);
        let mut cookie = String::new();
        if !public {
            cookie = trade_link(&http, &link).await.unwrap().0;
        }
        let post = |headers: &[(&str, &str)]| {
            let mut request = http
                .post(format!("{app}/form"))
                .header("cookie", &cookie)
                .body("x=1");
            for (k, v) in headers {
                request = request.header(*k, *v);
            }
            request.send()
        };
        // Another sandbox's app, this one's files, another app here, the web: all are
        // other origins, whose pages may link to the app but not send it requests.
        let files = origin(&c.expose(1).await.unwrap().files_url);
        let neighbour = app_origin(&link, 1);
        for headers in [
            vec![
                ("sec-fetch-site", "cross-site"),
                ("origin", "http://evil.example"),
            ],
            vec![("sec-fetch-site", "same-site"), ("origin", files.as_str())],
            vec![
                ("sec-fetch-site", "same-site"),
                ("origin", neighbour.as_str()),
            ],
            vec![("origin", "http://evil.example")],
            vec![("origin", files.as_str())],
            vec![("origin", "null")],
            vec![("origin", "http://127.0.0.1:9")],
        ] {
            let answer = post(&headers).await.unwrap();
            assert_eq!(answer.status(), 403, "public={public} {headers:?}");
        }
        // The control: the app's own pages (and requests without a browser's origin) post.
        for headers in [
            vec![("sec-fetch-site", "same-origin"), ("origin", app.as_str())],
            vec![("origin", app.as_str())],
            vec![],
        ] {
            let answer = post(&headers).await.unwrap();
            assert_eq!(answer.status(), 200, "public={public} {headers:?}");
        }
        let log = hostile_log(&d);
        assert_eq!(log.matches("POST /form").count(), 3, "{log}");
    }
}

/// M7, L2: a `Host` that is not a host and port never reaches a link, and behind a public
/// URL any other host is refused (DNS rebinding), on every route, before anything else.
#[tokio::test]
async fn hosts_are_checked_before_they_reach_a_link_or_a_route() {
    let d = daemon().await;
    let http = reqwest::Client::new();
    let api = |host: &str, path: &str, method: reqwest::Method| {
        http.request(method, format!("{}{path}", d.url))
            .bearer_auth(d.client.token())
            .header("host", host)
            .body(r#"{"port": 8000}"#)
            .send()
    };
    for host in ["evil.example/x?", "127.0.0.1:1@evil.example", "a b", "[::1"] {
        for path in ["/v1/preview/expose", "/v1/browser/takeover"] {
            let answer = api(host, path, reqwest::Method::POST).await.unwrap();
            assert_eq!(answer.status(), 400, "{host} {path}");
            let body = answer.text().await.unwrap();
            assert!(!body.contains("evil"), "{body}");
        }
    }
    // A well-formed name that is not this machine's gets no preview link: it has no
    // subdomains for the apps' origins.
    let answer = api(
        "sandbox.internal:7700",
        "/v1/preview/expose",
        reqwest::Method::POST,
    )
    .await
    .unwrap();
    assert_eq!(answer.status(), 409);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], "no_preview_origin", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--public-url")
    );

    // Behind a public URL, and with previews open to anyone: a rebinding page's host is
    // refused for the API, the previews and the paths that lead to them.
    let public = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--preview-public")
        .arg("--public-url")
        .arg("https://sb.example.com")
        .spawn()
        .await
        .unwrap();
    std::fs::write(public.path("x.txt"), "workspace file").unwrap();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for host in [
        "rebind.attacker.example",
        "p8000.rebind.attacker.example",
        "files.attacker.example",
    ] {
        for path in [
            "/preview/x.txt",
            "/x.txt",
            "/proxy/8000/",
            "/v1/info",
            "/health",
        ] {
            let answer = http
                .get(format!("{}{path}", public.url))
                .header("host", host)
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 421, "{host}{path}");
        }
    }
    // The control: the public name's own files origin serves the file.
    let files = public.client.expose(1).await.unwrap().files_url;
    let files_host = origin(&files).trim_start_matches("https://").to_string();
    assert!(files_host.ends_with(".sb.example.com"), "{files}");
    let answer = http
        .get(format!("{}/x.txt", public.url))
        .header("host", &files_host)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.text().await.unwrap(), "workspace file");
    // Links are built from the public URL, whatever host the caller used.
    chromium_path();
    let grant = public
        .client
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: Some(5),
        })
        .await
        .unwrap();
    assert!(
        grant
            .url
            .starts_with("https://sb.example.com/takeover?token="),
        "{}",
        grant.url
    );
}

/// C1, M7: the proxy reaches only servers the agent's shell sessions started: not coved
/// itself (no recursion), not a service someone else runs on the machine, whatever the
/// port's spelling.
#[tokio::test]
async fn the_proxy_reaches_only_the_agents_servers() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--preview-public")
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    let daemon_port: u16 = d.url.rsplit(':').next().unwrap().parse().unwrap();
    let other = EchoServer::start().await;
    let (agents, link) = start_hostile(c, &[]).await;
    let http = cove_harness::preview::client(&[
        &app_origin(&link, daemon_port),
        &app_origin(&link, other.port),
        &link,
    ]);
    for port in [daemon_port, other.port] {
        let refused = c.expose(port).await.unwrap_err();
        assert!(refused.to_string().contains("port_not_agents"), "{refused}");
        for url in [
            format!("{}/unrelated", app_origin(&link, port)),
            format!("{}/v1/info", app_origin(&link, port)),
        ] {
            let answer = http.get(&url).send().await.unwrap();
            assert_eq!(answer.status(), 403, "{url}");
        }
        let answer = http
            .get(format!("{}/proxy/{port}/unrelated", d.url))
            .bearer_auth(c.token())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 403, "/proxy/{port}/");
    }
    assert!(other.requests().is_empty(), "{:?}", other.requests());
    // Recursion through the daemon's own origin goes nowhere.
    let mut path = String::new();
    for _ in 0..50 {
        path.push_str(&format!("/proxy/{daemon_port}"));
    }
    let answer = http
        .get(format!("{}{path}/preview/x.txt", d.url))
        .bearer_auth(c.token())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 403);
    // Ports spelled any way but plain digits are not ports.
    for spelling in [
        "0",
        format!("0{agents}").as_str(),
        &format!("+{agents}"),
        "%31%32",
    ] {
        let answer = http
            .get(format!("{}/proxy/{spelling}/x", d.url))
            .bearer_auth(c.token())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "/proxy/{spelling}/");
    }
    // Overlong URLs are refused before anything is forwarded.
    let long = format!("{}/{}", link.split("/?").next().unwrap(), "a".repeat(9000));
    assert_eq!(http.get(&long).send().await.unwrap().status(), 414);
    // The control: the agent's own server is reached.
    let answer = http
        .get(format!("{}/ok", link.split("/?").next().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
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

/// Open file descriptors of `pid`.
fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// M4: connections that never finish a request (slowloris) are closed after the idle
/// timeout, past the connection cap new ones are closed at once, and the daemon serves again
/// as soon as they are gone.
#[tokio::test]
async fn half_sent_requests_cannot_hold_the_daemon() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--idle-timeout-secs")
        .arg("2")
        .arg("--max-connections")
        .arg("64")
        .spawn()
        .await
        .unwrap();
    let addr = d.url.strip_prefix("http://").unwrap().to_string();
    let health = || async {
        let answer = tokio::time::timeout(
            Duration::from_secs(5),
            reqwest::get(format!("{}/health", d.url)),
        )
        .await;
        matches!(answer, Ok(Ok(r)) if r.status() == 200)
    };
    assert!(health().await);
    let baseline = open_fds(d.pid());
    let mut sockets = Vec::new();
    for _ in 0..300 {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n").await;
        sockets.push(s);
    }
    // Every one of them is closed by the daemon: at once past the cap, else at the timeout.
    let deadline = Instant::now() + Duration::from_secs(15);
    for mut s in sockets {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut buf = [0u8; 256];
        let read = tokio::time::timeout(left, s.read(&mut buf)).await;
        assert!(
            read.is_ok(),
            "a half-sent request was held past the idle timeout"
        );
    }
    assert!(health().await, "the daemon serves again");
    let after = open_fds(d.pid());
    assert!(
        after <= baseline + 8,
        "descriptors leaked: {baseline} before, {after} after"
    );
    // A kept-alive connection that goes quiet is closed too.
    let mut idle = tokio::net::TcpStream::connect(&addr).await.unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 1024];
    let n = idle.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let closed = tokio::time::timeout(Duration::from_secs(10), idle.read(&mut buf)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
}

/// M2: a FIFO (or any file that is not a regular one) is refused at once by every route
/// that reads files, so clients cannot pin the daemon's threads on it.
#[tokio::test]
async fn fifos_are_refused_without_blocking_anyone() {
    let d = daemon().await;
    let c = &d.client;
    let fifo = d.path("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let http = reqwest::Client::new();
    let mut calls = Vec::new();
    for i in 0..600 {
        let http = http.clone();
        let url = d.url.clone();
        let token = c.token().to_string();
        calls.push(tokio::spawn(async move {
            let request = match i % 3 {
                0 => http.get(format!("{url}/v1/files/content?path=pipe")),
                1 => http
                    .post(format!("{url}/v1/files/read"))
                    .body(r#"{"path": "pipe"}"#),
                _ => http.get(format!("{url}/preview/pipe")),
            };
            tokio::time::timeout(Duration::from_secs(20), request.bearer_auth(token).send())
                .await
                .map(|r| r.map(|r| r.status().as_u16()))
        }));
    }
    for call in calls {
        let status = call.await.unwrap().expect("answered in time").unwrap();
        assert!(status == 409 || status == 403, "{status}");
    }
    let read = c
        .read(&cove_protocol::files::ReadRequest {
            path: "pipe".into(),
            start_line: None,
            end_line: None,
        })
        .await
        .unwrap_err();
    assert!(read.to_string().contains("not_regular_file"), "{read}");
    let see = c
        .see_image(&cove_protocol::vision::SeeImageRequest {
            path: Some("pipe".into()),
            url: None,
        })
        .await
        .unwrap_err();
    assert!(see.to_string().contains("not_regular_file"), "{see}");
    // Everything else still works.
    c.list(&Default::default()).await.unwrap();
    let out = c.exec(&ExecRequest::new("echo still here")).await.unwrap();
    assert_eq!(out.output.trim(), "still here");
}

/// L5: a short token is refused at start with a clear message; a token on the command line
/// is warned about; wrong tokens are logged and, past a limit, answered 429, while the right
/// token keeps working.
#[tokio::test]
async fn tokens_are_long_and_guessing_is_noticed() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_coved"))
        .args(["--listen", "127.0.0.1:0", "--token", "short"])
        .arg("--workspace")
        .arg(dir.path().join("ws"))
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .env_remove("COVE_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("5 characters") && said.contains("at least 32"),
        "{said}"
    );

    let d = daemon().await;
    assert!(
        d.wait_for_stderr("--token puts the secret in the process list")
            .await,
        "{}",
        d.stderr()
    );
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..25 {
        let answer = http
            .get(format!("{}/v1/info", d.url))
            .bearer_auth("0123456789abcdef0123456789abcdef")
            .send()
            .await
            .unwrap();
        statuses.push(answer.status().as_u16());
        if answer.status() == 429 {
            assert!(answer.headers().contains_key("retry-after"));
        }
    }
    assert_eq!(&statuses[..20], &[401; 20]);
    assert_eq!(&statuses[20..], &[429; 5]);
    // The right token is never refused, so guessing cannot lock the controller out.
    d.client.info().await.unwrap();
    assert!(d.wait_for_stderr("a wrong token for the API").await);
    assert!(
        d.wait_for_stderr("refusing this address's wrong tokens with 429")
            .await
    );
    assert_eq!(
        d.stderr().matches("a wrong token for the API").count(),
        5,
        "the log is not flooded"
    );
}

/// M6: parallel edits of one file (a model's parallel tool calls), through any of its names,
/// are applied one after another: every edit that answers success is in the file.
#[tokio::test]
async fn parallel_edits_of_one_file_are_never_lost() {
    let d = daemon().await;
    let c = &d.client;
    let lines = 40;
    let text: String = (0..lines).map(|i| format!("line{i}=old\n")).collect();
    put(c, "race.txt", &text).await;
    std::os::unix::fs::symlink("race.txt", d.path("alias.txt")).unwrap();
    for round in 0..5 {
        let mut edits = Vec::new();
        for i in 0..lines {
            let c = c.clone();
            let (from, to) = if round == 0 {
                (format!("line{i}=old"), format!("line{i}=r0"))
            } else {
                (
                    format!("line{i}=r{}", round - 1),
                    format!("line{i}=r{round}"),
                )
            };
            let path = if i % 2 == 0 { "race.txt" } else { "alias.txt" };
            edits.push(tokio::spawn(async move {
                c.str_replace(&cove_protocol::files::StrReplaceRequest {
                    path: path.into(),
                    old_str: from,
                    new_str: to,
                })
                .await
            }));
        }
        for edit in edits {
            edit.await.unwrap().expect("every edit succeeds");
        }
        let text = std::fs::read_to_string(d.path("race.txt")).unwrap();
        for i in 0..lines {
            assert!(
                text.contains(&format!("line{i}=r{round}\n")),
                "round {round}: {text}"
            );
        }
    }
    assert!(
        std::fs::symlink_metadata(d.path("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// M5: images that claim more pixels than the daemon decodes are refused from their header,
/// before a byte of pixels is allocated; large real ones are still prepared, a few at a time.
#[tokio::test]
async fn image_bombs_are_refused_before_they_are_decoded() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::write(d.path("bigscreen.gif"), gif_bomb()).unwrap();
    assert!(gif_bomb().len() < 64);
    blank_png(&d.path("huge.png"), 13000, 13000).unwrap();
    assert!(std::fs::metadata(d.path("huge.png")).unwrap().len() < 1_000_000);
    for name in ["bigscreen.gif", "huge.png"] {
        let refused = c
            .see_image(&cove_protocol::vision::SeeImageRequest {
                path: Some(name.into()),
                url: None,
            })
            .await
            .unwrap_err();
        let said = refused.to_string();
        assert!(
            said.contains("payload_too_large") && said.contains("pixels"),
            "{name}: {said}"
        );
    }
    // The control: a 24-megapixel image is prepared, also four at once from the web.
    blank_png(&d.path("photo.png"), 6000, 4000).unwrap();
    let site = FixtureSite::start().await.unwrap();
    site.put_file(
        "photo.png",
        "image/png",
        std::fs::read(d.path("photo.png")).unwrap(),
    );
    let mut calls = Vec::new();
    for _ in 0..4 {
        let c = c.clone();
        let url = site.url("files/photo.png");
        calls.push(tokio::spawn(async move {
            c.see_image(&cove_protocol::vision::SeeImageRequest {
                path: None,
                url: Some(url),
            })
            .await
        }));
    }
    for call in calls {
        let seen = call.await.unwrap().unwrap();
        assert_eq!((seen.width, seen.height), (1620, 1080));
        assert_eq!((seen.original_width, seen.original_height), (6000, 4000));
    }
}

/// L4: deleting a tree holds two directories open however deep it is, so a tree of 15,000
/// levels goes even under a limit of 64 open files, and links inside it are not followed.
#[tokio::test]
async fn deleting_a_deep_tree_needs_no_descriptor_per_level() {
    let d = daemon().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep.txt"), "not the workspace's").unwrap();
    let script = format!(
        "import os\nos.chdir({root:?})\nos.mkdir('deep')\nos.chdir('deep')\nfor i in range(15000):\n    if i % 1000 == 0:\n        open('f.txt', 'w').write('x')\n        os.symlink({outside:?}, 'link')\n    os.mkdir('d')\n    os.chdir('d')\n",
        root = d.root().display().to_string(),
        outside = outside.path().display().to_string(),
    );
    let made = std::process::Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(made.success());
    let limited = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(d.pid().to_string())
        .arg("--nofile=64:64")
        .status()
        .expect("prlimit (util-linux) is installed");
    assert!(limited.success());
    d.client
        .delete(&cove_protocol::files::DeleteQuery {
            path: "deep".into(),
            recursive: true,
        })
        .await
        .unwrap();
    assert!(!d.path("deep").exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("keep.txt")).unwrap(),
        "not the workspace's"
    );
    let left: Vec<_> = std::fs::read_dir(d.root()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// L3: what a page downloads lands in the workspace's `downloads/` folder, where the agent
/// sees it, never in the home folder or a place of the page's choosing.
#[tokio::test]
async fn downloads_land_in_the_workspace_only() {
    chromium_path();
    let home = tempfile::tempdir().unwrap();
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .env("HOME", home.path())
        .env("XDG_DOWNLOAD_DIR", home.path().join("Downloads"))
        .spawn()
        .await
        .unwrap();
    let page = "data:text/html,<a id=a download=\"../../dropped-by-page.sh\" href=\"data:text/plain,echo pwned\">x</a><script>a.click()</script>";
    open(&d.client, page).await;
    let landed = d.path("downloads");
    let deadline = Instant::now() + WAIT;
    let found = loop {
        let names: Vec<String> = std::fs::read_dir(&landed)
            .map(|dir| {
                dir.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.ends_with(".crdownload"))
                    .collect()
            })
            .unwrap_or_default();
        if !names.is_empty() {
            break names;
        }
        assert!(Instant::now() < deadline, "nothing was downloaded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("dropped-by-page.sh"), "{found:?}");
    assert_eq!(
        std::fs::read_to_string(landed.join(&found[0])).unwrap(),
        "echo pwned"
    );
    let elsewhere: Vec<_> = walk(home.path());
    assert!(
        !elsewhere.iter().any(|p| p.contains("dropped-by-page")),
        "{elsewhere:?}"
    );
    assert!(!d.path("dropped-by-page.sh").exists());
    assert!(
        !d.root()
            .parent()
            .unwrap()
            .join("dropped-by-page.sh")
            .exists()
    );
}

/// Every path under `dir`.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(entry.path().display().to_string());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&entry.path()));
        }
    }
    out
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

/// H2, M1: a preview token opens the origin its link is for, nothing else: an app that
/// learns its own link's token (its service worker sees it) cannot read the files or another
/// app with it; the files register no service worker; another run's addresses are dead; and
/// a link cannot send the browser off-site.
#[tokio::test]
async fn a_preview_token_opens_its_own_origin_only() {
    let d = daemon().await;
    let c = &d.client;
    put(c, "secret.txt", "the workspace's secret").await;
    let (port, link) = start_hostile(c, &[]).await;
    let app_token = link.split("cove_preview=").nth(1).unwrap().to_string();
    let files_link = c.expose(1).await.unwrap().files_url;
    let files = origin(&files_link);
    let other_app = app_origin(&link, 1);
    let http = cove_harness::preview::client(&[&link, &files_link, &other_app]);
    for target in [&files, &other_app] {
        let answer = http
            .get(format!("{target}/secret.txt?cove_preview={app_token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 401, "{target}");
        let (cookie, _) = trade_link(&http, &link).await.unwrap();
        let answer = http
            .get(format!("{target}/secret.txt"))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 401, "{target} took the app's cookie");
    }
    // The files' own token works there (the control), but registers no worker.
    let (cookie, _) = trade_link(&http, &files_link).await.unwrap();
    let answer = http
        .get(format!("{files}/secret.txt"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.text().await.unwrap(), "the workspace's secret");
    let worker = http
        .get(format!("{files}/secret.txt"))
        .header("cookie", &cookie)
        .header("service-worker", "script")
        .send()
        .await
        .unwrap();
    assert_eq!(worker.status(), 403);
    // Another run's (or sandbox's) address of the same app is dead.
    let stale = link.replacen(&format!("p{port}-"), &format!("p{port}-0000"), 1);
    let stale_origin = origin(&stale);
    let http_stale = cove_harness::preview::client(&[&stale]);
    let answer = http_stale.get(&stale).send().await.unwrap();
    assert_eq!(answer.status(), 404, "{stale_origin}");
    // A link whose path starts with `//` leads to this origin, not to a host of that name.
    let tricky = link.replacen("/?cove_preview=", "//evil.example/?cove_preview=", 1);
    let (_, location) = trade_link(&http, &tricky).await.unwrap();
    assert_eq!(location, "/evil.example/");
}

/// M4: WebSockets count towards the connection cap like any connection (an upgrade does not
/// give its place back), and a takeover takes a few pages at most.
#[tokio::test]
async fn sockets_count_towards_the_connection_cap() {
    use tokio::io::AsyncReadExt;
    chromium_path();
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--max-connections")
        .arg("16")
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    open(c, "data:text/html,<title>agent page</title>hi").await;
    let grant = c
        .takeover_start(&StartTakeover {
            message: None,
            ttl_secs: None,
        })
        .await
        .unwrap();
    let mut viewers = Vec::new();
    for _ in 0..8 {
        viewers.push(LiveClient::connect(&grant.url, &grant.token).await.unwrap());
    }
    let Err(ninth) = LiveClient::connect(&grant.url, &grant.token).await else {
        panic!("a ninth page on one takeover was let in");
    };
    assert_eq!(
        cove_harness::live::refusal_status(&ninth),
        Some(429),
        "{ninth:#}"
    );
    // The eight sockets hold places: of 16 more connections, each either keeps a place
    // (the daemon waits for its request) or is closed at once, and at most 8 keep one.
    let addr = d.url.strip_prefix("http://").unwrap().to_string();
    let mut held = Vec::new();
    let mut closed_at_once = 0;
    for _ in 0..16 {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let mut buf = [0u8; 16];
        match tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf)).await {
            Err(_) => held.push(s),
            Ok(_) => closed_at_once += 1,
        }
    }
    assert!(
        held.len() <= 8 && closed_at_once >= 8,
        "{} kept a place beside 8 sockets under a cap of 16",
        held.len()
    );
    assert!(!held.is_empty(), "the cap left no place at all");
    // Closing the sockets gives the places back.
    drop(held);
    for viewer in viewers {
        viewer.close().await;
    }
    let deadline = Instant::now() + WAIT;
    loop {
        let answer = reqwest::get(format!("{}/health", d.url)).await;
        if matches!(answer, Ok(ref r) if r.status() == 200) {
            break;
        }
        assert!(Instant::now() < deadline, "the places never came back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
