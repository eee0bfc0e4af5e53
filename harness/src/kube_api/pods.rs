//! Pods: made, read, deleted and listed (or watched) as the API does, and the kubelet that
//! runs a real coved for each and turns it Ready when it answers.

use super::*;

/// The token a Pod's container gets from its Secret (`COVE_TOKEN` from `secretKeyRef`).
pub(super) fn token_of(cluster: &Cluster, namespace: &str, pod: &Value) -> Option<String> {
    let env = pod["spec"]["containers"][0]["env"].as_array()?;
    let from = env
        .iter()
        .find(|e| e["name"] == "COVE_TOKEN")?
        .get("valueFrom")?
        .get("secretKeyRef")?;
    let secret = cluster
        .secrets
        .get(&(namespace.to_string(), from["name"].as_str()?.to_string()))?;
    let key = from["key"].as_str()?;
    let encoded = secret["data"][key].as_str()?;
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The claim a Pod mounts at /workspace, if any.
pub(super) fn claim_of(pod: &Value) -> Option<String> {
    let mount = pod["spec"]["containers"][0]["volumeMounts"]
        .as_array()?
        .iter()
        .find(|m| m["mountPath"] == "/workspace")?;
    let volume = pod["spec"]["volumes"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == mount["name"])?;
    volume["persistentVolumeClaim"]["claimName"]
        .as_str()
        .map(str::to_string)
}

/// Starts the containers of Pods that can start (their Secret and claim exist): the kubelet.
pub(super) async fn kubelet(shared: &AppState) {
    let ready: Vec<((String, String), String, PathBuf)> = {
        let mut cluster = lock(shared);
        let keys: Vec<(String, String)> = cluster.pods.keys().cloned().collect();
        let mut ready = Vec::new();
        for key in keys {
            let Some(pod) = cluster.pods.get(&key) else {
                continue;
            };
            if pod.daemon.is_some() || pod.object["status"]["phase"] != "Pending" {
                continue;
            }
            let Some(token) = token_of(&cluster, &key.0, &pod.object) else {
                continue;
            };
            let workspace = match claim_of(&pod.object) {
                Some(claim) => match cluster.claims.get(&(key.0.clone(), claim)) {
                    Some(claim) => claim.dir.path().to_path_buf(),
                    None => continue,
                },
                None => match &pod.empty_dir {
                    Some(dir) => dir.path().to_path_buf(),
                    None => continue,
                },
            };
            // Starting: not Pending any more, so no second start.
            if let Some(pod) = cluster.pods.get_mut(&key) {
                pod.object["status"]["phase"] = json!("ContainerCreating");
            }
            ready.push((key, token, workspace));
        }
        ready
    };
    for (key, token, workspace) in ready {
        let daemon = DaemonBuilder::new(&shared.coved)
            .token_in_env(&token)
            .workspace(workspace)
            .spawn()
            .await;
        // A Pod deleted while it started leaves a daemon to stop.
        let orphan = settle(shared, &key, daemon);
        if let Some(daemon) = orphan {
            let _ = daemon.terminate().await;
        }
    }
}

/// Records how a Pod's container started; the daemon back if the Pod is gone.
pub(super) fn settle(
    shared: &AppState,
    key: &(String, String),
    daemon: Result<DaemonProcess>,
) -> Option<DaemonProcess> {
    let mut cluster = lock(shared);
    let version = cluster.version + 1;
    let Some(pod) = cluster.pods.get_mut(key) else {
        return daemon.ok();
    };
    match daemon {
        Ok(daemon) => {
            pod.object["status"] = json!({
                "phase": "Running", "podIP": "127.0.0.1",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "coved", "ready": true, "restartCount": 0,
                    "image": pod.object["spec"]["containers"][0]["image"], "imageID": "", "started": true}],
            });
            pod.daemon = Some(daemon);
        }
        Err(e) => {
            pod.object["status"] =
                json!({"phase": "Failed", "reason": "Error", "message": e.to_string()});
        }
    }
    pod.object["metadata"]["resourceVersion"] = json!(version.to_string());
    cluster.version = version;
    shared.changed.send_replace(version);
    None
}

pub(super) fn spawn_kubelet(shared: &AppState) {
    let shared = shared.clone();
    tokio::spawn(async move { kubelet(&shared).await });
}

