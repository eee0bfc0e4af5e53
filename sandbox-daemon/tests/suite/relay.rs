//! `coved call`: the API carried over a command (as the Harbor agent's relay carries it): a
//! request read from a file that is then gone, a large answer spilled to a private file, the
//! daemon's own refusals relayed as answers, and exit codes for no daemon and no request.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use cove_harness::{DaemonBuilder, DaemonProcess};
use serde_json::{Value, json};

const MARK: &str = "cove-relay-response ";

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

fn port(d: &DaemonProcess) -> String {
    d.url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string()
}

fn call(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_coved"))
        .arg("call")
        .args(args)
        .env_remove("COVE_TOKEN")
        .output()
        .unwrap()
}

/// The answer line among whatever else was printed.
fn answer(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(MARK))
        .unwrap_or_else(|| panic!("no answer line in {stdout:?}"));
    serde_json::from_str(line).unwrap()
}

fn envelope(method: &str, path: &str, token: &str, body: &[u8]) -> Value {
    json!({
        "method": method,
        "path": path,
        "headers": [["authorization", format!("Bearer {token}")], ["content-type", "application/json"]],
        "body": BASE64.encode(body),
    })
}

#[tokio::test]
async fn a_request_from_a_file_is_relayed_and_a_large_answer_is_spilled_to_a_private_file() {
    let d = daemon().await;
    let scratch = tempfile::tempdir().unwrap();
    // Larger than a command line may carry: it comes in a file, removed once read.
    let content = "x".repeat(300 * 1024);
    let create = json!({"path": "notes.txt", "content": content});
    let request = scratch.path().join("request.json");
    let body = serde_json::to_vec(&create).unwrap();
    std::fs::write(
        &request,
        serde_json::to_vec(&envelope("POST", "/v1/files/create", &d.token, &body)).unwrap(),
    )
    .unwrap();
    let port = port(&d);
    let out = call(&["--port", &port, "--request-file", request.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(answer(&out)["status"], 200, "{:?}", answer(&out));
    assert!(!request.exists(), "the request file stays behind");
    assert_eq!(
        std::fs::read_to_string(d.path("notes.txt")).unwrap().len(),
        content.len()
    );

    // 5 MiB of bytes that are not text come back whole, in a file only its owner reads.
    let big: Vec<u8> = (0..5 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(d.path("big.bin"), &big).unwrap();
    let get = envelope("GET", "/v1/files/content?path=big.bin", &d.token, b"");
    let inline = BASE64.encode(serde_json::to_vec(&get).unwrap());
    let spill = scratch.path().to_str().unwrap();
    let out = call(&["--port", &port, "--request", &inline, "--spill-dir", spill]);
    let answered = answer(&out);
    assert_eq!(answered["status"], 200);
    assert!(
        answered.get("body").is_none(),
        "a 5 MiB body inline: {answered}"
    );
    let file = answered["body_file"].as_str().unwrap();
    assert!(file.starts_with(spill), "{file}");
    assert_eq!(std::fs::read(file).unwrap(), big);
    assert_eq!(
        std::fs::metadata(file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // The daemon's refusal is an answer like any other: relayed, not an error of the call.
    let wrong = envelope(
        "GET",
        "/v1/info",
        "not-the-token-not-the-token-not-the-token",
        b"",
    );
    let out = call(&[
        "--port",
        &port,
        "--request",
        &BASE64.encode(serde_json::to_vec(&wrong).unwrap()),
    ]);
    assert!(out.status.success());
    let answered = answer(&out);
    assert_eq!(answered["status"], 401);
    let body: Value =
        serde_json::from_slice(&BASE64.decode(answered["body"].as_str().unwrap()).unwrap())
            .unwrap();
    assert_eq!(body["error"]["code"], "unauthorized", "{body}");
}

#[tokio::test]
async fn the_token_may_come_in_the_environment_instead_of_the_command_line() {
    let d = daemon().await;
    let bare = json!({"method": "GET", "path": "/v1/info", "headers": [], "body": ""});
    let request = BASE64.encode(serde_json::to_vec(&bare).unwrap());
    let port = port(&d);
    let with_env = std::process::Command::new(env!("CARGO_BIN_EXE_coved"))
        .args(["call", "--port", &port, "--request", &request])
        .env("COVE_TOKEN", &d.token)
        .output()
        .unwrap();
    assert_eq!(answer(&with_env)["status"], 200, "{with_env:?}");
    let without = std::process::Command::new(env!("CARGO_BIN_EXE_coved"))
        .args(["call", "--port", &port, "--request", &request])
        .env_remove("COVE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(answer(&without)["status"], 401);
}

#[tokio::test]
async fn no_daemon_and_no_request_have_their_own_exit_codes_and_say_why() {
    let closed = cove_harness::ClosedPort::new().unwrap();
    let get = BASE64.encode(serde_json::to_vec(&envelope("GET", "/health", "t", b"")).unwrap());
    let out = call(&[
        "--port",
        &closed.addr().port().to_string(),
        "--request",
        &get,
    ]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        answer(&out)["error"]
            .as_str()
            .unwrap()
            .contains("no coved answers")
    );

    let out = call(&["--port", "1", "--request", "not base64!"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let not_a_path =
        BASE64.encode(serde_json::to_vec(&envelope("GET", "http://elsewhere/", "t", b"")).unwrap());
    let out = call(&["--port", "1", "--request", &not_a_path]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        answer(&out)["error"]
            .as_str()
            .unwrap()
            .contains("does not start with /")
    );
}
