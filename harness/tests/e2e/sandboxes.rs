//! Sandboxes by name, the Docker provider against a scripted engine, and runs in parallel on their own sandboxes.

use super::*;

#[tokio::test]
async fn named_sandboxes_are_listed_with_their_health_and_used_by_name() {
    let cove = Cove::new(Wire::OpenAi).await;
    let daemon = cove_harness::DaemonBuilder::new(workspace_binary("coved").unwrap())
        .spawn()
        .await
        .unwrap();
    let url = daemon
        .client
        .base_url()
        .as_str()
        .trim_end_matches('/')
        .to_string();
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        format!(
            "[sandboxes.build-1]\nurl = \"{url}\"\ntoken = \"{}\"\n\n[sandboxes.gone]\nurl = \"http://127.0.0.1:9\"\ntoken = \"x\"\n",
            daemon.client.token()
        ),
    )
    .unwrap();

    let out = cove.run(&["--json", "sandbox", "ls"]).await;
    assert_eq!(out.status.code(), Some(1), "one is down: {}", explain(&out));
    let rows = events(&out);
    assert_eq!(rows.len(), 2, "{}", explain(&out));
    let up = rows.iter().find(|r| r["name"] == "build-1").unwrap();
    assert_eq!(up["healthy"], true);
    assert!(up["version"].is_string() && up["capabilities"].to_string().contains("preview"));
    let down = rows.iter().find(|r| r["name"] == "gone").unwrap();
    assert_eq!(down["healthy"], false);
    assert!(down["error"].is_string());

    let text = cove.run(&["sandbox", "ls"]).await;
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains("build-1") && shown.contains(" up ") && shown.contains("DOWN"),
        "{shown}"
    );

    // The name stands for the URL and its token.
    let exec = cove
        .run(&["exec", "echo named", "--sandbox", "build-1"])
        .await;
    assert!(exec.status.success(), "{}", explain(&exec));
    assert_eq!(String::from_utf8_lossy(&exec.stdout).trim(), "named");
    let bad = cove.run(&["exec", "true", "--sandbox", "nope"]).await;
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("build-1, gone"),
        "{}",
        explain(&bad)
    );
}

