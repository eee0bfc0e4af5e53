//! The Kubernetes provider end to end against the fake API server (harness/src/kube_api.rs:
//! the API's wire format, a real coved per Pod, port-forward over WebSocket): a sandbox made
//! with a volume, a task run in it, listed, stopped and started (its files kept), evicted
//! and made again (kept), one without a volume evicted (its files lost, and said so), a
//! leftover of another Cove collected, removed; and the errors a user meets first.

use std::time::Duration;

use cove_harness::kube_api::FakeKube;
use cove_harness::llm::Wire;
use cove_harness::{Turn, workspace_binary};
use serde_json::{Value, json};

use super::{Cove, events, explain};

#[tokio::test]
async fn a_kubernetes_sandbox_is_made_used_stopped_started_evicted_collected_and_removed() {
    let cove = Cove::new(Wire::OpenAi).await;
    let kube = FakeKube::start(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = cove.command(args);
        cmd.env("KUBECONFIG", kube.kubeconfig())
            .env_remove("KUBERNETES_SERVICE_HOST");
        async move {
            tokio::time::timeout(Duration::from_secs(120), cmd.output())
                .await
                .expect("cove finished within 2 minutes")
                .unwrap()
        }
    };

    let out = run(&[
        "sandbox",
        "create",
        "k1",
        "--kubernetes",
        "--namespace",
        "agents",
        "--image",
        "cove-sandbox:test",
        "--cpu",
        "2",
        "--memory",
        "1Gi",
        "--storage",
        "1Gi",
        "--deadline-secs",
        "3600",
    ])
    .await;
    assert!(out.status.success(), "{}", explain(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--sandbox k1"));

    // What the provider asked for, as the API received it.
    let pod = kube.pod("agents", "cove-k1").expect("the Pod");
    let spec = &pod["spec"];
    assert_eq!(
        pod["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "cove"
    );
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(spec["activeDeadlineSeconds"], 3600);
    let container = &spec["containers"][0];
    assert_eq!(container["image"], "cove-sandbox:test");
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert_eq!(
        container["securityContext"]["capabilities"]["drop"],
        json!(["ALL"])
    );
    assert_eq!(container["resources"]["limits"]["cpu"], "2");
    assert_eq!(container["resources"]["limits"]["memory"], "1Gi");
    let volumes = spec["volumes"].as_array().unwrap();
    assert!(
        volumes.iter().any(|v| v["emptyDir"]["medium"] == "Memory"),
        "/dev/shm in memory: {volumes:?}"
    );
    let secret = kube.secret("agents", "cove-k1-token").expect("the Secret");
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["uid"], pod["metadata"]["uid"],
        "the Pod owns its Secret"
    );
    let claim = kube
        .claim("agents", "cove-k1-workspace")
        .expect("the claim");
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");

    // A task in it, through port-forward.
    cove.llm.push(Turn::text("").call(
        "create_file",
        json!({"file_path": "made.txt", "file_contents": "in kubernetes"}),
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
        "k1",
        "--no-prompt",
    ])
    .await;
    assert!(task.status.success(), "{}", explain(&task));
    assert!(
        kube.calls()
            .iter()
            .any(|c| c.starts_with("GET /api/v1/namespaces/agents/pods/cove-k1/portforward")),
        "{:?}",
        kube.calls()
    );
    let ls = run(&["--json", "sandbox", "ls"]).await;
    let rows = events(&ls);
    let row = rows.iter().find(|r| r["name"] == "k1").unwrap();
    assert_eq!(
        (row["kind"].clone(), row["healthy"].clone()),
        (json!("k8s"), json!(true)),
        "{}",
        explain(&ls)
    );

    // Stopped: the Pod and its Secret go, the claim stays; started: the files are there.
    let stop = run(&["sandbox", "stop", "k1"]).await;
    assert!(stop.status.success(), "{}", explain(&stop));
    assert!(kube.pod("agents", "cove-k1").is_none());
    assert!(kube.secret("agents", "cove-k1-token").is_none());
    assert!(kube.claim("agents", "cove-k1-workspace").is_some());
    let ls = run(&["--json", "sandbox", "ls"]).await;
    assert_eq!(ls.status.code(), Some(1), "a stopped sandbox is down");
    // Someone who may make Pods there stands one in under its name, labels and all: it is
    // not the Pod Cove made, and gets no token.
    let installation =
        kube.claim("agents", "cove-k1-workspace").unwrap()["metadata"]["labels"].clone();
    kube.plant("Pod", "agents", "cove-k1", installation.clone());
    let stolen = run(&["exec", "echo hi", "--sandbox", "k1"]).await;
    assert!(!stolen.status.success(), "{}", explain(&stolen));
    assert!(
        String::from_utf8_lossy(&stolen.stderr).contains("is not the one Cove made"),
        "{}",
        explain(&stolen)
    );
    assert!(
        kube.secret("agents", "cove-k1-token").is_none(),
        "no token went to it"
    );
    kube.remove_pod("agents", "cove-k1");
    let start = run(&["sandbox", "start", "k1"]).await;
    assert!(start.status.success(), "{}", explain(&start));
    let cat = run(&["cat", "made.txt", "--sandbox", "k1"]).await;
    assert_eq!(
        String::from_utf8_lossy(&cat.stdout).trim(),
        "in kubernetes",
        "{}",
        explain(&cat)
    );

    // Evicted: made again on the next use, with its workspace.
    kube.evict("agents", "cove-k1").await;
    let cat = run(&["cat", "made.txt", "--sandbox", "k1"]).await;
    assert_eq!(
        String::from_utf8_lossy(&cat.stdout).trim(),
        "in kubernetes",
        "{}",
        explain(&cat)
    );
    let said = String::from_utf8_lossy(&cat.stderr);
    assert!(
        said.contains("Evicted") && said.contains("on its volume"),
        "{said}"
    );

    // Without a volume, an eviction loses the files, and Cove says so. `--sandbox k8s:NAME`
    // makes such a sandbox on first use, in the kubeconfig's namespace.
    let write = run(&["exec", "echo scratch > notes.txt", "--sandbox", "k8s:k2"]).await;
    assert!(write.status.success(), "{}", explain(&write));
    assert!(
        String::from_utf8_lossy(&write.stderr).contains("creating sandbox k2"),
        "{}",
        explain(&write)
    );
    assert!(
        kube.pod("default", "cove-k2").is_some(),
        "the kubeconfig's namespace"
    );
    kube.evict("default", "cove-k2").await;
    let read = run(&["exec", "cat notes.txt || echo gone", "--sandbox", "k2"]).await;
    assert_eq!(
        String::from_utf8_lossy(&read.stdout).trim().lines().last(),
        Some("gone")
    );
    assert!(
        String::from_utf8_lossy(&read.stderr).contains("lost its workspace"),
        "{}",
        explain(&read)
    );

    // Leftovers of this installation are collected; Cove's own sandboxes are not touched,
    // and neither is what another installation (another user, in a shared namespace) made.
    let ours = installation["cove.installation"].clone();
    let ghost = json!({"app.kubernetes.io/managed-by": "cove", "cove.sandbox": "ghost", "cove.installation": ours});
    kube.plant("Pod", "agents", "cove-ghost", ghost.clone());
    kube.plant("Secret", "agents", "cove-ghost-token", ghost);
    kube.plant("Pod", "agents", "someone-else", json!({"app": "web"}));
    let theirs = json!({"app.kubernetes.io/managed-by": "cove", "cove.sandbox": "theirs", "cove.installation": "another-users"});
    kube.plant("Pod", "agents", "cove-theirs", theirs);
    let dry = run(&["--json", "sandbox", "gc"]).await;
    assert_eq!(events(&dry).len(), 2, "{}", explain(&dry));
    assert!(
        kube.pod("agents", "cove-ghost").is_some(),
        "a dry run removes nothing"
    );
    let gc = run(&["--json", "sandbox", "gc", "--yes"]).await;
    assert!(gc.status.success(), "{}", explain(&gc));
    let gone: Vec<Value> = events(&gc);
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(kube.pod("agents", "cove-ghost").is_none());
    assert!(kube.secret("agents", "cove-ghost-token").is_none());
    assert!(kube.pod("agents", "someone-else").is_some(), "not Cove's");
    assert!(
        kube.pod("agents", "cove-theirs").is_some(),
        "another installation's"
    );
    assert!(
        kube.pod("agents", "cove-k1").is_some(),
        "a sandbox Cove knows"
    );

    // Removed: Pod, Secret and claim.
    for name in ["k1", "k2"] {
        let rm = run(&["sandbox", "rm", name]).await;
        assert!(rm.status.success(), "{}", explain(&rm));
    }
    assert!(kube.pod("agents", "cove-k1").is_none());
    assert!(kube.claim("agents", "cove-k1-workspace").is_none());
    assert_eq!(kube.counts(), (2, 0, 0), "only others' Pods are left");
}

#[tokio::test]
async fn kubernetes_mistakes_are_one_clear_line() {
    let cove = Cove::new(Wire::OpenAi).await;
    let mut none = cove.command(&["sandbox", "create", "k1", "--kubernetes"]);
    none.env("KUBECONFIG", cove.home.path().join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST");
    let none = none.output().await.unwrap();
    assert_eq!(none.status.code(), Some(6), "{}", explain(&none));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("KUBECONFIG"),
        "{}",
        explain(&none)
    );
    let upper = cove
        .run(&["sandbox", "create", "Big_One", "--kubernetes"])
        .await;
    assert_eq!(upper.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&upper.stderr).contains("lower-case"));
    let storage_alone = cove
        .run(&["sandbox", "create", "k3", "--storage", "1Gi"])
        .await;
    assert_eq!(
        storage_alone.status.code(),
        Some(2),
        "--storage needs --kubernetes"
    );
    // k8s:NAME makes the sandbox on first use, and so needs credentials too.
    let mut first_use = cove.command(&["exec", "true", "--sandbox", "k8s:fresh"]);
    first_use
        .env("KUBECONFIG", cove.home.path().join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST");
    let first_use = first_use.output().await.unwrap();
    assert_eq!(first_use.status.code(), Some(6), "{}", explain(&first_use));
}

#[tokio::test]
async fn the_manifests_are_valid_kubernetes_and_apply_with_kubectl() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sandbox-image/k8s");
    let files: Vec<std::path::PathBuf> = ["sandbox.yaml", "rbac.yaml", "networkpolicy.yaml"]
        .iter()
        .map(|f| dir.join(f))
        .collect();
    // The API's schemas, strictly (an unknown field is an error): kubernetes-validate from
    // PyPI, which bundles them, installed by install-test-deps.sh.
    let validator = cove_harness::mcp_servers::python()
        .unwrap()
        .with_file_name("kubernetes-validate");
    assert!(
        validator.exists(),
        "kubernetes-validate is missing: run harness/install-test-deps.sh"
    );
    let checked = std::process::Command::new(&validator)
        .args(["--strict", "-k", "1.33.0"])
        .args(&files)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&checked.stdout).to_string()
        + &String::from_utf8_lossy(&checked.stderr);
    assert!(checked.status.success(), "{said}");
    assert_eq!(said.matches(" passed ").count(), 8, "{said}");
    // The check can fail: a misspelt field is caught.
    let broken = tempfile::NamedTempFile::with_suffix(".yaml").unwrap();
    std::fs::write(
        broken.path(),
        std::fs::read_to_string(&files[0])
            .unwrap()
            .replace("allowPrivilegeEscalation", "allowPrivilegeEscalatoin"),
    )
    .unwrap();
    let refused = std::process::Command::new(&validator)
        .args(["--strict", "-k", "1.33.0"])
        .arg(broken.path())
        .output()
        .unwrap();
    assert!(!refused.status.success(), "a misspelt field passed");

    // kubectl (Debian's kubernetes-client) applies them, dry run, against the fake API.
    let kubectl = cove_harness::bins::on_path(&["kubectl"])
        .expect("kubectl is missing: apt-get install kubernetes-client (.ci/run installs it)");
    let kube = FakeKube::start(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    let applied = tokio::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kube.kubeconfig())
        .args(["apply", "--dry-run=client", "--validate=false"])
        .args(
            files
                .iter()
                .flat_map(|f| [std::ffi::OsStr::new("-f"), f.as_os_str()]),
        )
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&applied.stdout).to_string()
        + &String::from_utf8_lossy(&applied.stderr);
    assert!(applied.status.success(), "{said}");
    for object in [
        "pod/cove-sandbox-1",
        "secret/cove-sandbox-1-token",
        "persistentvolumeclaim/cove-sandbox-1-workspace",
        "role.rbac.authorization.k8s.io/cove-controller",
        "rolebinding.rbac.authorization.k8s.io/cove-controller",
        "networkpolicy.networking.k8s.io/cove-sandboxes-isolated",
    ] {
        assert!(
            said.contains(&format!("{object} created (dry run)")),
            "{object}: {said}"
        );
    }
    assert_eq!(kube.counts(), (0, 0, 0), "a dry run makes nothing");
}
