//! A Docker sandbox paused and resumed with its memory, on the real engine: a background
//! counter stops while it is paused and goes on after, an open shell session keeps what it
//! was told, `cove sandbox ls` shows it paused, and its next use (`cove exec`) resumes it
//! by itself.

use std::time::{Duration, Instant};

use cove_harness::llm::Wire;

use super::real_docker::{IMAGE, Leftover, docker, on_engine_ok};
use super::{Cove, explain};

/// The counter's ticks per second (it sleeps a tenth of a second between them).
const TICKS_PER_SEC: f64 = 10.0;

#[tokio::test]
async fn a_paused_sandbox_keeps_its_processes_and_its_next_use_resumes_it() {
    let _turn = super::real_docker::one_at_a_time().await;
    let present = docker(&["image", "inspect", IMAGE]);
    assert!(
        present.status.success(),
        "no {IMAGE} on a running Docker engine: run sandbox-image/build-test-image.sh ({})",
        String::from_utf8_lossy(&present.stderr).trim()
    );
    let cove = Cove::new(Wire::OpenAi).await;
    let name = format!("pause-{}", std::process::id());
    let _leftover = Leftover(format!("cove-{name}"));
    let stdout =
        |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).trim().to_string();
    let paused = || {
        let out = docker(&[
            "inspect",
            "-f",
            "{{.State.Paused}}",
            &format!("cove-{name}"),
        ]);
        String::from_utf8_lossy(&out.stdout).trim() == "true"
    };

    on_engine_ok(&cove, &["sandbox", "create", &name, "--image", IMAGE]).await;
    // A counter in the background, and a shell told something to keep.
    on_engine_ok(&cove, &[
        "exec",
        "--sandbox",
        &name,
        "--session",
        "counter",
        "(i=0; while :; do i=$((i+1)); echo $i > /tmp/counter; sleep 0.1; done) > /dev/null 2>&1 &",
    ])
    .await;
    on_engine_ok(
        &cove,
        &[
            "exec",
            "--sandbox",
            &name,
            "--session",
            "keep",
            "MARK=kept-in-memory; cd /tmp",
        ],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let count = |out: &std::process::Output| -> u64 {
        stdout(out)
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("no count: {}", explain(out)))
    };
    let before =
        count(&on_engine_ok(&cove, &["exec", "--sandbox", &name, "cat /tmp/counter"]).await);
    let from = Instant::now();

    on_engine_ok(&cove, &["sandbox", "pause", &name]).await;
    assert!(paused(), "the container is not paused");
    let listed = stdout(&on_engine_ok(&cove, &["sandbox", "ls"]).await);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&name) && l.contains("PAUSED")),
        "{listed}"
    );
    let frozen_for = Duration::from_secs(4);
    tokio::time::sleep(frozen_for).await;

    // Its next use resumes it: the counter goes on from where it stood, missing the pause.
    let resumed = on_engine_ok(&cove, &["exec", "--sandbox", &name, "cat /tmp/counter"]).await;
    let after = count(&resumed);
    let elapsed = from.elapsed().as_secs_f64();
    assert!(!paused(), "the next use did not resume it");
    assert!(
        String::from_utf8_lossy(&resumed.stderr).contains(&format!("resuming sandbox {name}")),
        "{}",
        explain(&resumed)
    );
    let counted = (after - before) as f64;
    let unfrozen = (elapsed - frozen_for.as_secs_f64()) * TICKS_PER_SEC;
    assert!(
        after >= before && counted <= unfrozen + 5.0,
        "the counter ran while paused: {before} → {after} in {elapsed:.1} s"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let later =
        count(&on_engine_ok(&cove, &["exec", "--sandbox", &name, "cat /tmp/counter"]).await);
    assert!(
        later > after,
        "the counter did not go on: {after} → {later}"
    );
    // The open shell session is the one left: what it was told, where it was.
    let kept = on_engine_ok(
        &cove,
        &[
            "exec",
            "--sandbox",
            &name,
            "--session",
            "keep",
            "echo $MARK in $(pwd)",
        ],
    )
    .await;
    assert!(
        stdout(&kept).contains("kept-in-memory in /tmp"),
        "{}",
        explain(&kept)
    );

    // Resume of a running one says so plainly; stop from paused works.
    on_engine_ok(&cove, &["sandbox", "pause", &name]).await;
    on_engine_ok(&cove, &["sandbox", "resume", &name]).await;
    assert!(!paused());
    on_engine_ok(&cove, &["sandbox", "pause", &name]).await;
    on_engine_ok(&cove, &["sandbox", "stop", &name]).await;
    let running = docker(&[
        "inspect",
        "-f",
        "{{.State.Running}}",
        &format!("cove-{name}"),
    ]);
    assert_eq!(String::from_utf8_lossy(&running.stdout).trim(), "false");
    on_engine_ok(&cove, &["sandbox", "rm", &name]).await;
}