#[tokio::test]
async fn the_docker_provider_speaks_to_an_engine_over_tcp() {
    use cove_harness::docker::{IMAGE, ScriptedDocker};
    let cove = Cove::new(Wire::OpenAi).await;
    let engine = ScriptedDocker::start_tcp(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    assert!(engine.host().starts_with("tcp://127.0.0.1:"));
    let run = |args: &[&str]| {
        let mut cmd = cove.command(args);
        cmd.env("DOCKER_HOST", engine.host());
        async move {
            tokio::time::timeout(Duration::from_secs(120), cmd.output())
                .await
                .unwrap()
                .unwrap()
        }
    };
    let out = run(&["sandbox", "create", "t1", "--image", IMAGE]).await;
    assert!(out.status.success(), "{}", explain(&out));
    // A local engine publishes on loopback only.
    assert_eq!(
        engine.created()["cove-t1"]["HostConfig"]["PortBindings"]["7700/tcp"][0]["HostIp"],
        "127.0.0.1"
    );
    let exec = run(&["exec", "echo over tcp", "--sandbox", "t1"]).await;
    assert_eq!(
        String::from_utf8_lossy(&exec.stdout).trim(),
        "over tcp",
        "{}",
        explain(&exec)
    );
    // Restarted behind Cove's back, the container runs before its coved listens: the next
    // use waits for it, as a start by Cove does, instead of calling it unreachable.
    engine
        .restart_late("cove-t1", Duration::from_millis(1500))
        .await
        .unwrap();
    let exec = run(&["exec", "echo back", "--sandbox", "t1"]).await;
    assert_eq!(
        String::from_utf8_lossy(&exec.stdout).trim(),
        "back",
        "{}",
        explain(&exec)
    );
    // Without --memory and --cpus, the defaults hold.
    let host = &engine.created()["cove-t1"]["HostConfig"];
    assert_eq!(host["Memory"], 4_i64 << 30);
    assert_eq!(host["NanoCpus"], 2_000_000_000_i64);
    let rm = run(&["sandbox", "rm", "t1"]).await;
    assert!(rm.status.success(), "{}", explain(&rm));
    assert_eq!(engine.counts(), (0, 0));
    assert!(engine.networks().is_empty(), "its network went with it");
}

#[tokio::test]
async fn the_docker_provider_creates_starts_stops_and_removes_sandboxes() {
    use cove_harness::docker::{IMAGE, ScriptedDocker};
    let cove = Cove::new(Wire::OpenAi).await;
    let engine = ScriptedDocker::start(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = cove.command(args);
        cmd.env("DOCKER_HOST", engine.host());
        async move {
            tokio::time::timeout(Duration::from_secs(120), cmd.output())
                .await
                .unwrap()
                .unwrap()
        }
    };
    let out = run(&[
        "sandbox", "create", "b1", "--image", IMAGE, "--memory", "1g", "--cpus", "2",
    ])
    .await;
    assert!(out.status.success(), "{}", explain(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--sandbox b1"));
    let body = engine.created()["cove-b1"].clone();
    assert_eq!(body["Image"], IMAGE);
    assert_eq!(body["Labels"]["cove.sandbox"], "b1");
    let env = body["Env"][0].as_str().unwrap();
    assert!(env.starts_with("COVE_TOKEN=") && env.len() > 40, "{env}");
    let host = &body["HostConfig"];
    assert_eq!(host["Init"], true);
    assert_eq!(host["Memory"], 1024 * 1024 * 1024);
    assert_eq!(host["NanoCpus"], 2_000_000_000_i64);
    assert_eq!(host["PortBindings"]["7700/tcp"][0]["HostIp"], "127.0.0.1");
    assert!(host["ShmSize"].as_i64().unwrap() >= 256 * 1024 * 1024);
    // Hardened as the Kubernetes Pod is: no capability, no privilege gained, a ceiling on
    // processes, and a network of its own (sandboxes do not reach each other).
    assert_eq!(host["CapDrop"], json!(["ALL"]));
    assert_eq!(host["SecurityOpt"], json!(["no-new-privileges:true"]));
    assert_eq!(host["PidsLimit"], 4096);
    assert_eq!(host["NetworkMode"], "cove-b1");
    let network = &engine.networks()["cove-b1"];
    assert_eq!(network["Labels"]["cove.sandbox"], "b1");
    assert_eq!(
        network["Options"]["com.docker.network.bridge.enable_icc"],
        "false"
    );
    assert_eq!(engine.counts(), (1, 1));

    // Used by name; listed with its health.
    let exec = run(&["exec", "echo in the container", "--sandbox", "b1"]).await;
    assert!(exec.status.success(), "{}", explain(&exec));
    assert_eq!(
        String::from_utf8_lossy(&exec.stdout).trim(),
        "in the container"
    );
    let ls = run(&["--json", "sandbox", "ls"]).await;
    assert!(ls.status.success(), "{}", explain(&ls));
    let rows = events(&ls);
    assert_eq!(rows[0]["name"], "b1");
    assert_eq!(rows[0]["kind"], "docker");
    assert_eq!(rows[0]["healthy"], true);

    // A run on it: the thread remembers the name, not this start's URL.
    cove.llm.push(Turn::text("").call(
        "create_file",
        json!({"file_path": "made.txt", "file_contents": "in docker"}),
    ));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "done"})));
    let task = run(&[
        "--json",
        "run",
        "Make a file",
        "--model",
        "openai/scripted",
        "--sandbox",
        "b1",
        "--no-prompt",
    ])
    .await;
    assert!(task.status.success(), "{}", explain(&task));
    let threads = events(&run(&["--json", "threads"]).await);
    let thread = threads[0]["id"].as_str().unwrap().to_string();
    let shown = run(&["show", &thread]).await;
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("docker:b1"),
        "{}",
        explain(&shown)
    );

    // Stopped: ls says so; the next use starts it again.
    let stop = run(&["sandbox", "stop", "b1"]).await;
    assert!(stop.status.success(), "{}", explain(&stop));
    assert_eq!(engine.counts(), (1, 0));
    let ls = run(&["--json", "sandbox", "ls"]).await;
    assert_eq!(ls.status.code(), Some(1));
    assert_eq!(events(&ls)[0]["healthy"], false);
    let cat = run(&["cat", "made.txt", "--sandbox", "b1"]).await;
    assert!(cat.status.success(), "{}", explain(&cat));
    assert_eq!(String::from_utf8_lossy(&cat.stdout).trim(), "in docker");
    assert_eq!(engine.counts(), (1, 1), "the use started it again");

    // Mistakes are one clear line.
    // Each kind of mistake has its exit code: 2 fix the command, 6 set up first, 7 try later.
    let dup = run(&["sandbox", "create", "b1", "--image", IMAGE]).await;
    assert_eq!(dup.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&dup.stderr).contains("exists already"),
        "{}",
        explain(&dup)
    );
    let no_image = run(&["sandbox", "create", "b2", "--image", "nope:1"]).await;
    assert_eq!(no_image.status.code(), Some(6));
    assert!(
        String::from_utf8_lossy(&no_image.stderr).contains("docker build"),
        "{}",
        explain(&no_image)
    );
    let bad_name = run(&["sandbox", "create", "../x"]).await;
    assert!(String::from_utf8_lossy(&bad_name.stderr).contains("not a sandbox name"));
    assert_eq!(bad_name.status.code(), Some(2));
    let mut ssh = cove.command(&["sandbox", "create", "b3"]);
    ssh.env("DOCKER_HOST", "ssh://builder@10.0.0.1");
    let ssh = ssh.output().await.unwrap();
    assert_eq!(ssh.status.code(), Some(6));
    assert!(
        String::from_utf8_lossy(&ssh.stderr).contains("tcp://host:port"),
        "{}",
        explain(&ssh)
    );
    // TLS asked for, its files missing: said before anything is sent.
    let no_certs = cove.home.path().join("no-certs");
    let mut tls = cove.command(&["sandbox", "create", "b3"]);
    tls.env("DOCKER_HOST", "tcp://127.0.0.1:2376")
        .env("DOCKER_TLS_VERIFY", "1")
        .env("DOCKER_CERT_PATH", &no_certs);
    let tls = tls.output().await.unwrap();
    assert_eq!(tls.status.code(), Some(6), "{}", explain(&tls));
    assert!(
        String::from_utf8_lossy(&tls.stderr).contains("DOCKER_CERT_PATH"),
        "{}",
        explain(&tls)
    );
    // A remote engine in clear: refused before anything is sent (tokens would cross the
    // network readable).
    let mut clear = cove.command(&["sandbox", "create", "b3"]);
    clear
        .env("DOCKER_HOST", "tcp://10.0.0.1:2375")
        .env_remove("DOCKER_TLS_VERIFY");
    let clear = clear.output().await.unwrap();
    assert_eq!(clear.status.code(), Some(6), "{}", explain(&clear));
    assert!(
        String::from_utf8_lossy(&clear.stderr).contains("over TLS only"),
        "{}",
        explain(&clear)
    );
    let mut down = cove.command(&["sandbox", "create", "b4"]);
    down.env("DOCKER_HOST", "unix:///nonexistent/docker.sock");
    let down = down.output().await.unwrap();
    assert_eq!(down.status.code(), Some(7));
    assert!(
        String::from_utf8_lossy(&down.stderr).contains("is the Docker engine running"),
        "{}",
        explain(&down)
    );

    // Removed: the container goes, and so does the name.
    let rm = run(&["sandbox", "rm", "b1"]).await;
    assert!(rm.status.success(), "{}", explain(&rm));
    assert_eq!(engine.counts(), (0, 0));
    let ls = run(&["sandbox", "ls"]).await;
    assert!(String::from_utf8_lossy(&ls.stdout).contains("No sandboxes yet"));
    assert!(
        engine
            .calls()
            .iter()
            .any(|c| c.starts_with("DELETE /containers/"))
    );
}

