//! The task's container, through the `docker` command (as Harbor's Docker environment uses
//! it): the image built from the task's `environment/`, a container that sleeps, the static
//! coved copied in and started on a port published on 127.0.0.1 only.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::EvalError;

/// Where coved goes in the container, and its port there.
const COVED_IN_CONTAINER: &str = "/tmp/cove-coved";
const COVED_PORT: u16 = 7700;

/// What a `docker` command printed, and how it ended.
pub(super) struct Ran {
    pub(super) ok: bool,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

/// Runs `docker ARGS` within `limit`; `Err` when docker cannot be started or the limit passed.
pub(super) async fn docker(
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> Result<Ran, EvalError> {
    let mut cmd = Command::new("docker");
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let output = tokio::time::timeout(limit, cmd.output())
        .await
        .map_err(|_| EvalError::TimedOut {
            command: args.first().copied().unwrap_or_default().to_string(),
            secs: limit.as_secs(),
        })?
        .map_err(|e| {
            EvalError::Docker(format!(
                "cannot run docker: {e} (cove eval needs the docker command)"
            ))
        })?;
    Ok(Ran {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// [`docker`], which must succeed: its stdout, trimmed.
async fn docker_ok(
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> Result<String, EvalError> {
    let ran = docker(args, env, limit).await?;
    if !ran.ok {
        return Err(EvalError::Docker(format!(
            "`docker {}` failed: {}",
            args.iter().take(2).copied().collect::<Vec<_>>().join(" "),
            last_lines(&ran.stderr, 6)
        )));
    }
    Ok(ran.stdout.trim().to_string())
}

/// The last `n` lines of `text`, for an error message.
pub(super) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Builds the image of `environment` as `tag`.
pub(super) async fn build(environment: &Path, tag: &str, limit: Duration) -> Result<(), EvalError> {
    let context = environment.to_string_lossy();
    docker_ok(&["build", "-q", "-t", tag, &context], &[], limit).await?;
    Ok(())
}

/// A running task container with coved in it.
pub(super) struct Container {
    pub(super) id: String,
    /// The working directory of the agent and the tests.
    pub(super) workdir: String,
    /// coved's address on this machine's loopback.
    pub(super) url: String,
}

/// The limits of a container.
pub(super) struct Sizes {
    pub(super) cpus: Option<f64>,
    pub(super) memory_mb: Option<u64>,
}

const QUICK: Duration = Duration::from_secs(60);

/// Starts a container of `image` that sleeps, puts `coved` in it and starts it with `token`.
/// The container is removed if coved does not come up.
pub(super) async fn start(
    image: &str,
    name: &str,
    workdir: Option<&str>,
    sizes: &Sizes,
    coved: &Path,
    token: &str,
) -> Result<Container, EvalError> {
    let cpus = sizes.cpus.map(|c| c.to_string());
    let memory = sizes.memory_mb.map(|m| format!("{m}m"));
    let publish = format!("127.0.0.1::{COVED_PORT}");
    let mut args = vec!["run", "-d", "--init", "--name", name, "-p", &publish];
    if let Some(cpus) = &cpus {
        args.extend(["--cpus", cpus]);
    }
    if let Some(memory) = &memory {
        args.extend(["--memory", memory]);
    }
    if let Some(workdir) = workdir {
        args.extend(["-w", workdir]);
    }
    args.extend([image, "sh", "-c", "sleep infinity"]);
    let id = docker_ok(&args, &[], QUICK).await?;
    let container = Container {
        id: id.clone(),
        workdir: String::new(),
        url: String::new(),
    };
    match bring_up(container, coved, token).await {
        Ok(container) => Ok(container),
        Err(e) => {
            remove(&id).await;
            Err(e)
        }
    }
}

async fn bring_up(
    mut container: Container,
    coved: &Path,
    token: &str,
) -> Result<Container, EvalError> {
    let id = container.id.clone();
    let target = format!("{id}:{COVED_IN_CONTAINER}");
    docker_ok(&["cp", &coved.to_string_lossy(), &target], &[], QUICK).await?;
    container.workdir = docker_ok(&["exec", &id, "pwd"], &[], QUICK).await?;
    let runs = docker(
        &["exec", "-u", "root", &id, COVED_IN_CONTAINER, "--version"],
        &[],
        QUICK,
    )
    .await?;
    if !runs.ok {
        return Err(EvalError::Setup(format!(
            "coved does not run in the task's container (a dynamically linked build? use the static one: docs/harbor.md): {}",
            last_lines(&(runs.stdout + &runs.stderr), 4)
        )));
    }
    let listen = format!("0.0.0.0:{COVED_PORT}");
    // The token comes from docker's own environment (-e NAME alone), not its command line.
    docker_ok(
        &[
            "exec",
            "-d",
            "-e",
            "COVE_TOKEN",
            &id,
            COVED_IN_CONTAINER,
            "--listen",
            &listen,
            "--workspace",
            &container.workdir,
            "--state-dir",
            "/tmp/cove-state",
        ],
        &[("COVE_TOKEN", token)],
        QUICK,
    )
    .await?;
    let port = docker_ok(&["port", &id, &format!("{COVED_PORT}/tcp")], &[], QUICK).await?;
    let address = port
        .lines()
        .find(|l| l.starts_with("127.0.0.1:"))
        .ok_or_else(|| {
            EvalError::Docker(format!(
                "coved's port is not published on 127.0.0.1: {port}"
            ))
        })?;
    container.url = format!("http://{address}");
    wait_healthy(&container.url).await?;
    Ok(container)
}

/// Waits until coved answers `/health` (30 s at most).
async fn wait_healthy(url: &str) -> Result<(), EvalError> {
    let client = cove_protocol::client::CovedClient::new(url, String::new())
        .map_err(|e| EvalError::Setup(format!("coved at {url}: {e}")))?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if client.health().await.is_ok() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(EvalError::Setup(format!(
                "coved did not answer at {url} within 30 s"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Copies the task's tests in and runs them as Harbor's verifier does (`/tests/test.sh`, in
/// the working directory, as the container's user, its output to
/// `/logs/verifier/test-stdout.txt`); the reward they wrote.
pub(super) async fn verify(
    container: &Container,
    tests: &Path,
    env: &std::collections::BTreeMap<String, String>,
    limit: Duration,
) -> Result<Verdict, EvalError> {
    let id = &container.id;
    let prepare = "mkdir -p /tests /logs/verifier && chmod 777 /logs/verifier && rm -f /logs/verifier/reward.txt /logs/verifier/reward.json";
    docker_ok(&["exec", "-u", "root", id, "sh", "-c", prepare], &[], QUICK).await?;
    let source = format!("{}/.", tests.display());
    docker_ok(&["cp", &source, &format!("{id}:/tests")], &[], QUICK).await?;
    docker_ok(
        &["exec", "-u", "root", id, "chmod", "+x", "/tests/test.sh"],
        &[],
        QUICK,
    )
    .await?;
    let script = "(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1";
    // Its exit code says nothing: the reward file does.
    // `[verifier.env]` (keys of an LLM judge among them): names on the command line, values
    // from docker's own environment.
    let mut args = vec!["exec", "-w", &container.workdir];
    for name in env.keys() {
        args.extend(["-e", name]);
    }
    args.extend([id.as_str(), "bash", "-c", script]);
    let values: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let timed_out = match docker(&args, &values, limit).await {
        Ok(_) => false,
        Err(EvalError::TimedOut { .. }) => true,
        Err(e) => return Err(e),
    };
    let output = docker(
        &["exec", id, "cat", "/logs/verifier/test-stdout.txt"],
        &[],
        QUICK,
    )
    .await
    .map(|r| r.stdout)
    .unwrap_or_default();
    // As Harbor reads it: reward.json's `reward` first, else reward.txt's number.
    let json = docker(
        &["exec", id, "cat", "/logs/verifier/reward.json"],
        &[],
        QUICK,
    )
    .await?;
    let reward = if json.ok {
        serde_json::from_str::<serde_json::Value>(&json.stdout)
            .ok()
            .and_then(|v| v["reward"].as_f64())
    } else {
        let text = docker(
            &["exec", id, "cat", "/logs/verifier/reward.txt"],
            &[],
            QUICK,
        )
        .await?;
        text.ok
            .then(|| text.stdout.trim().parse::<f64>().ok())
            .flatten()
    }
    .filter(|r| r.is_finite());
    Ok(Verdict {
        reward,
        timed_out,
        output,
    })
}

/// What the tests said.
pub(super) struct Verdict {
    /// The reward they wrote; none when they wrote none (or not a number).
    pub(super) reward: Option<f64>,
    pub(super) timed_out: bool,
    /// What they printed.
    pub(super) output: String,
}

/// Removes the container, whatever state it is in.
pub(super) async fn remove(id: &str) {
    if let Err(e) = docker(&["rm", "-f", id], &[], QUICK).await {
        tracing::warn!(container = id, "could not remove the container: {e}");
    }
}
