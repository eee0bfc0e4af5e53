//! `cove serve`'s guards over real HTTP: the token, the login link and its cookie, other
//! origins refused; uploads and workspace files served safely; takeover links only to
//! whoever asks; a page view's address reads one workspace for a while.

use super::serve::Server;
use super::*;

#[tokio::test]
async fn the_api_needs_the_token_or_the_login_cookie_and_refuses_other_origins() {
    let cove = Cove::new(Wire::OpenAi).await;
    let server = Server::start(&cove, &[]).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let threads = server.url("/v1/threads");
    let bare = http.get(&threads).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    let said: Value = bare.json().await.unwrap();
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap()
            .contains("login link"),
        "{said}"
    );
    let wrong = http
        .get(&threads)
        .bearer_auth("x".repeat(64))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = http
        .get(&threads)
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);

    // The login link: once, for an HttpOnly SameSite=Strict cookie that browsers send only
    // under a path drawn at login (a host's cookies go to every port of it, where the agent's
    // own servers may listen); the page learns the path from the fragment.
    let login = http.get(&server.login).send().await.unwrap();
    assert_eq!(login.status(), 303);
    let cookie = login.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let location = login.headers()["location"].to_str().unwrap().to_string();
    let key = location
        .strip_prefix("/#key=")
        .unwrap_or_else(|| panic!("{location}"))
        .to_string();
    assert!(key.len() >= 32, "{key}");
    assert!(cookie.ends_with(&format!("Path=/k/{key}/")), "{cookie}");
    let session = cookie.split(';').next().unwrap().to_string();
    let again = http.get(&server.login).send().await.unwrap();
    assert_eq!(again.status(), 401, "a login link works once");
    for path in ["/v1/threads".to_string(), format!("/k/{key}/v1/threads")] {
        let with_cookie = http
            .get(server.url(&path))
            .header("cookie", &session)
            .send()
            .await
            .unwrap();
        assert_eq!(with_cookie.status(), 200, "{path}");
    }
    let keyed_without_cookie = http
        .get(server.url(&format!("/k/{key}/v1/threads")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        keyed_without_cookie.status(),
        401,
        "the key is no credential"
    );

    // Another site's page cannot act with the person's cookie (nor with the token).
    let forged = http
        .post(&threads)
        .header("cookie", &session)
        .header("origin", "http://evil.example")
        .json(&json!({"task": "exfiltrate"}))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let (_, listed) = server.get("/v1/threads").await;
    assert_eq!(
        listed["threads"].as_array().unwrap().len(),
        0,
        "nothing was created"
    );
    let own = http
        .get(&threads)
        .header("cookie", &session)
        .header("origin", &server.base)
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 200);

    // Bad input.
    let (status, said) = server.get("/v1/threads/nope").await;
    assert_eq!(status, 404, "{said}");
    let (status, said) = server.post("/v1/threads", json!({"task": "  "})).await;
    assert_eq!(status, 400, "{said}");
    // A client names a sandbox; it does not send the server's token to an address.
    let (status, said) = server
        .post(
            "/v1/threads",
            json!({"task": "x", "sandbox": "http://10.0.0.1:7700"}),
        )
        .await;
    assert_eq!(status, 400, "{said}");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cove.toml"),
        "{said}"
    );
    // Nor any sandbox but the server's own, unless the operator lists it.
    let (status, said) = server
        .post("/v1/threads", json!({"task": "x", "sandbox": "nowhere"}))
        .await;
    assert_eq!(status, 403, "{said}");
    assert_eq!(said["error"]["code"], "sandbox_not_allowed", "{said}");
    let (_, listed) = server.get("/v1/threads").await;
    assert_eq!(listed["threads"].as_array().unwrap().len(), 0, "{listed}");
    server.kill().await;
}

