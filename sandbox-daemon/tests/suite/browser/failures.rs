//! When things go wrong: bad navigations, hung pages, a dead or killed browser, malformed
//! requests; shell and files keep answering meanwhile.

use super::*;

#[tokio::test]
async fn bad_navigation_is_an_error_not_a_page() {
    let (d, site) = setup().await;
    let c = &d.client;
    // A port nothing listens on (and that Chromium does not consider unsafe).
    let port = cove_harness::ClosedPort::new().unwrap();
    let closed = port.addr();
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

/// A local HTTPS server whose certificate no one vouches for (openssl, Python's http.server).
struct SelfSignedSite {
    server: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl SelfSignedSite {
    fn start() -> SelfSignedSite {
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args([
                "-keyout",
                "key.pem",
                "-out",
                "cert.pem",
                "-subj",
                "/CN=127.0.0.1",
            ])
            .args(["-addext", "subjectAltName=IP:127.0.0.1"])
            .current_dir(dir.path())
            .output()
            .expect("openssl (installed by .ci/run)");
        assert!(made.status.success(), "{made:?}");
        std::fs::write(dir.path().join("index.html"), "<title>Secret</title>").unwrap();
        let serve = "import http.server, ssl\n\
            s = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n\
            c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
            c.load_cert_chain('cert.pem', 'key.pem')\n\
            s.socket = c.wrap_socket(s.socket, server_side=True)\n\
            print(s.server_address[1], flush=True)\n\
            s.serve_forever()\n";
        let mut server = std::process::Command::new("python3")
            .args(["-c", serve])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(server.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let port = line.trim().parse().expect("the server's port");
        SelfSignedSite {
            server,
            port,
            _dir: dir,
        }
    }
}

impl Drop for SelfSignedSite {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

#[tokio::test]
async fn a_page_whose_certificate_does_not_hold_is_refused() {
    let (d, _site) = setup().await;
    let c = &d.client;
    let https = SelfSignedSite::start();
    let bad = refused(
        c,
        &NavigateTo {
            url: format!("https://127.0.0.1:{}/", https.port),
        },
    )
    .await;
    assert_eq!(bad.code(), Some(&ErrorCode::NavigationFailed), "{bad}");
    assert!(bad.to_string().contains("ERR_CERT"), "{bad}");
    let state = c.browser_state(LEAN).await.unwrap();
    assert!(!state.title.contains("Secret"), "{state:?}");
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
