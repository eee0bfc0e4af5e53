//! The provider's Pods, Secrets and claims as the API gets them, held to the manifests the
//! repository ships.

use super::*;

fn plan() -> PodPlan {
    PodPlan {
        namespace: "agents".into(),
        image: "cove-sandbox:latest".into(),
        cpu: Some("2".into()),
        memory_bytes: Some(4 << 30),
        storage_bytes: Some(10 << 30),
        deadline_secs: Some(3600),
        shm_bytes: 512 << 20,
        installation: Some("5d41402abc4b2a76".into()),
        pod_uid: None,
        restore_from: None,
        disk_bytes: None,
    }
}

#[test]
fn the_pod_is_restricted_and_labelled_as_coves() {
    let pod = serde_json::to_value(pod_manifest("b1", &plan())).unwrap();
    assert_eq!(pod["metadata"]["name"], "cove-b1");
    assert_eq!(
        pod["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "cove"
    );
    assert_eq!(pod["metadata"]["labels"]["cove.sandbox"], "b1");
    let spec = &pod["spec"];
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(spec["activeDeadlineSeconds"], 3600);
    assert_eq!(spec["automountServiceAccountToken"], false);
    let c = &spec["containers"][0];
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    assert_eq!(c["resources"]["limits"]["memory"], "4Gi");
    assert_eq!(c["resources"]["requests"]["cpu"], "2");
    assert_eq!(
        c["env"][0]["valueFrom"]["secretKeyRef"]["name"],
        "cove-b1-token"
    );
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/health");
    let volumes = spec["volumes"].as_array().unwrap();
    assert_eq!(
        volumes[0]["persistentVolumeClaim"]["claimName"],
        "cove-b1-workspace"
    );
    assert_eq!(volumes[1]["emptyDir"]["medium"], "Memory");
    let bare = serde_json::to_value(pod_manifest(
        "b2",
        &PodPlan {
            storage_bytes: None,
            cpu: None,
            memory_bytes: None,
            deadline_secs: None,
            ..plan()
        },
    ))
    .unwrap();
    assert_eq!(bare["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "10Gi");
    assert!(bare["spec"]["activeDeadlineSeconds"].is_null());
    // Told nothing, a Pod still has requests and a ceiling, disk included.
    let resources = &bare["spec"]["containers"][0]["resources"];
    assert_eq!(resources["requests"]["cpu"], "500m");
    assert_eq!(resources["requests"]["memory"], "1Gi");
    assert_eq!(resources["limits"]["cpu"], "2");
    assert_eq!(resources["limits"]["memory"], "4Gi");
    assert_eq!(resources["limits"]["ephemeral-storage"], "10Gi");
}

#[test]
fn the_manifest_in_the_repository_is_what_the_provider_makes() {
    use serde::Deserialize;
    let text = include_str!("../../../sandbox-image/k8s/sandbox.yaml");
    let mut pod = None;
    let mut claim = None;
    for document in yaml_serde::Deserializer::from_str(text) {
        let value = serde_json::Value::deserialize(document).unwrap();
        match value["kind"].as_str() {
            Some("Pod") => pod = Some(serde_json::from_value::<Pod>(value).unwrap()),
            Some("PersistentVolumeClaim") => {
                claim = Some(serde_json::from_value::<PersistentVolumeClaim>(value).unwrap());
            }
            _ => {}
        }
    }
    let plan = PodPlan {
        namespace: "cove-sandboxes".into(),
        image: "cove-sandbox:latest".into(),
        cpu: Some(cpu_quantity(2.0)),
        memory_bytes: Some(4 << 30),
        storage_bytes: Some(10 << 30),
        deadline_secs: None,
        shm_bytes: 512 << 20,
        installation: Some("5d41402abc4b2a76".into()),
        pod_uid: None,
        restore_from: None,
        disk_bytes: None,
    };
    assert_eq!(pod.unwrap(), pod_manifest("sandbox-1", &plan));
    assert_eq!(claim.unwrap(), claim_manifest("sandbox-1", &plan, 10 << 30));
}

/// The documents of a shipped manifest, as JSON.
fn manifest(text: &str) -> Vec<serde_json::Value> {
    use serde::Deserialize;
    yaml_serde::Deserializer::from_str(text)
        .map(|d| serde_json::Value::deserialize(d).unwrap())
        .collect()
}

#[test]
fn the_shipped_policy_keeps_sandboxes_from_the_metadata_service_and_the_cluster() {
    let policy = &manifest(include_str!(
        "../../../sandbox-image/k8s/networkpolicy.yaml"
    ))[0];
    let spec = &policy["spec"];
    assert_eq!(
        spec["policyTypes"],
        serde_json::json!(["Ingress", "Egress"])
    );
    let egress = spec["egress"].as_array().unwrap();
    // DNS, and the internet less what is not the internet.
    assert_eq!(egress[0]["ports"][0]["port"], 53);
    let v4 = &egress[1]["to"][0]["ipBlock"];
    assert_eq!(v4["cidr"], "0.0.0.0/0");
    let except: Vec<&str> = v4["except"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    for range in [
        "169.254.0.0/16",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
    ] {
        assert!(except.contains(&range), "{range} is reachable: {except:?}");
    }
    let namespace = manifest(include_str!("../../../sandbox-image/k8s/rbac.yaml"))
        .into_iter()
        .find(|d| d["kind"] == "Namespace")
        .unwrap();
    assert_eq!(
        namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
}

#[tokio::test]
async fn inside_a_cluster_coved_is_reached_at_the_pods_address() {
    let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
    let kube = Kubernetes {
        client: kube::Client::try_from(config).unwrap(),
        default_namespace: "default".into(),
        in_cluster: true,
    };
    let tunnel = kube
        .connect("b1", "agents", Some("10.1.2.3"))
        .await
        .unwrap();
    assert_eq!(tunnel.url, "http://10.1.2.3:7700");
    let v6 = kube.connect("b1", "agents", Some("fd00::7")).await.unwrap();
    assert_eq!(v6.url, "http://[fd00::7]:7700");
    assert!(kube.connect("b1", "agents", None).await.is_err());
}

#[test]
fn sizes_read_as_people_write_them() {
    assert_eq!(bytes_quantity(4 << 30).0, "4Gi");
    assert_eq!(bytes_quantity(512 << 20).0, "512Mi");
    assert_eq!(bytes_quantity(1500).0, "1500");
    assert_eq!(cpu_quantity(2.0), "2");
    assert_eq!(cpu_quantity(0.5), "500m");
}

#[test]
fn the_secret_is_owned_by_the_pod() {
    let mut pod = pod_manifest("b1", &plan());
    pod.metadata.uid = Some("u-1".into());
    let secret = serde_json::to_value(secret_manifest("b1", &plan(), "t0k3n", &pod)).unwrap();
    assert_eq!(
        secret["metadata"]["labels"]["cove.installation"],
        "5d41402abc4b2a76"
    );
    assert_eq!(secret["metadata"]["ownerReferences"][0]["uid"], "u-1");
    assert_eq!(secret["metadata"]["ownerReferences"][0]["kind"], "Pod");
    assert_eq!(secret["stringData"]["token"], "t0k3n");
}

#[test]
fn a_pod_reads_as_its_state() {
    let pod = |status: serde_json::Value| -> Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}, "status": status}))
            .unwrap()
    };
    assert_eq!(
        state_of(&pod(
            serde_json::json!({"phase": "Running", "podIP": "10.1.2.3",
            "conditions": [{"type": "Ready", "status": "True"}]})
        )),
        PodState::Ready {
            ip: Some("10.1.2.3".into())
        }
    );
    assert_eq!(
        state_of(&pod(serde_json::json!({"phase": "Pending"}))),
        PodState::Starting("Pending".into())
    );
    assert_eq!(
        state_of(&pod(
            serde_json::json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory."})
        )),
        PodState::Failed("Evicted: The node was low on resource: memory.".into())
    );
}
