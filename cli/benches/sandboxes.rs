//! `cargo bench -p cove --bench sandboxes`: a Docker sandbox's life on the real engine
//! (`sandbox-image/build-test-image.sh` starts it and builds `cove-sandbox:test`), printed
//! as JSON, each figure the median of a few rounds:
//!
//! - cold: from asking for a new sandbox to its first command answering, and where it went
//!   (network, container, start, coved healthy, the first command);
//! - pause: the engine freezing it;
//! - resume: from asking to resume it to its next command answering.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::time::Instant;

use cove_protocol::client::CovedClient;
use cove_protocol::shell::ExecRequest;
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
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