#[tokio::test]
async fn attachments_land_in_the_workspace_and_its_files_screenshots_are_served_safely() {
    let cove = Cove::new(Wire::OpenAi).await;
    let site = cove_harness::FixtureSite::start().await.unwrap();
    cove.share_port(site.port());
    let page = site.url("form.html");
    cove.llm.push_fn(move |request| {
        let said = request.last_message_text();
        if !(said.contains("uploads/data.csv") && said.contains("uploads/data-2.csv")) {
            return Turn::text("").call("complete", json!({"text": "NO FILES"}));
        }
        Turn::text("")
            .call(
                "create_file",
                json!({"file_path": "site/index.html", "file_contents": "<h1>Hi</h1><script>document.title = 'ran'</script>"}),
            )
            .call("browser_navigate_to", json!({ "url": page }))
    });
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "made"})));
    let server = Server::start(&cove, &[]).await;

    // Held files: a bad name and an unknown id are refused, and nothing starts.
    let (status, said) = server.upload("../escape", b"x").await;
    assert_eq!(status, 400, "{said}");
    let (status, said) = server
        .post(
            "/v1/threads",
            json!({"task": "Use the file", "attachments": ["0123abcd"]}),
        )
        .await;
    assert_eq!(status, 400, "{said}");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap()
            .contains("POST /v1/uploads")
    );
    let (_, listed) = server.get("/v1/threads").await;
    assert_eq!(listed["threads"].as_array().unwrap().len(), 0);

    // Two files of one name both land, the second under a new one.
    let (status, first) = server.upload("data.csv", b"a,b\n1,2\n").await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["size"], 8);
    let (_, second) = server.upload("data.csv", b"c\n3\n").await;
    // Held for this user alone: the folders 0700, the file 0600.
    let held: Vec<std::path::PathBuf> = walk(&cove.home.path().join("data/cove/serve/uploads"));
    assert_eq!(held.len(), 2, "{held:?}");
    for file in &held {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(file), 0o600, "{}", file.display());
        assert_eq!(mode(file.parent().unwrap()), 0o700, "{}", file.display());
    }
    let thread = server
        .create(json!({
            "task": "Use the files",
            "model": "openai/scripted",
            "attachments": [first["id"], second["id"]],
        }))
        .await;
    let mut sse = server.stream(&thread, None).await;
    let events = sse.until("thread_run_end").await;
    let complete = events
        .iter()
        .find(|(_, e)| e["type"] == "complete")
        .unwrap();
    assert_eq!(complete.1["text"], "made");
    let told = events
        .iter()
        .find(|(_, e)| e["type"] == "user_message")
        .unwrap();
    assert!(
        told.1["text"]
            .as_str()
            .unwrap()
            .contains("uploads/data.csv (8 B), uploads/data-2.csv (4 B)"),
        "{}",
        told.1
    );
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("uploads/data-2.csv")).unwrap(),
        "c\n3\n"
    );
    // A held file goes once it is in a workspace.
    let (status, _) = server
        .post(
            &format!("/v1/threads/{thread}/reply"),
            json!({"text": "again", "attachments": [first["id"]]}),
        )
        .await;
    assert_eq!(status, 400);

    // The run has ended: the files are read through a sandbox opened for it.
    let (status, listing) = server
        .get(&format!("/v1/threads/{thread}/files?path=.&depth=3"))
        .await;
    assert_eq!(status, 200, "{listing}");
    let paths: Vec<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for want in ["uploads/data.csv", "uploads/data-2.csv", "site/index.html"] {
        assert!(paths.contains(&want), "{want} in {paths:?}");
    }
    let content = |path: &str| format!("/v1/threads/{thread}/files/content?path={path}");
    let html = server
        .raw(reqwest::Method::GET, &content("site/index.html"))
        .await;
    assert_eq!(html.status(), 200);
    assert_eq!(html.headers()["content-type"], "text/html; charset=utf-8");
    assert_eq!(html.headers()["x-content-type-options"], "nosniff");
    let policy = html.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        policy.starts_with("sandbox;") && policy.contains("default-src 'none'"),
        "{policy}"
    );
    let saved = server
        .raw(
            reqwest::Method::GET,
            &format!("{}&download=true", content("uploads/data.csv")),
        )
        .await;
    assert_eq!(
        saved.headers()["content-disposition"],
        "attachment; filename*=UTF-8''data.csv"
    );
    assert_eq!(saved.headers()["content-type"], "application/octet-stream");
    assert_eq!(saved.text().await.unwrap(), "a,b\n1,2\n");
    let outside = server
        .raw(reqwest::Method::GET, &content("../../etc/passwd"))
        .await;
    let status = outside.status().as_u16();
    let said: Value = outside.json().await.unwrap();
    assert!((400..500).contains(&status), "{status} {said}");
    assert_eq!(said["error"]["code"], "path_outside_workspace", "{said}");
    let missing = server.raw(reqwest::Method::GET, &content("nope.txt")).await;
    assert_eq!(missing.status(), 404);

    // The browser as the browser call left it, and the newest.
    let navigated = &events
        .iter()
        .find(|(_, e)| e["type"] == "tool_completed" && e["tool"] == "browser_navigate_to")
        .unwrap_or_else(|| panic!("{events:?}"))
        .1;
    let call = format!(
        "{}/{}",
        navigated["run_id"].as_str().unwrap(),
        navigated["call_id"].as_str().unwrap()
    );
    for which in [call.as_str(), "latest"] {
        let shot = server
            .raw(
                reqwest::Method::GET,
                &format!("/v1/threads/{thread}/screenshots/{which}"),
            )
            .await;
        assert_eq!(shot.status(), 200, "{which}");
        assert_eq!(shot.headers()["content-type"], "image/jpeg");
        let jpeg = shot.bytes().await.unwrap();
        assert_eq!(&jpeg[..2], &[0xFF, 0xD8], "a JPEG");
    }
    let none = server
        .raw(
            reqwest::Method::GET,
            &format!(
                "/v1/threads/{thread}/screenshots/{}/nope",
                navigated["run_id"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(none.status(), 404);

    // No run, no browser to take over.
    let (status, said) = server
        .post(&format!("/v1/threads/{thread}/takeover"), json!({}))
        .await;
    assert_eq!(status, 409, "{said}");
    assert_eq!(said["error"]["code"], "not_running");
    server.kill().await;
}

#[tokio::test]
async fn a_takeover_link_goes_to_whoever_asks_the_api_never_into_the_events() {
    let cove = Cove::new(Wire::Anthropic).await;
    cove.llm.push(Turn::text("").call(
        "web_browser_takeover",
        json!({"text": "Please log in for me"}),
    ));
    cove.llm.push_fn(|request| {
        let verdict = if request.all_text().contains("logged in now") {
            "thanks"
        } else {
            "NO NOTE"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let server = Server::start(&cove, &[]).await;
    let thread = server
        .create(json!({"task": "Log in", "model": "anthropic/scripted"}))
        .await;
    let mut sse = server.stream(&thread, None).await;
    let asked = sse.until("takeover").await.pop().unwrap().1;
    assert!(
        asked["url"].is_null() && asked["token"].is_null(),
        "{asked}"
    );
    let (status, link) = server
        .post(&format!("/v1/threads/{thread}/takeover"), json!({}))
        .await;
    assert_eq!(status, 200, "{link}");
    assert_eq!(link["asked_by_agent"], true);
    let url = link["url"].as_str().unwrap().to_string();
    assert!(url.contains("/takeover?token="), "{url}");
    let token = url.split("token=").nth(1).unwrap().to_string();
    // The link opens the takeover page.
    let page = reqwest::get(&url).await.unwrap();
    assert_eq!(page.status(), 200);

    // Handing back by a reply; the run goes on.
    let (status, said) = server
        .post(
            &format!("/v1/threads/{thread}/reply"),
            json!({"text": "I am logged in now"}),
        )
        .await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(said["delivered"], "run");
    let rest = sse.until("thread_run_end").await;
    assert!(
        rest.iter()
            .any(|(_, e)| e["type"] == "user_message" && e["text"] == "I am logged in now")
    );
    assert_eq!(
        rest.iter()
            .find(|(_, e)| e["type"] == "complete")
            .unwrap()
            .1["text"],
        "thanks"
    );
    // Nothing stored carries the token.
    let mut again = server.stream(&thread, None).await;
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    let mut all = String::new();
    for _ in 0..view["last_event"].as_u64().unwrap() {
        all.push_str(&again.next().await.1.to_string());
    }
    assert!(!all.contains(&token));
    let db = std::fs::read(cove.home.path().join("cove.db")).unwrap();
    let wal = std::fs::read(cove.home.path().join("cove.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "the takeover token is in the database"
        );
    }
    server.kill().await;
}

#[tokio::test]
async fn a_page_view_address_reads_one_workspace_for_a_while_and_nothing_else() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "ok"})));
    std::fs::write(cove.workspace.join("index.html"), "<h1>hi</h1>").unwrap();
    std::fs::write(cove.workspace.join("style.css"), "h1 { color: red }").unwrap();
    let server = Server::start(&cove, &[]).await;
    let thread = server.create(json!({"task": "Look"})).await;
    let mut sse = server.stream(&thread, None).await;
    while sse.next().await.1["type"] != "thread_run_end" {}
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let minted = http
        .get(server.url(&format!("/v1/threads/{thread}/files/view?path=index.html")))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(minted.status(), 303);
    let at = minted.headers()["location"].to_str().unwrap().to_string();
    assert!(
        at.starts_with("/view/") && at.ends_with("/index.html"),
        "{at}"
    );
    // No cookie, no token: the address is the key. The page is sandboxed, without scripts.
    let page = http.get(server.url(&at)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(
        page.headers()["referrer-policy"],
        "no-referrer",
        "a link followed from the page does not pass its key on"
    );
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.starts_with("sandbox;") && !csp.contains("script"),
        "{csp}"
    );
    // Its style sheet, beside it, as a style sheet.
    let sheet_at = at.replace("/index.html", "/style.css");
    let sheet = http.get(server.url(&sheet_at)).send().await.unwrap();
    assert_eq!(sheet.status(), 200);
    assert!(
        sheet.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    // Nothing outside the workspace, and no other key.
    let out = at.replace("/index.html", "/%2e%2e/%2e%2e/etc/hostname");
    let outside = http.get(server.url(&out)).send().await.unwrap();
    assert_ne!(outside.status(), 200, "{out}");
    let forged = http
        .get(server.url("/view/not-a-key/index.html"))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 404);
    // Minting takes the API's token like any route.
    let anonymous = http
        .get(server.url(&format!("/v1/threads/{thread}/files/view?path=index.html")))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    server.kill().await;
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
