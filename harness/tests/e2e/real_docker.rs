//! The sandbox image built and run by a real Docker engine (Debian's docker.io, with the vfs
//! driver): `sandbox-image/build-test-image.sh`, which `harness/install-test-deps.sh` runs,
//! builds `cove-sandbox:test` from `sandbox-image/Dockerfile` and starts the engine on its
//! socket and on TLS. Then, through `cove sandbox create` and the Docker provider: the
//! container turns healthy by its HEALTHCHECK, a scripted task runs in it (files, a shell
//! that is not root, Chromium loading a page), stop and start keep the workspace, the same
//! engine answers over tcp+TLS, and rm leaves nothing behind.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use cove_harness::Turn;
use cove_harness::llm::Wire;
use serde_json::json;

use super::{Cove, events, explain, thread_of};

/// The image build-test-image.sh makes.
pub(super) const IMAGE: &str = "cove-sandbox:test";

/// Debian's Docker client (another one earlier on PATH may not match the engine).
fn docker_cli() -> PathBuf {
    let debian = Path::new("/usr/bin/docker");
    if debian.exists() {
        return debian.to_path_buf();
    }
    cove_harness::bins::on_path(&["docker"]).unwrap_or_else(|| {
        panic!("no docker client: run harness/install-test-deps.sh (it installs docker.io)")
    })
}

pub(super) fn docker(args: &[&str]) -> Output {
    std::process::Command::new(docker_cli())
        .args(args)
        .output()
        .expect("the docker client runs")
}

/// `cove ARGS` on the machine's own engine (its default socket), within 10 minutes.
pub(super) async fn on_engine(cove: &Cove, args: &[&str]) -> Output {
    let mut cmd = cove.command(args);
    cmd.env_remove("DOCKER_HOST")
        .env_remove("DOCKER_TLS_VERIFY")
        .env_remove("DOCKER_CERT_PATH");
    tokio::time::timeout(Duration::from_secs(600), cmd.output())
        .await
        .expect("cove finished within 10 minutes")
        .unwrap()
}

/// [`on_engine`], which must succeed.
pub(super) async fn on_engine_ok(cove: &Cove, args: &[&str]) -> Output {
    let out = on_engine(cove, args).await;
    assert!(out.status.success(), "{args:?}: {}", explain(&out));
    out
}

/// The tests that make containers on the real engine, one at a time: the engine here
/// copies the image whole for each container (vfs, 1.4 GB), so several tests at once could
/// fill the machine's disk, and slow each other past their limits.
pub(super) async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TURN.lock().await
}

/// Removes the sandbox's container however the test ends.
pub(super) struct Leftover(pub(super) String);

impl Drop for Leftover {
    fn drop(&mut self) {
        let _ = docker(&["rm", "-f", &self.0]);
    }
}

