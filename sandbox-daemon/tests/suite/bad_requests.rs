//! Malformed requests get a 4xx and the error envelope: never a 500, never a panic.

use cove_harness::DaemonBuilder;
use cove_protocol::{ErrorCode, ErrorEnvelope};
use reqwest::Method;

#[tokio::test]
async fn malformed_requests_get_a_4xx_envelope() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .unwrap();
    // A live session, so requests naming it reach the handlers.
    d.client
        .exec(&cove_protocol::shell::ExecRequest::new("true"))
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let post = Method::POST;
    let get = Method::GET;
    let cases: Vec<(Method, &str, &[u8], ErrorCode)> = vec![
        (
            post.clone(),
            "/v1/shell/exec",
            b"",
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            b"{",
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            b"not json",
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            b"[]",
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            b"null",
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            b"{}",
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            br#"{"command": 5}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            br#"{"command": "ls", "blocking": "yes"}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            br#"{"command": "ls", "timeout_secs": -1}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            br#"{"command": "ls", "timeout": 5}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/exec",
            b"\xff\xfe\x00",
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/sessions/default/signal",
            br#"{"signal": "HUP"}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/sessions/default/signal",
            br#"{}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/sessions/default/input",
            br#"{"text": null}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/sessions/nobody/input",
            br#"{"text": "x"}"#,
            ErrorCode::NotFound,
        ),
        (
            post.clone(),
            "/v1/shell/sessions/bad%20name/input",
            br#"{"text": "x"}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/shell/sessions/%FF/signal",
            br#"{"signal": "INT"}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            get.clone(),
            "/v1/shell/sessions/nobody/output",
            b"",
            ErrorCode::NotFound,
        ),
        (
            get.clone(),
            "/v1/shell/sessions/default/output?since=abc",
            b"",
            ErrorCode::InvalidRequest,
        ),
        (
            get.clone(),
            "/v1/shell/sessions/default/output?since=-4",
            b"",
            ErrorCode::InvalidRequest,
        ),
        (
            get.clone(),
            "/v1/shell/sessions/default/output?bogus=1",
            b"",
            ErrorCode::InvalidRequest,
        ),
        (
            Method::DELETE,
            "/v1/shell/sessions/nobody",
            b"",
            ErrorCode::NotFound,
        ),
        (
            get.clone(),
            "/v1/files/list?depth=abc",
            b"",
            ErrorCode::InvalidRequest,
        ),
        (
            get.clone(),
            "/v1/files/list?depth=0",
            b"",
            ErrorCode::InvalidRequest,
        ),
        (
            get.clone(),
            "/v1/files/list?path=nowhere",
            b"",
            ErrorCode::NotFound,
        ),
        (
            post.clone(),
            "/v1/files/read",
            br#"{"path": 1}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/files/read",
            br#"{"path": "x", "start_line": "one"}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/files/create",
            br#"{"path": "x"}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/files/create",
            br#"{"path": "x", "content": "y", "mode": "999"}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            post.clone(),
            "/v1/files/create",
            br#"{"path": "", "content": "y"}"#,
            ErrorCode::InvalidPath,
        ),
        (
            post.clone(),
            "/v1/files/str_replace",
            br#"{"path": "x", "old_str": "a"}"#,
            ErrorCode::InvalidRequest,
        ),
        (Method::DELETE, "/v1/files", b"", ErrorCode::InvalidRequest),
        (
            Method::DELETE,
            "/v1/files?path=x&recursive=maybe",
            b"",
            ErrorCode::InvalidRequest,
        ),
        (
            get.clone(),
            "/v1/files/content",
            b"",
            ErrorCode::InvalidRequest,
        ),
        (
            Method::PUT,
            "/v1/files/content",
            b"data",
            ErrorCode::InvalidRequest,
        ),
        (
            get.clone(),
            "/v1/files/content?path=",
            b"",
            ErrorCode::IsDirectory,
        ),
    ];
    let long_name = "n".repeat(5000);
    let long_path = format!("/v1/files/content?path={long_name}");
    let mut all = cases;
    all.push((get.clone(), &long_path, b"", ErrorCode::InvalidPath));
    for (method, path, body, expected) in all {
        let response = http
            .request(method.clone(), format!("{}{path}", d.url))
            .bearer_auth(&d.token)
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.bytes().await.unwrap();
        let envelope: ErrorEnvelope = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!("{method} {path}: {status} without an envelope ({e}): {bytes:?}")
        });
        assert!(
            status.is_client_error(),
            "{method} {path}: {status} {envelope:?}"
        );
        assert_eq!(
            envelope.error.code, expected,
            "{method} {path}: {}",
            envelope.error.message
        );
        assert_eq!(status.as_u16(), expected.http_status(), "{method} {path}");
        assert!(!envelope.error.message.is_empty());
    }
    // The daemon is still fine.
    assert_eq!(d.client.health().await.unwrap().status, "ok");
    assert!(!d.stderr().contains("panicked"), "{}", d.stderr());
}
