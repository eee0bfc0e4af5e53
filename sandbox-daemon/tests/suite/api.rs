//! Auth on every route, token sources, identity, OpenAPI, and clean shutdown.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use cove_harness::{DaemonBuilder, DaemonProcess, procs};
use cove_protocol::api::{ENDPOINTS, Method, Op};
use cove_protocol::shell::ExecRequest;
use cove_protocol::{ErrorCode, ErrorEnvelope};
use reqwest::StatusCode;
use rustix::process::Signal;

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

fn concrete(path: &str) -> String {
    path.replace("{name}", "default")
}

fn reqwest_method(m: Method) -> reqwest::Method {
    match m {
        Method::Get => reqwest::Method::GET,
        Method::Post => reqwest::Method::POST,
        Method::Put => reqwest::Method::PUT,
        Method::Delete => reqwest::Method::DELETE,
    }
}

async fn envelope(response: reqwest::Response) -> (StatusCode, ErrorEnvelope) {
    let status = response.status();
    let body = response.bytes().await.unwrap();
    let env: ErrorEnvelope = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{status}: not an error envelope ({e}): {body:?}"));
    (status, env)
}

#[tokio::test]
async fn every_route_but_health_demands_the_token() {
    let d = daemon().await;
    let http = reqwest::Client::new();
    let protected: Vec<_> = ENDPOINTS.iter().filter(|e| e.auth).collect();
    assert!(protected.len() >= 16, "the table lists every route");
    for ep in &protected {
        let url = format!("{}{}", d.url, concrete(ep.path));
        let method = reqwest_method(ep.method);
        let attempts = [
            http.request(method.clone(), &url),
            http.request(method.clone(), &url)
                .bearer_auth("wrong-token"),
            http.request(method.clone(), &url)
                .header("Authorization", format!("Basic {}", d.token)),
            http.request(method.clone(), &url)
                .bearer_auth(format!("{}x", d.token)),
        ];
        for attempt in attempts {
            let (status, env) = envelope(attempt.send().await.unwrap()).await;
            // Past 20 wrong tokens in a minute the address is told to wait: still a refusal.
            let refused = (status, &env.error.code)
                == (StatusCode::UNAUTHORIZED, &ErrorCode::Unauthorized)
                || (status, &env.error.code)
                    == (StatusCode::TOO_MANY_REQUESTS, &ErrorCode::TooManyFailures);
            assert!(
                refused,
                "{} {}: {status} {:?}",
                ep.method.as_str(),
                ep.path,
                env.error.code
            );
        }
        // With the token the route exists: whatever it answers, it is not "no such route".
        let response = http
            .request(method.clone(), &url)
            .bearer_auth(&d.token)
            .send()
            .await
            .unwrap();
        let status = response.status();
        assert_ne!(status, StatusCode::UNAUTHORIZED, "{}", ep.path);
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{}", ep.path);
        // The MCP server answers a bare request in its own protocol's terms (not 404).
        if ep.op == Op::Mcp {
            assert_ne!(status, StatusCode::NOT_FOUND, "{}", ep.path);
        } else if !status.is_success() {
            let (_, env) = envelope(response).await;
            assert_ne!(
                env.error.code,
                ErrorCode::UnknownRoute,
                "{} is not routed",
                ep.path
            );
        }
    }
    // Paths that are not routes at all are guarded too: no probing without the token.
    for path in ["/v1/nope", "/admin", "/v1/shell/sessions/x/y/z", "/v2/info"] {
        let url = format!("{}{path}", d.url);
        let (status, env) = envelope(http.get(&url).send().await.unwrap()).await;
        assert_eq!(
            (status, env.error.code),
            (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized)
        );
        let (status, env) =
            envelope(http.get(&url).bearer_auth(&d.token).send().await.unwrap()).await;
        assert_eq!(
            (status, env.error.code),
            (StatusCode::NOT_FOUND, ErrorCode::UnknownRoute)
        );
    }
    let (status, env) = envelope(
        http.patch(format!("{}/v1/shell/exec", d.url))
            .bearer_auth(&d.token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, env.error.code),
        (StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed)
    );
    // Health needs nothing.
    let health = http.get(format!("{}/health", d.url)).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
}

