//! Who has the browser: frames only after a change, the agent's actions waiting while a
//! person has control, tokens that no longer open anything, a second viewer who watches
//! and then takes over.

use super::*;

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
