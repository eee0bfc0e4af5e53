//! What no client may exhaust or break: half-sent requests, FIFOs, token guessing, parallel
//! edits, image bombs, deep trees, downloads outside the workspace, the connection cap.

use super::*;

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