/// Waits up to `limit` for the container of sandbox `name` to be paused (or not).
async fn until_paused(name: &str, paused: bool, limit: Duration) -> bool {
    let started = Instant::now();
    loop {
        let out = docker(&[
            "inspect",
            "-f",
            "{{.State.Paused}}",
            &format!("cove-{name}"),
        ]);
        if (String::from_utf8_lossy(&out.stdout).trim() == "true") == paused {
            return true;
        }
        if started.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_sandbox_left_idle_is_paused_by_itself_and_not_while_a_command_runs() {
    let _turn = super::real_docker::one_at_a_time().await;
    let cove = Cove::new(Wire::OpenAi).await;
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        "idle_pause_secs = 2\n[sandbox_limits]\nmemory = \"1g\"\ncpus = 1\nprocesses = 512\n",
    )
    .unwrap();
    let name = format!("idle-{}", std::process::id());
    let _leftover = Leftover(format!("cove-{name}"));
    on_engine_ok(&cove, &["sandbox", "create", &name, "--image", IMAGE]).await;
    // The limits cove.toml gives are the engine's, and `ls` shows them.
    let host = docker(&[
        "inspect",
        "-f",
        "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.PidsLimit}}",
        &format!("cove-{name}"),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&host.stdout).trim(),
        "1073741824 1000000000 512"
    );
    let listed =
        String::from_utf8_lossy(&on_engine_ok(&cove, &["sandbox", "ls"]).await.stdout).into_owned();
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&name) && l.ends_with("1 CPU, 1.0 GiB, 512 processes")),
        "{listed}"
    );
    // A command that runs 6 s keeps it awake, well past the 2 s allowed idle.
    let long_args = [
        "exec",
        "--sandbox",
        &name,
        "--session",
        "build",
        "sleep 6; echo built",
    ];
    let long = on_engine_ok(&cove, &long_args);
    let watch = async {
        tokio::time::sleep(Duration::from_secs(4)).await;
        until_paused(&name, true, Duration::from_millis(1)).await
    };
    let (out, paused_early) = tokio::join!(long, watch);
    assert!(String::from_utf8_lossy(&out.stdout).contains("built"));
    assert!(!paused_early, "paused while a command ran");
    // Then, idle, it is paused by itself.
    assert!(
        until_paused(&name, true, Duration::from_secs(20)).await,
        "not paused once idle"
    );
    // Its next use resumes it, and it is paused again once idle.
    let back = on_engine_ok(&cove, &["exec", "--sandbox", &name, "echo back"]).await;
    assert!(
        String::from_utf8_lossy(&back.stdout).contains("back"),
        "{}",
        explain(&back)
    );
    assert!(
        until_paused(&name, true, Duration::from_secs(20)).await,
        "not paused again"
    );
    on_engine_ok(&cove, &["sandbox", "rm", &name]).await;
}
