//! coved as an MCP server, driven by the official Python SDK's client over streamable HTTP
//! and over stdio (`coved mcp`): the tools are listed with the schemas Cove's agent uses,
//! a command runs, a file is read, a page is browsed (its state as text and a screenshot),
//! and a refused path is a tool error. Browsers from other origins are refused.

use cove_harness::mcp_servers;
use cove_harness::{DaemonBuilder, FixtureSite};
use serde_json::Value;

/// Runs the SDK client fixture with `args`; its report.
async fn sdk_client(args: &[&str]) -> Value {
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(180),
        tokio::process::Command::new(mcp_servers::python().unwrap())
            .arg(mcp_servers::fixture("client.py"))
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the SDK client finished within 3 minutes")
    .unwrap();
    assert!(
        out.status.success(),
        "the SDK client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn texts(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What every transport must give the SDK's client.
fn check_report(report: &Value, site: &FixtureSite) {
    // The same tools, with the same schemas, as Cove's agent is given.
    let listed = report["tools"].as_object().unwrap();
    let mut defs = cove_tools::sandbox_tools();
    defs.extend(cove_tools::checkpoint_tools());
    assert_eq!(listed.len(), defs.len());
    for def in &defs {
        assert_eq!(listed[def.name], def.schema(), "{}", def.name);
    }
    assert_eq!(report["exec"]["is_error"], false);
    assert!(
        texts(&report["exec"]).contains("made-by-mcp"),
        "{}",
        report["exec"]
    );
    assert_eq!(report["read"]["is_error"], false);
    assert!(texts(&report["read"]).contains("made-by-mcp"));
    let browse = &report["browse"];
    assert_eq!(browse["is_error"], false, "{browse}");
    let page = texts(browse);
    assert!(
        page.contains(&format!("URL: {}", site.url("counter.html"))),
        "{page}"
    );
    assert!(page.contains("[1]<"), "controls are numbered: {page}");
    let images: Vec<&Value> = browse["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "image")
        .collect();
    assert_eq!(images.len(), 1, "{browse}");
    assert_eq!(images[0]["mime"], "image/jpeg");
    assert!(images[0]["bytes"].as_u64().unwrap() > 1000);
    assert_eq!(report["bad"]["is_error"], true);
    assert!(texts(&report["bad"]).contains("path_outside_workspace"));
    // The workspace's checkpoints: recorded, compared, restored, listed.
    let made = texts(&report["checkpoint"]);
    assert!(made.starts_with("Checkpoint c1:"), "{made}");
    let diff = texts(&report["diff"]);
    assert!(
        diff.contains("~ note.txt") && diff.contains("+changed"),
        "{diff}"
    );
    assert!(texts(&report["restore"]).contains("checkpoint c1 again"));
    assert!(texts(&report["checkpoints"]).contains("by mcp"));
}

#[tokio::test]
async fn the_python_sdk_drives_the_sandbox_over_streamable_http() {
    let site = FixtureSite::start().await.unwrap();
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .unwrap();
    let url = format!("{}/mcp", d.url);
    let report = sdk_client(&["http", &url, &d.token, &site.url("counter.html")]).await;
    check_report(&report, &site);
    assert_eq!(
        std::fs::read_to_string(d.path("note.txt")).unwrap(),
        "made-by-mcp\n"
    );

    // No token: 401, as for the API. Another origin's page, even with the token: 403.
    let http = reqwest::Client::new();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |origin: Option<&str>, token: Option<&str>| {
        let mut r = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize);
        if let Some(origin) = origin {
            r = r.header("origin", origin);
        }
        if let Some(token) = token {
            r = r.bearer_auth(token);
        }
        r.send()
    };
    assert_eq!(post(None, None).await.unwrap().status(), 401);
    let foreign = post(Some("http://evil.example"), Some(&d.token))
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let body: Value = foreign.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body.get("id").is_none());
    let own = url.trim_end_matches("/mcp").to_string();
    assert_eq!(
        post(Some(&own), Some(&d.token)).await.unwrap().status(),
        200
    );
}

#[tokio::test]
async fn the_python_sdk_drives_coved_mcp_over_stdio() {
    let site = FixtureSite::start().await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let report = sdk_client(&[
        "stdio",
        env!("CARGO_BIN_EXE_coved"),
        workspace.path().to_str().unwrap(),
        &site.url("counter.html"),
        store.path().to_str().unwrap(),
    ])
    .await;
    check_report(&report, &site);
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("note.txt")).unwrap(),
        "made-by-mcp\n"
    );
}
