//! A fake Kubernetes API server: what Cove's Kubernetes provider uses, answered in the API's
//! own wire format (Status objects for errors, JSON lines for watches, the channel protocol
//! over WebSocket for port-forward). A Pod whose token Secret exists "runs" a real `coved`
//! (its workspace an emptyDir, or the PersistentVolumeClaim it mounts, which outlives it),
//! turns Ready when coved answers `/health`, and is reached through port-forward. Bodies
//! are read into the types of `k8s-openapi` (the API's own OpenAPI types), so a request the
//! API would refuse is refused here too. Deleting a Pod deletes what it owns, as the
//! garbage collector does; `evict` does what a node under pressure does.

mod objects;
mod pods;
mod snapshots;

use objects::*;
use pods::*;
use snapshots::*;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::{DaemonBuilder, DaemonProcess};

/// What the fake cluster holds.
#[derive(Default)]
struct Cluster {
    /// By (namespace, name).
    pods: BTreeMap<(String, String), PodState>,
    secrets: BTreeMap<(String, String), Value>,
    claims: BTreeMap<(String, String), Claim>,
    snapshots: BTreeMap<(String, String), Snapshot>,
    /// Whether the snapshot API is served (the CSI snapshot controller installed).
    snapshots_offered: bool,
    /// Each change bumps it; watches follow it.
    version: u64,
    /// Every request, as `METHOD path`.
    calls: Vec<String>,
}

struct PodState {
    object: Value,
    daemon: Option<DaemonProcess>,
    /// The workspace when the Pod has no claim (an emptyDir: gone with the Pod).
    empty_dir: Option<TempDir>,
}

struct Claim {
    object: Value,
    dir: TempDir,
}

struct Shared {
    cluster: Mutex<Cluster>,
    changed: watch::Sender<u64>,
    coved: PathBuf,
}

type AppState = Arc<Shared>;

/// A running fake API server.
pub struct FakeKube {
    shared: AppState,
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    _dir: TempDir,
    kubeconfig: PathBuf,
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    (
        code,
        axum::Json(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code.as_u16(),
        })),
    )
        .into_response()
}

fn not_found(kind: &str, name: &str) -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("{kind} \"{name}\" not found"),
    )
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Cluster> {
    shared.cluster.lock().unwrap_or_else(|p| p.into_inner())
}

/// Bumps the version; the object gets it as its resourceVersion (and, new, the time it is
/// made, as the API stamps it).
fn touch(cluster: &mut Cluster, object: &mut Value) {
    cluster.version += 1;
    object["metadata"]["resourceVersion"] = json!(cluster.version.to_string());
    if object["metadata"]["creationTimestamp"].is_null() {
        object["metadata"]["creationTimestamp"] =
            json!(humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
    }
}

fn labels_match(object: &Value, selector: Option<&String>) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return true;
    };
    selector.split(',').all(|term| match term.split_once('=') {
        Some((key, value)) => object["metadata"]["labels"][key.trim_end_matches('=')] == value,
        None => !object["metadata"]["labels"][term].is_null(),
    })
}

fn list(kind: &str, items: Vec<Value>, version: u64) -> Response {
    axum::Json(json!({
        "kind": format!("{kind}List"), "apiVersion": "v1",
        "metadata": {"resourceVersion": version.to_string()},
        "items": items,
    }))
    .into_response()
}

