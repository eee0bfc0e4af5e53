//! `cargo bench -p cove --bench sandboxes`: a Docker sandbox's life on the real engine
//! (`sandbox-image/build-test-image.sh` starts it and builds `cove-sandbox:test`), printed
//! as JSON, each figure the median of a few rounds:
//!
//! - cold: from asking for a new sandbox to its first command answering, and where it went
//!   (network, container, start, coved healthy, the first command);
//! - pause: the engine freezing it;
//! - resume: from asking to resume it to its next command answering;
//! - snapshot: its whole filesystem committed as an image; fork: a new sandbox made from
//!   it, to its first command;
//! - pooled: from taking a sandbox out of a warm pool (its own token given to it) to its
//!   first command answering, in the controller's process (as `cove serve` does for a new
//!   thread), and as a person at a terminal sees it: `cove sandbox create NAME --pool`, then
//!   `cove exec` (two processes).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::time::Instant;

use cove_core::config::{FileConfig, PoolConfig};
use cove_core::store::Store;
use cove_protocol::client::CovedClient;
use cove_protocol::shell::ExecRequest;
use cove_sandbox::LocalSettings;
use cove_sandbox::choice::{Narrate, Sandboxes};
use cove_sandbox::docker::{ContainerSpec, Docker};
use serde_json::json;

const IMAGE: &str = "cove-sandbox:test";
const ROUNDS: usize = 5;

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

async fn first_command(client: &CovedClient) {
    let out = client.exec(&ExecRequest::new("true")).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
}

struct Quiet;

impl Narrate for Quiet {
    fn note(&self, _: &str) {}
    fn warn(&self, _: &str) {}
}

/// Takes `ROUNDS` sandboxes from a pool filled beforehand: in this process, then through
/// the `cove` command; each until its first command answers.
async fn pooled() -> serde_json::Value {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("cove.db");
    let store = Store::open(&db).unwrap();
    let mut file = FileConfig::default();
    file.pools.insert(
        "bench".into(),
        PoolConfig {
            size: (2 * ROUNDS) as u32,
            image: Some(IMAGE.into()),
            ..PoolConfig::default()
        },
    );
    let local = LocalSettings::default();
    let sandboxes = Sandboxes {
        store: &store,
        file: &file,
        local: &local,
        in_cluster: None,
        narrate: &Quiet,
        // No refill behind the takes: the figure is the take alone.
        helper_program: None,
    };
    let fill = Instant::now();
    let filled = sandboxes
        .fill_pool("bench", &|| Ok(file.clone()), &|_| {})
        .await
        .unwrap();
    let fill_ms = ms(fill);
    let mut in_process = Vec::new();
    for round in 0..ROUNDS {
        let asked = Instant::now();
        let (_, sandbox) = sandboxes
            .claim("bench", &format!("p{round}"))
            .await
            .unwrap();
        first_command(&sandbox.client).await;
        in_process.push(ms(asked));
        sandbox.close().await;
    }
    // The same through the command line, as a person types it.
    let cove = env!("CARGO_BIN_EXE_cove");
    std::fs::create_dir_all(home.path().join("config/cove")).unwrap();
    std::fs::write(
        home.path().join("config/cove/cove.toml"),
        format!(
            "[pools.bench]\nsize = {}\nimage = \"{IMAGE}\"\n",
            2 * ROUNDS
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(cove)
            .args(args)
            .env("COVE_DB", &db)
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_DATA_HOME", home.path().join("data"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let mut by_command = Vec::new();
    for round in 0..ROUNDS {
        let name = format!("c{round}");
        let asked = Instant::now();
        run(&["sandbox", "create", &name, "--pool", "bench"]);
        run(&["exec", "--sandbox", &name, "true"]);
        by_command.push(ms(asked));
    }
    for made in store.sandboxes().unwrap() {
        sandboxes.remove_made(&made).await.unwrap();
    }
    sandboxes.drain_pool("bench").await.unwrap();
    json!({
        "fill_ms": fill_ms,
        "filled": filled.made,
        "take_to_first_command_ms": median(in_process),
        "cove_create_pool_then_exec_ms": median(by_command),
    })
}

async fn bench() {
    let docker = Docker::from_env().expect("a Docker engine (DOCKER_HOST)");
    docker
        .ping()
        .await
        .expect("the engine answers: run sandbox-image/build-test-image.sh");
    let spec = ContainerSpec {
        image: IMAGE.into(),
        ..ContainerSpec::default()
    };
    let (mut cold, mut first, mut pause, mut resume) = (vec![], vec![], vec![], vec![]);
    let (mut snapshot, mut fork) = (vec![], vec![]);
    let mut phases = Vec::new();
    for round in 0..ROUNDS {
        let name = format!("bench-{}-{round}", std::process::id());
        let token = format!("bench{round}{}", "0123456789abcdef".repeat(3));
        let asked = Instant::now();
        let made = docker.create(&name, &token, &spec).await.expect("created");
        let client = CovedClient::new(made.info.url.as_deref().unwrap(), token.clone()).unwrap();
        let command = Instant::now();
        first_command(&client).await;
        first.push(ms(command));
        cold.push(ms(asked));
        phases.push(made.phases);

        let paused = Instant::now();
        docker.pause(&made.info.id).await.unwrap();
        pause.push(ms(paused));
        let resumed = Instant::now();
        docker.unpause(&made.info.id).await.unwrap();
        first_command(&client).await;
        resume.push(ms(resumed));

        let snapped = Instant::now();
        let image = docker
            .snapshot(&made.info.id, &name, "bench", false)
            .await
            .unwrap();
        snapshot.push(ms(snapped));
        let forked = Instant::now();
        let copy = format!("{name}-fork");
        let from_snapshot = ContainerSpec {
            image: image.clone(),
            ..ContainerSpec::default()
        };
        let copy_made = docker.create(&copy, &token, &from_snapshot).await.unwrap();
        let copy_client =
            CovedClient::new(copy_made.info.url.as_deref().unwrap(), token.clone()).unwrap();
        first_command(&copy_client).await;
        fork.push(ms(forked));
        docker.remove(&copy_made.info.id).await.unwrap();
        docker.remove_network(&copy).await.unwrap();
        docker.remove_snapshot(&image).await.unwrap();

        docker.remove(&made.info.id).await.unwrap();
        docker.remove_network(&name).await.unwrap();
    }
    let phase = |f: fn(&cove_sandbox::docker::Phases) -> u64| {
        median(phases.iter().map(|p| f(p) as f64).collect())
    };
    let report = json!({
        "rounds": ROUNDS,
        "image": IMAGE,
        "cold_create_to_first_command_ms": median(cold),
        "cold_phases_ms": {
            "network": phase(|p| p.network_ms),
            "container": phase(|p| p.create_ms),
            "start": phase(|p| p.start_ms),
            "coved_healthy": phase(|p| p.healthy_ms),
            "first_command": median(first),
        },
        "pause_ms": median(pause),
        "resume_to_next_command_ms": median(resume),
        "snapshot_ms": median(snapshot),
        "fork_from_snapshot_to_first_command_ms": median(fork),
        "pooled": pooled().await,
        "published_for_comparison": {
            "daytona_create_to_first_command_ms": 110,
            "e2b_create_to_first_command_ms": 440,
        },
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