pub(super) async fn create_pod(
    State(shared): State<AppState>,
    UrlPath(ns): UrlPath<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let pod: Pod = match parse(&body) {
        Ok(pod) => pod,
        Err(e) => return *e,
    };
    let Some(name) = pod.metadata.name.clone() else {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "metadata.name: Required value",
        );
    };
    if pod.spec.as_ref().is_none_or(|s| s.containers.is_empty()) {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "spec.containers: Required value",
        );
    }
    let response = {
        let mut cluster = lock(&shared);
        let key = (ns.clone(), name.clone());
        if cluster.pods.contains_key(&key) {
            return status(
                StatusCode::CONFLICT,
                "AlreadyExists",
                &format!("pods \"{name}\" already exists"),
            );
        }
        let mut object = serde_json::to_value(&pod).unwrap_or(body);
        object["kind"] = json!("Pod");
        object["apiVersion"] = json!("v1");
        object["metadata"]["namespace"] = json!(ns);
        object["metadata"]["uid"] = json!(format!("pod-{ns}-{name}-{}", cluster.version));
        object["status"] = json!({"phase": "Pending"});
        touch(&mut cluster, &mut object);
        let empty_dir = if claim_of(&object).is_none() {
            tempfile::tempdir().ok()
        } else {
            None
        };
        cluster.pods.insert(
            key,
            PodState {
                object: object.clone(),
                daemon: None,
                empty_dir,
            },
        );
        shared.changed.send_replace(cluster.version);
        (StatusCode::CREATED, axum::Json(object)).into_response()
    };
    spawn_kubelet(&shared);
    response
}

pub(super) async fn get_pod(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
) -> Response {
    match lock(&shared).pods.get(&(ns, name.clone())) {
        Some(pod) => axum::Json(pod.object.clone()).into_response(),
        None => not_found("pods", &name),
    }
}

pub(super) async fn delete_pod(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
) -> Response {
    let (removed, owned_daemon) = {
        let mut cluster = lock(&shared);
        let Some(mut pod) = cluster.pods.remove(&(ns.clone(), name.clone())) else {
            return not_found("pods", &name);
        };
        // The garbage collector: what the Pod owns goes with it.
        let uid = pod.object["metadata"]["uid"].clone();
        cluster.secrets.retain(|_, s| {
            !s["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
        });
        cluster.version += 1;
        shared.changed.send_replace(cluster.version);
        (pod.object.clone(), pod.daemon.take())
    };
    if let Some(daemon) = owned_daemon {
        let _ = daemon.terminate().await;
    }
    axum::Json(removed).into_response()
}

pub(super) async fn all_pods(
    State(shared): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Response {
    pods_in(&shared, None, q).await
}

pub(super) async fn list_pods(
    State(shared): State<AppState>,
    UrlPath(ns): UrlPath<String>,
    Query(q): Query<ListQuery>,
) -> Response {
    pods_in(&shared, Some(ns), q).await
}

pub(super) fn pod_matches(pod: &Value, ns: Option<&String>, q: &ListQuery) -> bool {
    let name_ok = match q
        .field_selector
        .as_deref()
        .and_then(|f| f.strip_prefix("metadata.name="))
    {
        Some(name) => pod["metadata"]["name"] == name,
        None => true,
    };
    ns.is_none_or(|ns| pod["metadata"]["namespace"] == ns.as_str())
        && name_ok
        && labels_match(pod, q.label_selector.as_ref())
}

pub(super) async fn pods_in(shared: &AppState, ns: Option<String>, q: ListQuery) -> Response {
    let watching = q.watch.as_deref().is_some_and(|w| w == "true" || w == "1");
    if !watching {
        let cluster = lock(shared);
        let items = cluster
            .pods
            .values()
            .filter(|p| pod_matches(&p.object, ns.as_ref(), &q))
            .map(|p| p.object.clone())
            .collect();
        return list("Pod", items, cluster.version);
    }
    // A watch: each change of a matching Pod after `resourceVersion`, as a JSON line.
    let since: u64 = q
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let limit = Duration::from_secs(q.timeout_seconds.unwrap_or(290).min(290));
    let shared = shared.clone();
    let mut changes = shared.changed.subscribe();
    let stream = async_stream(move |tx| async move {
        let mut seen: HashMap<String, u64> = HashMap::new();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let events: Vec<Value> = {
                let cluster = lock(&shared);
                let mut events = Vec::new();
                for pod in cluster.pods.values() {
                    if !pod_matches(&pod.object, ns.as_ref(), &q) {
                        continue;
                    }
                    let version: u64 = pod.object["metadata"]["resourceVersion"]
                        .as_str()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    let name = pod.object["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let last = seen.get(&name).copied().unwrap_or(since);
                    if version > last {
                        seen.insert(name, version);
                        events.push(json!({"type": "MODIFIED", "object": pod.object}));
                    }
                }
                events
            };
            for event in events {
                if tx.send(format!("{event}\n")).await.is_err() {
                    return;
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(axum::body::Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A body stream fed by a task through a channel.
pub(super) fn async_stream<F, Fut>(
    make: F,
) -> impl futures_util::Stream<Item = Result<String, std::convert::Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<String>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(make(tx));
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|line| (Ok(line), rx))
    })
}