impl FakeKube {
    /// Serves the fake API on a free port of 127.0.0.1; Pods run `coved`.
    pub async fn start(coved: impl AsRef<Path>) -> Result<FakeKube> {
        let shared: AppState = Arc::new(Shared {
            cluster: Mutex::new(Cluster {
                snapshots_offered: true,
                ..Cluster::default()
            }),
            changed: watch::Sender::new(0),
            coved: coved.as_ref().to_path_buf(),
        });
        let app = Router::new()
            .route("/api", get(|| async { axum::Json(discovery::versions()) }))
            .route("/api/v1", get(|| async { axum::Json(discovery::core()) }))
            .route("/apis", get(|| async { axum::Json(discovery::groups()) }))
            .route(
                "/apis/{group}/{version}",
                get(
                    |UrlPath((group, version)): UrlPath<(String, String)>| async move {
                        match discovery::group(&group, &version) {
                            Some(list) => axum::Json(list).into_response(),
                            None => not_found("groups", &group),
                        }
                    },
                ),
            )
            .route("/api/v1/pods", get(all_pods))
            .route(
                "/api/v1/namespaces/{ns}/pods",
                get(list_pods).post(create_pod),
            )
            .route(
                "/api/v1/namespaces/{ns}/pods/{name}",
                get(get_pod).delete(delete_pod),
            )
            .route(
                "/api/v1/namespaces/{ns}/pods/{name}/portforward",
                get(portforward),
            )
            .route("/api/v1/secrets", get(all_secrets))
            .route(
                "/api/v1/namespaces/{ns}/secrets",
                get(list_secrets).post(create_secret),
            )
            .route(
                "/api/v1/namespaces/{ns}/secrets/{name}",
                get(get_secret).delete(delete_secret),
            )
            .route(
                "/api/v1/namespaces/{ns}/persistentvolumeclaims",
                get(list_claims).post(create_claim),
            )
            .route(
                "/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}",
                get(get_claim).delete(delete_claim),
            )
            .route(
                "/apis/snapshot.storage.k8s.io/v1/namespaces/{ns}/volumesnapshots",
                get(list_snapshots).post(create_snapshot),
            )
            .route(
                "/apis/snapshot.storage.k8s.io/v1/namespaces/{ns}/volumesnapshots/{name}",
                get(get_snapshot).delete(delete_snapshot),
            )
            // Anything else is not here, said as the API says it.
            .fallback(|uri: axum::http::Uri| async move {
                status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    &format!("the server could not find the requested resource ({uri})"),
                )
            })
            .layer(axum::middleware::from_fn_with_state(
                shared.clone(),
                record_call,
            ))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://{addr}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: tester\n    namespace: default\ncurrent-context: fake\nusers:\n- name: tester\n  user:\n    token: fake-token\n"
            ),
        )?;
        Ok(FakeKube {
            shared,
            addr,
            task,
            _dir: dir,
            kubeconfig,
        })
    }

    /// A kubeconfig file pointing at this server (for `KUBECONFIG`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The server's address.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request made so far, as `METHOD path`.
    pub fn calls(&self) -> Vec<String> {
        lock(&self.shared).calls.clone()
    }

    /// The Pod `namespace/name` as the API holds it.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        lock(&self.shared)
            .pods
            .get(&(namespace.to_string(), name.to_string()))
            .map(|p| p.object.clone())
    }

    /// Where the coved of Pod `namespace/name` answers on this machine, while it runs.
    pub fn coved_url(&self, namespace: &str, name: &str) -> Option<String> {
        lock(&self.shared)
            .pods
            .get(&(namespace.to_string(), name.to_string()))
            .and_then(|p| p.daemon.as_ref())
            .map(|d| {
                d.client
                    .base_url()
                    .as_str()
                    .trim_end_matches('/')
                    .to_string()
            })
    }

    /// The VolumeSnapshot `namespace/name` as the API holds it.
    pub fn volume_snapshot(&self, namespace: &str, name: &str) -> Option<Value> {
        lock(&self.shared)
            .snapshots
            .get(&(namespace.to_string(), name.to_string()))
            .map(|s| s.object.clone())
    }

    /// Serves the snapshot API or not (a cluster without the CSI snapshot controller).
    pub fn offer_snapshots(&self, offered: bool) {
        lock(&self.shared).snapshots_offered = offered;
    }

    /// Takes away Pod `namespace/name` (one planted, whose daemon there is none of).
    pub fn remove_pod(&self, namespace: &str, name: &str) {
        lock(&self.shared)
            .pods
            .remove(&(namespace.to_string(), name.to_string()));
    }

    /// The Secret `namespace/name`.
    pub fn secret(&self, namespace: &str, name: &str) -> Option<Value> {
        lock(&self.shared)
            .secrets
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// The claim `namespace/name`.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<Value> {
        lock(&self.shared)
            .claims
            .get(&(namespace.to_string(), name.to_string()))
            .map(|c| c.object.clone())
    }

    /// How many Pods, Secrets and claims exist.
    pub fn counts(&self) -> (usize, usize, usize) {
        let cluster = lock(&self.shared);
        (
            cluster.pods.len(),
            cluster.secrets.len(),
            cluster.claims.len(),
        )
    }

    /// Evicts a Pod as a node under memory pressure does: its container is killed and it
    /// stays, Failed, with reason Evicted.
    pub async fn evict(&self, namespace: &str, name: &str) {
        let daemon = {
            let mut cluster = lock(&self.shared);
            let version = cluster.version + 1;
            let Some(pod) = cluster
                .pods
                .get_mut(&(namespace.to_string(), name.to_string()))
            else {
                return;
            };
            pod.object["status"] = json!({
                "phase": "Failed", "reason": "Evicted",
                "message": "The node was low on resource: memory.",
                "conditions": [{"type": "Ready", "status": "False"}],
            });
            pod.object["metadata"]["resourceVersion"] = json!(version.to_string());
            cluster.version = version;
            let pod = cluster
                .pods
                .get_mut(&(namespace.to_string(), name.to_string()));
            pod.and_then(|p| p.daemon.take())
        };
        if let Some(daemon) = daemon {
            let _ = daemon.terminate().await;
        }
        self.shared.changed.send_replace(lock(&self.shared).version);
    }

    /// Adds an object behind the provider's back (a leftover of another controller).
    pub fn plant(&self, kind: &str, namespace: &str, name: &str, labels: Value) {
        let mut cluster = lock(&self.shared);
        let mut object = json!({"metadata": {"name": name, "namespace": namespace, "labels": labels, "uid": format!("uid-{name}")}});
        touch(&mut cluster, &mut object);
        let key = (namespace.to_string(), name.to_string());
        match kind {
            "Secret" => {
                object["kind"] = json!("Secret");
                cluster.secrets.insert(key, object);
            }
            _ => {
                object["kind"] = json!("Pod");
                object["status"] = json!({"phase": "Running"});
                cluster.pods.insert(
                    key,
                    PodState {
                        object,
                        daemon: None,
                        empty_dir: None,
                    },
                );
            }
        }
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn record_call(
    State(shared): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let call = format!("{} {}", request.method(), request.uri());
    lock(&shared).calls.push(call);
    next.run(request).await
}

fn parse<T: serde::de::DeserializeOwned>(body: &Value) -> Result<T, Box<Response>> {
    serde_json::from_value(body.clone()).map_err(|e| {
        Box::new(status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            &format!("the body is not a valid object of its kind: {e}"),
        ))
    })
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    label_selector: Option<String>,
    field_selector: Option<String>,
    watch: Option<String>,
    resource_version: Option<String>,
    timeout_seconds: Option<u64>,
}

