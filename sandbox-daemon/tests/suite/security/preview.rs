//! The previews' boundaries: each app on an origin of its own, cookies that stay there,
//! other sites' posts refused, hosts checked first, the proxy reaching only the agent's
//! servers, a link's token opening its own origin only.

use super::*;

const HOSTILE: &str = include_str!("../../../../harness/fixtures/preview/hostile.py");

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