fn health(container: &str) -> String {
    let out = docker(&["inspect", "-f", "{{.State.Health.Status}}", container]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test]
async fn the_sandbox_image_runs_a_task_in_a_real_container() {
    let _turn = one_at_a_time().await;
    let present = docker(&["image", "inspect", IMAGE]);
    assert!(
        present.status.success(),
        "no {IMAGE} on a running Docker engine: run harness/install-test-deps.sh, whose sandbox-image/build-test-image.sh starts the engine and builds it ({})",
        String::from_utf8_lossy(&present.stderr).trim()
    );
    let cove = Cove::new(Wire::OpenAi).await;
    let name = format!("real-{}", std::process::id());
    let container = format!("cove-{name}");
    let _leftover = Leftover(container.clone());
    let run = |args: &[&str], env: &[(&str, String)]| {
        let mut cmd = cove.command(args);
        cmd.env_remove("DOCKER_HOST")
            .env_remove("DOCKER_TLS_VERIFY")
            .env_remove("DOCKER_CERT_PATH");
        for (key, value) in env {
            cmd.env(key, value);
        }
        async move {
            tokio::time::timeout(Duration::from_secs(300), cmd.output())
                .await
                .expect("cove finished within 5 minutes")
                .unwrap()
        }
    };

    let out = run(
        &[
            "sandbox", "create", &name, "--image", IMAGE, "--memory", "2g",
        ],
        &[],
    )
    .await;
    assert!(out.status.success(), "{}", explain(&out));
    // The image's HEALTHCHECK passes (its first check comes after its 15 s interval).
    let started = Instant::now();
    while health(&container) != "healthy" && started.elapsed() < Duration::from_secs(90) {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(health(&container), "healthy");

    // A task in the container: a file, a shell that is not root, Chromium on a page.
    cove.llm.push(
        Turn::text("")
            .call(
                "create_file",
                json!({"file_path": "notes.txt", "file_contents": "kept across a restart"}),
            )
            .call(
                "execute_command",
                json!({"command": "echo uid=$(id -u) user=$(id -un) in $(pwd)"}),
            )
            // What install-runtime.sh promises an agent.
            .call(
                "execute_command",
                json!({"session_name": "tools", "command": "m=; for t in chromium python3 pip3 node npm git curl wget jq csvlook xmlstarlet pdftotext zip unzip tree rsync tmux vim ps rg tini bash; do command -v $t >/dev/null || m=\"$m $t\"; done; fc-list | grep -qi liberation || m=\"$m fonts\"; echo \"missing:[$m]\"; python3 -c 'print(6*7)'; node -e 'console.log(6*7)'"}),
            ),
    );
    cove.llm.push(Turn::text("").call(
        "browser_navigate_to",
        json!({"url": "data:text/html,<title>In the box</title><h1>Chromium renders here</h1><button>Press</button>"}),
    ));
    cove.llm.push_fn(|request| {
        let text = request.all_text();
        let verdict = if !text.contains("uid=1000 user=agent in /workspace") {
            "NOT THE AGENT USER"
        } else if !text.contains("missing:[]\n42\n42") {
            let at = text.find("missing:[").unwrap_or(0);
            let shown = text
                .chars()
                .skip(at.saturating_sub(200))
                .take(400)
                .collect::<String>();
            return Turn::text("").call(
                "complete",
                json!({ "text": format!("TOOLS MISSING: {shown}") }),
            );
        } else if !text.contains("In the box") || !text.contains("Press") {
            "NO PAGE"
        } else {
            "done in the container"
        };
        Turn::text("").call("complete", json!({ "text": verdict }))
    });
    let task = run(
        &[
            "--json",
            "run",
            "Work in the container",
            "--model",
            "openai/scripted",
            "--sandbox",
            &name,
            "--no-prompt",
        ],
        &[],
    )
    .await;
    assert!(task.status.success(), "{}", explain(&task));
    let finished = events(&task);
    let complete = finished
        .iter()
        .find(|e| e["type"] == "complete")
        .unwrap_or_else(|| panic!("{}", explain(&task)));
    assert_eq!(complete["text"], "done in the container");

    // Stopped and started: the workspace is the container's and stays.
    let stop = run(&["sandbox", "stop", &name], &[]).await;
    assert!(stop.status.success(), "{}", explain(&stop));
    let running = docker(&["inspect", "-f", "{{.State.Running}}", &container]);
    assert_eq!(String::from_utf8_lossy(&running.stdout).trim(), "false");
    let start = run(&["sandbox", "start", &name], &[]).await;
    assert!(start.status.success(), "{}", explain(&start));
    let cat = run(&["cat", "notes.txt", "--sandbox", &name], &[]).await;
    assert_eq!(
        String::from_utf8_lossy(&cat.stdout).trim(),
        "kept across a restart",
        "{}",
        explain(&cat)
    );

    // The container's workspace moves to another provider: the thread forked into a local
    // workspace, streamed from the container's coved into a local one (its checkpoints
    // outlived the restart: they are in the container's home).
    let thread = thread_of(&finished);
    let listed = events(&run(&["--json", "checkpoints", &thread], &[]).await);
    assert!(listed.len() >= 2, "{listed:?}");
    let forked_to = cove.home.path().join("forked");
    let fork = run(
        &[
            "--json",
            "fork",
            &thread,
            "--workspace",
            forked_to.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(fork.status.success(), "{}", explain(&fork));
    assert_eq!(
        std::fs::read_to_string(forked_to.join("notes.txt")).unwrap(),
        "kept across a restart"
    );

    // The same engine over tcp+TLS, with the client certificate DOCKER_CERT_PATH holds.
    let certs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-deps/docker-tls");
    assert!(
        certs.join("cert.pem").exists(),
        "no TLS client files in {}: the engine was not started by sandbox-image/build-test-image.sh (stop it and run harness/install-test-deps.sh)",
        certs.display()
    );
    let tls = [
        ("DOCKER_HOST", "tcp://127.0.0.1:2376".to_string()),
        ("DOCKER_TLS_VERIFY", "1".to_string()),
        ("DOCKER_CERT_PATH", certs.display().to_string()),
    ];
    let ls = run(&["--json", "sandbox", "ls"], &tls).await;
    let rows = events(&ls);
    let row = rows
        .iter()
        .find(|r| r["name"] == name.as_str())
        .unwrap_or_else(|| panic!("{}", explain(&ls)));
    assert_eq!(row["healthy"], true, "{}", explain(&ls));
    // Without the client certificate the engine refuses.
    let refused = run(
        &["--json", "sandbox", "ls"],
        &[("DOCKER_HOST", "tcp://127.0.0.1:2376".to_string())],
    )
    .await;
    let rows = events(&refused);
    assert!(
        rows.iter()
            .all(|r| r["name"] != name.as_str() || r["healthy"] != true),
        "{}",
        explain(&refused)
    );

    // Removed: nothing left.
    let rm = run(&["sandbox", "rm", &name], &[]).await;
    assert!(rm.status.success(), "{}", explain(&rm));
    let left = docker(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        &format!("name=^/{container}$"),
    ]);
    assert!(
        String::from_utf8_lossy(&left.stdout).trim().is_empty(),
        "the container is gone"
    );
}