#[derive(serde::Deserialize)]
struct ForwardQuery {
    ports: String,
}

/// `GET .../pods/{name}/portforward?ports=7700`: the channel protocol over WebSocket.
async fn portforward(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
    Query(q): Query<ForwardQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let Ok(port) = q.ports.split(',').next().unwrap_or_default().parse::<u16>() else {
        return status(StatusCode::BAD_REQUEST, "BadRequest", "ports: invalid port");
    };
    let target = {
        let cluster = lock(&shared);
        match cluster.pods.get(&(ns, name.clone())) {
            None => return not_found("pods", &name),
            Some(pod) => match &pod.daemon {
                Some(daemon) => daemon.client.base_url().port(),
                None => {
                    return status(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        &format!("pod {name} is not running"),
                    );
                }
            },
        }
    };
    let Some(target) = target else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    upgrade
        .protocols(["v5.channel.k8s.io", "v4.channel.k8s.io"])
        .on_upgrade(move |socket| forward(socket, port, target))
}

/// Pipes one WebSocket to coved's port: channel 0 carries data, channel 1 errors; each
/// channel's first frame names the port.
async fn forward(socket: WebSocket, port: u16, target: u16) {
    let (mut sink, mut source) = socket.split();
    let Ok(tcp) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await else {
        let mut error = vec![1u8];
        error.extend_from_slice(b"connection refused");
        let _ = sink.send(Message::Binary(error.into())).await;
        return;
    };
    let (mut from_pod, mut to_pod) = tcp.into_split();
    let [lo, hi] = port.to_le_bytes();
    for channel in [0u8, 1u8] {
        if sink
            .send(Message::Binary(vec![channel, lo, hi].into()))
            .await
            .is_err()
        {
            return;
        }
    }
    let upstream = async {
        while let Some(Ok(message)) = source.next().await {
            match message {
                Message::Binary(bytes)
                    if bytes.first() == Some(&0)
                        && to_pod.write_all(&bytes[1..]).await.is_err() =>
                {
                    break;
                }
                // v5: the client closed its side of a channel.
                Message::Binary(bytes) if bytes.first() == Some(&255) => break,
                Message::Close(_) => break,
                _ => {}
            }
        }
        let _ = to_pod.shutdown().await;
    };
    let downstream = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from_pod.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut frame = Vec::with_capacity(n + 1);
                    frame.push(0u8);
                    frame.extend_from_slice(&buf[..n]);
                    if sink.send(Message::Binary(frame.into())).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = sink.close().await;
    };
    tokio::join!(upstream, downstream);
}

