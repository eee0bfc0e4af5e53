//! Browser takeover against real Chromium: a second Chromium opens the takeover page and
//! drives the sandbox's browser through the live view; the fixture page inside the sandbox
//! reports what reached it.

mod control;
mod person;

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

async fn page_status(url: &str) -> u16 {
    reqwest::get(url).await.unwrap().status().as_u16()
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
