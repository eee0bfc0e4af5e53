//! `cargo bench -p cove-sandbox --bench kubernetes`: 100 Kubernetes sandboxes made at once through
//! the provider, against the fake API server of the tests (the API's wire format; each Pod
//! runs a real coved, and turns Ready when it answers). Printed as JSON: wall time, each
//! sandbox's time to ready, and the API requests one sandbox costs (its claim, Pod and
//! Secret made, the checks before, the watch until ready).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench binary may panic on failure

use std::time::Instant;

use cove_harness::kube_api::FakeKube;
use cove_harness::stats::{ms, round, summary};
use cove_harness::workspace_binary;
use cove_sandbox::kubernetes::{Kubernetes, PodPlan};
use serde_json::json;

const SANDBOXES: usize = 100;

#[tokio::main]
async fn main() {
    let fake = FakeKube::start(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    let kube = Kubernetes::from_kubeconfig(fake.kubeconfig())
        .await
        .unwrap();
    let plan = PodPlan {
        namespace: "bench".into(),
        image: "cove-sandbox:bench".into(),
        cpu: Some("1".into()),
        memory_bytes: Some(2 << 30),
        storage_bytes: Some(1 << 30),
        deadline_secs: None,
        shm_bytes: 512 << 20,
        installation: Some("bench".into()),
        pod_uid: None,
        restore_from: None,
        disk_bytes: None,
    };
    let before = fake.calls().len();
    let started = Instant::now();
    let made = futures_util::future::join_all((0..SANDBOXES).map(|i| {
        let kube = kube.clone();
        let plan = plan.clone();
        async move {
            let begun = Instant::now();
            kube.create(&format!("s{i}"), &format!("token-{i:032}"), &plan)
                .await
                .unwrap();
            ms(begun.elapsed())
        }
    }))
    .await;
    let wall = started.elapsed();
    let requests = fake.calls().len() - before;
    assert_eq!(fake.counts(), (SANDBOXES, SANDBOXES, SANDBOXES));
    for i in 0..SANDBOXES {
        kube.remove(&format!("s{i}"), "bench").await.unwrap();
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "sandboxes": SANDBOXES,
            "wall_s": round(wall.as_secs_f64()),
            "to_ready_ms": summary(made),
            "requests_per_sandbox": round(requests as f64 / SANDBOXES as f64),
        }))
        .unwrap()
    );
}