#[tokio::test]
async fn info_and_openapi_describe_the_daemon() {
    let d = daemon().await;
    let info = d.client.info().await.unwrap();
    assert_eq!(info.name, "coved");
    assert_eq!(info.api_version, "v1");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.contains(&"shell".to_string()));
    assert!(info.capabilities.contains(&"files".to_string()));
    assert!(info.capabilities.contains(&"browser".to_string()));
    assert!(info.capabilities.contains(&"vision".to_string()));
    assert_eq!(
        std::path::Path::new(&info.workspace),
        std::fs::canonicalize(d.root()).unwrap()
    );

    let doc = d.client.openapi().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    // Checked by a validator no one here wrote (openapi-spec-validator, from PyPI).
    cove_harness::openapi::validate(&doc).unwrap();
    for ep in ENDPOINTS {
        let op = &doc["paths"][ep.path][ep.method.as_str().to_ascii_lowercase()];
        assert!(
            op.is_object(),
            "{} {} missing from the document",
            ep.method.as_str(),
            ep.path
        );
        let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
        assert_eq!(secured, ep.auth, "{}", ep.path);
    }
    let exec = &doc["components"]["schemas"]["ExecRequest"];
    assert_eq!(exec["required"], serde_json::json!(["command"]));
    assert_eq!(exec["properties"]["timeout_secs"]["default"], 60);
}

#[tokio::test]
async fn a_generated_token_is_stored_privately_and_announced() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .generated_token()
        .spawn()
        .await
        .unwrap();
    let file = d.state_dir.join("token");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(d.token.len() >= 32, "a strong token");
    assert!(
        d.wait_for_stderr(&file.display().to_string()).await,
        "says where: {}",
        d.stderr()
    );
    assert!(
        !d.stderr().contains(&d.token),
        "never prints the token itself"
    );
    d.client.info().await.unwrap();
}

#[tokio::test]
async fn a_new_token_replaces_the_one_the_daemon_started_with() {
    let started_with = "started-with-this-token-0123456789abcdef";
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .token_in_env(started_with)
        .spawn()
        .await
        .unwrap();
    // A token too short is refused, and the old one still works.
    let refused = d.client.rotate_token("short").await.unwrap_err();
    assert!(
        matches!(&refused, cove_protocol::client::ClientError::Api { code: ErrorCode::InvalidRequest, message, .. } if message.contains("at least 32")),
        "{refused:?}"
    );
    d.client.info().await.unwrap();

    let new = "the-token-handed-out-with-it-0123456789abcdef";
    d.client.rotate_token(new).await.unwrap();
    let old = d.client.info().await.unwrap_err();
    assert!(
        matches!(
            old,
            cove_protocol::client::ClientError::Api {
                code: ErrorCode::Unauthorized,
                ..
            }
        ),
        "{old:?}"
    );
    let client =
        cove_protocol::client::CovedClient::new(d.client.base_url().as_str(), new).unwrap();
    client.info().await.unwrap();
    assert_eq!(
        client
            .exec(&ExecRequest::new("echo on"))
            .await
            .unwrap()
            .output,
        "on\n"
    );
    assert!(!d.stderr().contains(new), "never prints the token itself");
}

#[tokio::test]
async fn tokens_come_from_the_environment_or_a_file() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .token_in_env("from-the-environment-0123456789abcdef")
        .spawn()
        .await
        .unwrap();
    d.client.info().await.unwrap();
    // The sessions never see the daemon's token.
    let out = d
        .client
        .exec(&ExecRequest::new("echo ${COVE_TOKEN:-absent}"))
        .await
        .unwrap();
    assert_eq!(out.output, "absent\n");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tok");
    std::fs::write(&file, "from-a-file-0123456789abcdef0123456789\n").unwrap();
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .token_file(&file)
        .spawn()
        .await
        .unwrap();
    assert_eq!(d.token, "from-a-file-0123456789abcdef0123456789");
    d.client.info().await.unwrap();
}

#[tokio::test]
async fn sigterm_and_sigint_stop_the_daemon_and_every_child_it_started() {
    for (n, signal) in [Signal::TERM, Signal::INT].into_iter().enumerate() {
        let d = daemon().await;
        let marker = format!("{}{n}", 70_000 + std::process::id() % 10_000);
        d.client
            .exec(&ExecRequest::new(format!(
                "sleep {marker}1 & setsid sleep {marker}2 &"
            )))
            .await
            .unwrap();
        d.client
            .exec(
                &ExecRequest::new(format!("sleep {marker}3"))
                    .in_session("busy")
                    .non_blocking(),
            )
            .await
            .unwrap();
        let mut before = Vec::new();
        for _ in 0..50 {
            before = procs::matching(&format!("sleep {marker}"));
            if before.len() == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(before.len(), 3, "{before:?}");
        let pid = d.pid();
        let status = d.stop_with(signal).await.unwrap();
        assert!(status.success(), "clean exit on {signal:?}: {status}");
        let survivors: Vec<_> = procs::matching(&format!("sleep {marker}"))
            .into_iter()
            .filter(|p| !p.is_zombie())
            .collect();
        assert!(
            survivors.is_empty(),
            "left behind after {signal:?}: {survivors:?}"
        );
        assert!(
            procs::status_kib(pid, "VmRSS").is_none(),
            "the daemon is gone"
        );
    }
}
