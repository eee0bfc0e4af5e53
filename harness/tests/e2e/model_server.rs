//! A model server named only by its address, as a person points Cove at a local one: the
//! model it serves is asked for, and a wrong address says what to write instead.

use std::io::{Read, Write};
use std::net::TcpListener;

use cove_harness::Turn;
use cove_harness::llm::Wire;
use serde_json::json;

use super::{Cove, explain};

/// `cove run TASK` with only `OPENAI_BASE_URL=base` to go on (no key, no model).
async fn run_at(cove: &Cove, base: &str, task: &str) -> std::process::Output {
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut cmd = cove.command(&["run", task, "--workspace", &ws, "--no-prompt"]);
    cmd.env("OPENAI_BASE_URL", base)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    cmd.output().await.unwrap()
}

#[tokio::test]
async fn the_model_a_server_serves_is_used_and_not_priced() {
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "hello"})));
    let out = run_at(&cove, &cove.llm.openai_base_url(), "Say hello").await;
    assert!(out.status.success(), "{}", explain(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("· openai/scripted ·"), "{stdout}");
    let end = stdout
        .lines()
        .find(|l| l.starts_with("run ") && l.contains("completed"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        !end.contains('$'),
        "no price for a model Cove does not know: {end}"
    );
    assert_eq!(cove.llm.received()[0].body["model"], "scripted");
}

#[tokio::test]
async fn a_wrong_server_address_says_what_to_write_at_once() {
    let cove = Cove::new(Wire::OpenAi).await;
    let base = cove.llm.openai_base_url();
    let without_v1 = base.trim_end_matches("/v1").to_string();
    let without_scheme = base.trim_start_matches("http://").to_string();
    // A port nothing listens on.
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    for (address, exit, says) in [
        (without_v1.clone(), 6, format!("try {without_v1}/v1")),
        (
            without_scheme.clone(),
            6,
            format!("write http://{without_scheme}"),
        ),
        (closed.clone(), 7, "Connection refused".to_string()),
    ] {
        let out = run_at(&cove, &address, "Say hello").await;
        assert_eq!(
            out.status.code(),
            Some(exit),
            "{address}: {}",
            explain(&out)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&says) && err.trim().lines().count() == 1,
            "{address}: {err}"
        );
        assert!(out.stdout.is_empty(), "nothing ran: {}", explain(&out));
    }
    assert!(cove.llm.received().is_empty());

    let empty = cove.run(&["run", "  "]).await;
    assert_eq!(empty.status.code(), Some(2), "{}", explain(&empty));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("the task is empty"));
}

/// A server that refuses every key, as an OpenAI-compatible one does.
fn refusing_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn a_runs_failure_is_said_once() {
    let cove = Cove::new(Wire::OpenAi).await;
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut cmd = cove.command(&[
        "run",
        "Say hello",
        "--model",
        "openai/x",
        "--workspace",
        &ws,
    ]);
    cmd.env("OPENAI_BASE_URL", refusing_server());
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", explain(&out));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        all.matches("Incorrect API key provided").count(),
        1,
        "{all}"
    );
}

#[tokio::test]
async fn a_small_window_the_server_states_gets_the_compact_tools_and_says_so() {
    let cove = Cove::new(Wire::OpenAi).await;
    // llama.cpp started with -c 8192: its /props says so, and it refuses longer prompts.
    cove.llm.serve_window(8_192);
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "hello"})));
    let out = run_at(&cove, &cove.llm.openai_base_url(), "Say hello").await;
    assert!(out.status.success(), "{}", explain(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let props = format!(
        "{}/props",
        cove.llm.openai_base_url().trim_end_matches("/v1")
    );
    assert!(
        stdout.contains(&format!(
            "the server runs scripted with a window of 8,192 tokens (from {props})"
        )) && stdout.contains("compact tools"),
        "{stdout}"
    );
    let request = &cove.llm.received()[0];
    let tools: Vec<&str> = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.len() <= 17
            && tools.contains(&"execute_command")
            && !tools.contains(&"browser_drag_drop"),
        "{tools:?}"
    );
    assert!(
        request.prompt_tokens() <= 4_000,
        "the fixed prompt of the compact set: {} tokens",
        request.prompt_tokens()
    );

    // On a server started with -c 5000, --tools full asks for every tool, whose descriptions
    // and instructions alone (some 6,000 tokens) fill the window: refused before the call,
    // saying how to send less.
    cove.llm.serve_window(5_000);
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut cmd = cove.command(&[
        "run",
        "Say hello",
        "--workspace",
        &ws,
        "--no-prompt",
        "--tools",
        "full",
    ]);
    cmd.env("OPENAI_BASE_URL", cove.llm.openai_base_url())
        .env_remove("OPENAI_API_KEY");
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", explain(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot fit the model's window of 5000 tokens")
            && err.contains("--tools compact"),
        "{}",
        explain(&out)
    );
    assert_eq!(cove.llm.received().len(), 1, "no second call");
}

#[tokio::test]
async fn a_window_no_prompt_can_fit_is_refused_before_the_model_is_called() {
    let cove = Cove::new(Wire::OpenAi).await;
    // SmolLM2 under llama-cpp-python's default: 2,048 tokens.
    cove.llm.serve_window(2_048);
    cove.llm.push(Turn::text("never sent"));
    let out = run_at(&cove, &cove.llm.openai_base_url(), "Say hello").await;
    assert!(!out.status.success(), "{}", explain(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot fit the model's window of 2048 tokens")
            && err.contains("llama.cpp: -c 16384"),
        "why, and what to do: {}",
        explain(&out)
    );
    assert!(
        cove.llm.received().is_empty(),
        "no call the server would cut"
    );
}
