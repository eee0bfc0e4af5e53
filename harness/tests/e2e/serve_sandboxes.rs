//! `cove serve`'s operator decides where agents run, and tokens stay with their sandboxes
//! (security review M2, L2, I1): a client cannot move its thread to the server's host or
//! to a sandbox the operator did not list; a sandbox a client may name never receives the
//! server's own sandbox's token; thread ids are matched whole.

use std::time::Duration;

use cove_harness::llm::Wire;
use cove_harness::recorder::Recorder;
use cove_harness::{DaemonBuilder, workspace_binary};
use serde_json::json;

use super::Cove;
use super::serve::Server;

/// `cove serve` with `--sandbox a`, A's token in `COVE_SANDBOX_TOKEN`.
async fn serve(cove: &Cove, sandbox_token: &str) -> Server {
    let mut cmd = cove.command(&[
        "--json",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--sandbox",
        "a",
    ]);
    cmd.env("COVE_SANDBOX_TOKEN", sandbox_token);
    Server::from_child(cmd.spawn().unwrap()).await
}

#[tokio::test]
async fn the_operator_decides_where_agents_run_and_tokens_stay_with_their_sandbox() {
    let cove = Cove::new(Wire::OpenAi).await;
    let a = DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    // Another sandbox, which keeps every Authorization it is sent.
    let b = Recorder::start().unwrap();
    let b_url = b.url();
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    let named = format!(
        "[sandboxes.a]\nurl = \"{}\"\n\n[sandboxes.b]\nurl = \"{b_url}\"\ntoken = \"b-own-token\"\n",
        a.url
    );
    std::fs::write(config.join("cove.toml"), &named).unwrap();

    // By default a client has the server's sandbox, and nothing else.
    let server = serve(&cove, &a.token).await;
    for other in ["local", "host", "b", "k8s:x"] {
        let (status, said) = server
            .post(
                "/v1/threads",
                json!({"task": "look around", "model": "openai/scripted", "sandbox": other}),
            )
            .await;
        assert_eq!(status, 403, "{other}: {said}");
        assert_eq!(said["error"]["code"], "sandbox_not_allowed", "{said}");
        assert!(
            said["error"]["message"]
                .as_str()
                .unwrap()
                .contains("[serve] sandboxes"),
            "{said}"
        );
    }
    let (_, listed) = server.get("/v1/threads").await;
    assert_eq!(listed["threads"], json!([]), "nothing was made");
    server.kill().await;

    // The operator lists b: a client may name it, and b gets its own token, never a's.
    std::fs::write(
        config.join("cove.toml"),
        format!("{named}\n[serve]\nsandboxes = [\"b\"]\n"),
    )
    .unwrap();
    let server = serve(&cove, &a.token).await;
    let (status, thread) = server
        .post(
            "/v1/threads",
            json!({"task": "look around", "model": "openai/scripted", "sandbox": "b"}),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    // Thread ids are matched whole: with one thread stored, a pattern or a prefix of its
    // id finds nothing (`LIKE 'id%'` answered `%` with the only thread).
    let id = thread["id"].as_str().unwrap();
    let (status, found) = server.get(&format!("/v1/threads/{id}")).await;
    assert_eq!(status, 200, "{found}");
    for pattern in ["%25", "_%25", &id[..4]] {
        let (status, said) = server.get(&format!("/v1/threads/{pattern}")).await;
        assert_eq!(status, 404, "{pattern}: {said}");
    }
    // Its run opens b (which is no coved: the run cannot go on, and need not).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while b.heads().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the thread's run never reached b"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen: Vec<String> = b
        .heads()
        .iter()
        .flat_map(|head| head.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|line| line.to_ascii_lowercase().starts_with("authorization:"))
        .collect();
    assert!(!seen.is_empty(), "b was sent a token");
    for line in &seen {
        assert!(!line.contains(&a.token), "a's token went to b: {line}");
        assert!(line.contains("b-own-token"), "{line}");
    }
    server.kill().await;
}

#[tokio::test]
async fn a_token_given_as_a_flag_leaves_the_process_list() {
    let cove = Cove::new(Wire::OpenAi).await;
    let token = format!("flag-token-{}", "7".repeat(32));
    let mut cmd = cove.command(&[
        "--json",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--token",
        &token,
    ]);
    cmd.stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = child.id().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut server = Server::from_child(child).await;
    // What every user of the machine reads of it: its command line.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(cmdline.contains("serve"), "{cmdline}");
    assert!(
        !cmdline.contains(&token),
        "the token is in the process list: {cmdline}"
    );
    // The token still works, and the operator is told.
    server.token = token.clone();
    let (status, _) = server.get("/v1/threads").await;
    assert_eq!(status, 200);
    server.kill().await;
    let mut said = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut said)
        .await
        .unwrap();
    assert!(
        said.contains("--token (set COVE_SERVE_TOKEN instead)") && said.contains("process list"),
        "{said}"
    );
    assert!(!said.contains(&token), "{said}");
}