#[tokio::test]
async fn parallel_runs_on_their_own_sandboxes_do_not_interfere() {
    let cove = Cove::new(Wire::OpenAi).await;
    const RUNS: usize = 4;
    // Answers follow what each request holds, so arrival order does not matter.
    for _ in 0..RUNS * 2 {
        cove.llm.push_fn(|request| {
            let text = request.all_text();
            let n: u32 = text
                .split("Task ")
                .nth(1)
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            if text.contains("file_contents") {
                Turn::text("").call("complete", json!({"text": format!("task {n} done")}))
            } else {
                Turn::text("").call(
                    "create_file",
                    json!({"file_path": "mine.txt", "file_contents": format!("task {n}")}),
                )
            }
        });
    }
    let mut children = Vec::new();
    for n in 1..=RUNS {
        let ws = cove.home.path().join(format!("ws-{n}"));
        let ws = ws.to_str().unwrap().to_string();
        let task = format!("Task {n}: write your file");
        let child = cove
            .command(&[
                "--json",
                "run",
                &task,
                "--model",
                "openai/scripted",
                "--workspace",
                &ws,
                "--no-prompt",
            ])
            .spawn()
            .unwrap();
        children.push((n, ws, child));
    }
    for (n, ws, child) in children {
        let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(out.status.success(), "run {n}: {}", explain(&out));
        let complete = events(&out)
            .into_iter()
            .find(|e| e["type"] == "complete")
            .unwrap();
        assert_eq!(complete["text"], format!("task {n} done"));
        assert_eq!(
            std::fs::read_to_string(PathBuf::from(&ws).join("mine.txt")).unwrap(),
            format!("task {n}")
        );
    }
    let threads = events(&cove.run(&["--json", "threads"]).await);
    assert_eq!(threads.len(), RUNS);
    assert!(
        threads.iter().all(|t| t["status"] == "completed"),
        "{threads:?}"
    );
}