/// The discovery documents clients (kubectl) read to map kinds to paths.
mod discovery {
    use serde_json::{Value, json};

    fn resource(name: &str, kind: &str, namespaced: bool) -> Value {
        json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind,
            "verbs": ["create", "delete", "get", "list", "watch"]})
    }

    pub(super) fn versions() -> Value {
        json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
    }

    pub(super) fn core() -> Value {
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
            resource("pods", "Pod", true),
            resource("pods/portforward", "PodPortForwardOptions", true),
            resource("secrets", "Secret", true),
            resource("persistentvolumeclaims", "PersistentVolumeClaim", true),
            resource("serviceaccounts", "ServiceAccount", true),
            resource("services", "Service", true),
            resource("namespaces", "Namespace", false),
        ]})
    }

    /// A group, its version and its kinds (resource, kind).
    type Group = (
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    );

    const GROUPS: [Group; 2] = [
        (
            "rbac.authorization.k8s.io",
            "v1",
            &[("roles", "Role"), ("rolebindings", "RoleBinding")],
        ),
        (
            "networking.k8s.io",
            "v1",
            &[("networkpolicies", "NetworkPolicy")],
        ),
    ];

    pub(super) fn groups() -> Value {
        let groups: Vec<Value> = GROUPS
            .iter()
            .map(|(group, version, _)| {
                let gv = format!("{group}/{version}");
                json!({"name": group, "versions": [{"groupVersion": gv, "version": version}],
                    "preferredVersion": {"groupVersion": gv, "version": version}})
            })
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    pub(super) fn group(group: &str, version: &str) -> Option<Value> {
        let (_, _, kinds) = GROUPS
            .iter()
            .find(|(g, v, _)| *g == group && *v == version)?;
        let resources: Vec<Value> = kinds
            .iter()
            .map(|(name, kind)| resource(name, kind, true))
            .collect();
        Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": format!("{group}/{version}"), "resources": resources}))
    }
}
