//! The Kubernetes provider: one Pod per sandbox from the sandbox image, through the
//! Kubernetes API with `kube` (credentials as kubectl finds them: `KUBECONFIG` or
//! `~/.kube/config`, else the Pod's own service account in a cluster).
//!
//! A sandbox is a Pod `cove-NAME` with a restricted security context (not root, no
//! privilege escalation, every capability dropped, seccomp RuntimeDefault), its token in the
//! Secret `cove-NAME-token` that the Pod owns (so it goes with the Pod), resource requests
//! and limits, a memory-backed `/dev/shm`, a readiness probe on `/health`, and, with a size
//! asked for, its workspace on the PersistentVolumeClaim `cove-NAME-workspace`, which
//! outlives the Pod. Kubernetes has no stopped Pods: stopping deletes the Pod (the claim
//! stays), starting makes it again. The controller reaches coved through the API server's
//! port-forward from outside the cluster, at the Pod's address from inside it.

mod manifest;
mod snapshots;

pub use manifest::{
    bytes_quantity, claim_manifest, claim_name, cpu_quantity, pod_manifest, pod_name,
    secret_manifest, secret_name,
};

pub use snapshots::{SNAPSHOT_GROUP, VolumeSnapshot, parse_reference, snapshot_manifest};

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HTTPGetAction, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, Pod, PodSecurityContext, PodSpec, Probe,
    ResourceRequirements, SeccompProfile, Secret, SecretKeySelector, SecurityContext,
    TypedLocalObjectReference, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use serde::{Deserialize, Serialize};

/// The label every object Cove makes carries.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "cove");

/// The label naming the sandbox an object belongs to.
pub const SANDBOX_LABEL: &str = "cove.sandbox";

/// The label naming the Cove installation (its database) that made an object: `gc` touches
/// only its own, in a namespace shared with other users.
pub const INSTALLATION_LABEL: &str = "cove.installation";

/// coved's port in the Pod.
pub const PORT: u16 = 7700;

/// The token's key in its Secret.
pub const TOKEN_KEY: &str = "token";

/// What a sandbox Pod asks for when told nothing: enough to start, and a ceiling no
/// sandbox passes unasked (a Pod with no limits can take its node).
pub const DEFAULT_REQUESTS: (&str, &str) = ("500m", "1Gi");

pub const DEFAULT_LIMITS: (&str, &str) = ("2", "4Gi");

/// Scratch disk (the container's own layer and logs) a Pod may use.
pub const EPHEMERAL_STORAGE: (&str, &str) = ("1Gi", "10Gi");

/// Size of a workspace held on the node (no claim asked for).
pub const WORKSPACE_ON_NODE: &str = "10Gi";

/// The Pod's uid and gid: the image's `agent`.
const AGENT_UID: i64 = 1000;

/// How long a Pod may take to turn Ready (an image pull included).
const READY_WAIT: Duration = Duration::from_secs(300);

/// What a Kubernetes sandbox is made of; kept with the sandbox so its Pod can be made again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodPlan {
    pub namespace: String,
    pub image: String,
    /// Cores, requested and the limit (`2`, `500m`).
    pub cpu: Option<String>,
    /// Bytes, requested and the limit.
    pub memory_bytes: Option<i64>,
    /// Bytes of a PersistentVolumeClaim for the workspace; none: an emptyDir.
    pub storage_bytes: Option<i64>,
    /// `activeDeadlineSeconds`: the Pod is stopped this long after it starts.
    pub deadline_secs: Option<i64>,
    /// Size of the memory-backed /dev/shm.
    pub shm_bytes: i64,
    /// The installation that made it (none for sandboxes made before Cove labelled them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation: Option<String>,
    /// The uid of the Pod Cove made last: a Pod of the same name that is not this one is
    /// someone else's, and gets no token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// The VolumeSnapshot (in `namespace`) its workspace claim is made from, when it was
    /// made from a snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_from: Option<String>,
    /// Bytes of ephemeral storage (its own layer, logs, a workspace without a volume) it
    /// may use; none: the default limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<i64>,
}

/// What went wrong with Kubernetes, by what the user does next.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// Give Cove a kubeconfig (KUBECONFIG, ~/.kube/config) or run it in a cluster.
    #[error(
        "no Kubernetes credentials: {0} (set KUBECONFIG, or ~/.kube/config, as kubectl uses; inside a cluster the Pod's service account is used)"
    )]
    NoConfig(String),
    /// The API server did not answer; check the cluster and the network.
    #[error("cannot reach the Kubernetes API: {0}")]
    Unreachable(String),
    /// The API refused; its message says why (RBAC: see sandbox-image/k8s/rbac.yaml).
    #[error("Kubernetes refused ({code} {reason}): {message}")]
    Api {
        code: u16,
        reason: String,
        message: String,
    },
    /// Pick another name, or remove the old sandbox.
    #[error(
        "{kind} {name} exists already in namespace {namespace}: pick another name or `cove sandbox rm`"
    )]
    Conflict {
        kind: &'static str,
        name: String,
        namespace: String,
    },
    /// The Pod did not turn Ready; its state says why.
    #[error(
        "the sandbox Pod {name} did not turn ready within {secs} s: {why} (see `kubectl describe pod {name} -n {namespace}`)"
    )]
    NotReady {
        name: String,
        namespace: String,
        secs: u64,
        why: String,
    },
    /// The port-forward could not be opened.
    #[error("cannot reach coved in Pod {name}: {message}")]
    Forward { name: String, message: String },
    /// The cluster has no VolumeSnapshot API: snapshots of Kubernetes sandboxes need the CSI
    /// snapshot controller and a driver that takes them.
    #[error(
        "the cluster offers no volume snapshots in namespace {namespace} (the snapshot.storage.k8s.io API is not installed): install the CSI snapshot controller and a VolumeSnapshotClass for your storage, or snapshot Docker sandboxes"
    )]
    NoSnapshots { namespace: String },
    /// The snapshot controller could not take it; its message says why.
    #[error(
        "the snapshot {name} in namespace {namespace} failed: {why} (see `kubectl describe volumesnapshot {name} -n {namespace}`)"
    )]
    SnapshotFailed {
        name: String,
        namespace: String,
        why: String,
    },
    /// A Pod of the sandbox's name is not the one Cove made: someone else's.
    #[error(
        "Pod {name} in namespace {namespace} is not the one Cove made for this sandbox ({why}); it gets no token: delete it (kubectl delete pod {name} -n {namespace}) and use the sandbox again"
    )]
    NotOurs {
        name: String,
        namespace: String,
        why: String,
    },
}

impl From<kube::Error> for KubeError {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(status) => KubeError::Api {
                code: status.code,
                reason: status.reason.clone(),
                message: status.message.clone(),
            },
            other => KubeError::Unreachable(other.to_string()),
        }
    }
}

/// Where a sandbox's Pod stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    /// There is none (never made, stopped, or deleted outside Cove).
    Missing,
    /// Made, not ready yet.
    Starting(String),
    /// Ready, at this address in the cluster.
    Ready { ip: Option<String> },
    /// Ended and will not start again (evicted, past its deadline, failed).
    Failed(String),
}

fn state_of(pod: &Pod) -> PodState {
    let Some(status) = &pod.status else {
        return PodState::Starting("Pending".into());
    };
    let phase = status.phase.clone().unwrap_or_else(|| "Pending".into());
    if phase == "Failed" || phase == "Succeeded" {
        let why = [status.reason.clone(), status.message.clone()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
        return PodState::Failed(if why.is_empty() { phase } else { why });
    }
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    if ready {
        PodState::Ready {
            ip: status.pod_ip.clone(),
        }
    } else {
        PodState::Starting(phase)
    }
}

/// How a sandbox came up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// Its Pod was made again (it had been stopped, evicted or deleted).
    pub remade: bool,
    /// Made again without a claim: the workspace it had is gone.
    pub lost_workspace: bool,
    /// Why the old Pod ended, when it failed.
    pub why: Option<String>,
    pub ip: Option<String>,
    /// The uid of the Pod it runs in: to be kept in the plan when it is made again.
    pub uid: Option<String>,
}

/// A Kubernetes cluster.
#[derive(Clone)]
pub struct Kubernetes {
    client: kube::Client,
    /// The namespace of the kubeconfig's context (or the Pod's own).
    pub default_namespace: String,
    /// coved is reached at Pod addresses (inside the cluster), not through port-forward.
    pub in_cluster: bool,
}

impl std::fmt::Debug for Kubernetes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubernetes")
            .field("default_namespace", &self.default_namespace)
            .field("in_cluster", &self.in_cluster)
            .finish()
    }
}

impl Kubernetes {
    /// The cluster kubectl would use; `in_cluster` forces how coved is reached (default:
    /// inside a cluster when `KUBERNETES_SERVICE_HOST` is set).
    pub async fn from_env(in_cluster: Option<bool>) -> Result<Kubernetes, KubeError> {
        let config = kube::Config::infer()
            .await
            .map_err(|e| KubeError::NoConfig(e.to_string()))?;
        let default_namespace = config.default_namespace.clone();
        let client =
            kube::Client::try_from(config).map_err(|e| KubeError::NoConfig(e.to_string()))?;
        Ok(Kubernetes {
            client,
            default_namespace,
            in_cluster: in_cluster
                .unwrap_or_else(|| std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()),
        })
    }

    /// The cluster a kubeconfig file names (its current context), reached from outside.
    pub async fn from_kubeconfig(path: &std::path::Path) -> Result<Kubernetes, KubeError> {
        let file = kube::config::Kubeconfig::read_from(path)
            .map_err(|e| KubeError::NoConfig(e.to_string()))?;
        let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .map_err(|e| KubeError::NoConfig(e.to_string()))?;
        let default_namespace = config.default_namespace.clone();
        let client =
            kube::Client::try_from(config).map_err(|e| KubeError::NoConfig(e.to_string()))?;
        Ok(Kubernetes {
            client,
            default_namespace,
            in_cluster: false,
        })
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    fn secrets(&self, namespace: &str) -> Api<Secret> {
        Api::namespaced(self.client.clone(), namespace)
    }

    fn claims(&self, namespace: &str) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Makes sandbox `name`: its claim (if asked), its Pod and its Secret; waits until it
    /// is ready.
    pub async fn create(
        &self,
        name: &str,
        token: &str,
        plan: &PodPlan,
    ) -> Result<Started, KubeError> {
        let ns = &plan.namespace;
        if self.pods(ns).get_opt(&pod_name(name)).await?.is_some() {
            return Err(KubeError::Conflict {
                kind: "Pod",
                name: pod_name(name),
                namespace: ns.clone(),
            });
        }
        if let Some(bytes) = plan.storage_bytes {
            match self
                .claims(ns)
                .create(&PostParams::default(), &claim_manifest(name, plan, bytes))
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    return Err(KubeError::Conflict {
                        kind: "PersistentVolumeClaim",
                        name: claim_name(name),
                        namespace: ns.clone(),
                    });
                }
                Err(e) => return Err(e.into()),
            }
        }
        let uid = self.make_pod(name, token, plan).await?;
        let ip = self.wait_ready(name, ns).await?;
        Ok(Started {
            remade: false,
            lost_workspace: false,
            why: None,
            ip,
            uid,
        })
    }

    /// The Pod, then its Secret (owned by it, so the Pod's uid is needed first; the kubelet
    /// waits for the Secret); the Pod's uid.
    async fn make_pod(
        &self,
        name: &str,
        token: &str,
        plan: &PodPlan,
    ) -> Result<Option<String>, KubeError> {
        let ns = &plan.namespace;
        let pod = match self
            .pods(ns)
            .create(&PostParams::default(), &pod_manifest(name, plan))
            .await
        {
            Ok(pod) => pod,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                return Err(KubeError::Conflict {
                    kind: "Pod",
                    name: pod_name(name),
                    namespace: ns.clone(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let secrets = self.secrets(ns);
        // A Secret left by a Pod deleted outside Cove (no garbage collector ran yet).
        if secrets.get_opt(&secret_name(name)).await?.is_some() {
            secrets
                .delete(&secret_name(name), &DeleteParams::default())
                .await?;
        }
        secrets
            .create(
                &PostParams::default(),
                &secret_manifest(name, plan, token, &pod),
            )
            .await?;
        Ok(pod.metadata.uid.clone())
    }

    /// Refuses a Pod of the sandbox's name that Cove did not make for it: labelled for
    /// another sandbox or installation, or not the Pod Cove made last.
    fn check_ours(name: &str, plan: &PodPlan, pod: &Pod) -> Result<(), KubeError> {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let label = |key: &str| labels.get(key).map(String::as_str);
        let why = if label(MANAGED_BY.0) != Some(MANAGED_BY.1) || label(SANDBOX_LABEL) != Some(name)
        {
            Some("it is not labelled as this sandbox".to_string())
        } else if plan.installation.is_some()
            && label(INSTALLATION_LABEL) != plan.installation.as_deref()
        {
            Some("it belongs to another Cove installation".to_string())
        } else if plan.pod_uid.is_some() && pod.metadata.uid != plan.pod_uid {
            Some("it was made by someone else after Cove's Pod went".to_string())
        } else {
            None
        };
        match why {
            None => Ok(()),
            Some(why) => Err(KubeError::NotOurs {
                name: pod_name(name),
                namespace: plan.namespace.clone(),
                why,
            }),
        }
    }

    /// Where sandbox `name`'s Pod stands.
    pub async fn state(&self, name: &str, namespace: &str) -> Result<PodState, KubeError> {
        Ok(match self.pods(namespace).get_opt(&pod_name(name)).await? {
            Some(pod) => state_of(&pod),
            None => PodState::Missing,
        })
    }

    /// Starts sandbox `name` if it is not running: a Pod that is missing or ended (evicted,
    /// past its deadline) is made again, with its workspace if a claim holds it.
    pub async fn ensure_running(
        &self,
        name: &str,
        token: &str,
        plan: &PodPlan,
    ) -> Result<Started, KubeError> {
        let ns = &plan.namespace;
        let existing = self.pods(ns).get_opt(&pod_name(name)).await?;
        if let Some(pod) = &existing {
            // Before anything: a Pod that is not Cove's gets no token and no workspace.
            Self::check_ours(name, plan, pod)?;
        }
        let uid = existing.as_ref().and_then(|p| p.metadata.uid.clone());
        let state = existing.as_ref().map_or(PodState::Missing, state_of);
        let (remade, why, uid) = match state {
            PodState::Ready { ip } => {
                return Ok(Started {
                    remade: false,
                    lost_workspace: false,
                    why: None,
                    ip,
                    uid,
                });
            }
            PodState::Starting(_) => (false, None, uid),
            PodState::Failed(why) => {
                self.pods(ns)
                    .delete(&pod_name(name), &DeleteParams::default())
                    .await?;
                (true, Some(why), self.make_pod(name, token, plan).await?)
            }
            PodState::Missing => match self.make_pod(name, token, plan).await {
                Ok(uid) => (true, None, uid),
                // Another opener made it again a moment ago: that one is taken up, once its
                // labels say it is this sandbox's (its uid is new to this opener's plan).
                Err(KubeError::Conflict { kind: "Pod", .. }) => {
                    let pod = self.pods(ns).get(&pod_name(name)).await?;
                    let fresh = PodPlan {
                        pod_uid: None,
                        ..plan.clone()
                    };
                    Self::check_ours(name, &fresh, &pod)?;
                    (true, None, pod.metadata.uid.clone())
                }
                Err(e) => return Err(e),
            },
        };
        let ip = self.wait_ready(name, ns).await?;
        Ok(Started {
            remade,
            lost_workspace: remade && plan.storage_bytes.is_none(),
            why,
            ip,
            uid,
        })
    }

    /// Waits (watching the Pod) until it is ready; its address.
    async fn wait_ready(&self, name: &str, namespace: &str) -> Result<Option<String>, KubeError> {
        let pods = self.pods(namespace);
        let pod = pod_name(name);
        let not_ready = |why: String| KubeError::NotReady {
            name: pod.clone(),
            namespace: namespace.to_string(),
            secs: READY_WAIT.as_secs(),
            why,
        };
        let deadline = tokio::time::Instant::now() + READY_WAIT;
        let mut last = String::from("Pending");
        while tokio::time::Instant::now() < deadline {
            let Some(current) = pods.get_opt(&pod).await? else {
                return Err(not_ready("the Pod was deleted".into()));
            };
            match state_of(&current) {
                PodState::Ready { ip } => return Ok(ip),
                PodState::Failed(why) => return Err(not_ready(why)),
                PodState::Starting(phase) => last = phase,
                PodState::Missing => {}
            }
            let version = current
                .metadata
                .resource_version
                .clone()
                .unwrap_or_default();
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let params = WatchParams::default()
                .fields(&format!("metadata.name={pod}"))
                .timeout(u32::try_from(left.as_secs().clamp(1, 290)).unwrap_or(290));
            let mut events = pods.watch(&params, &version).await?.boxed();
            while let Some(event) = events.try_next().await? {
                match event {
                    WatchEvent::Added(p) | WatchEvent::Modified(p) => match state_of(&p) {
                        PodState::Ready { ip } => return Ok(ip),
                        PodState::Failed(why) => return Err(not_ready(why)),
                        PodState::Starting(phase) => last = phase,
                        PodState::Missing => {}
                    },
                    WatchEvent::Deleted(_) => {
                        return Err(not_ready("the Pod was deleted".into()));
                    }
                    WatchEvent::Bookmark(_) => {}
                    // The version went stale: read the Pod again.
                    WatchEvent::Error(_) => break,
                }
            }
        }
        Err(not_ready(format!("still {last}")))
    }

    /// Stops sandbox `name`: its Pod goes (and its Secret with it); its claim stays.
    pub async fn stop(&self, name: &str, namespace: &str) -> Result<(), KubeError> {
        match self
            .pods(namespace)
            .delete(&pod_name(name), &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes sandbox `name`: its Pod, its Secret and its claim.
    pub async fn remove(&self, name: &str, namespace: &str) -> Result<(), KubeError> {
        self.stop(name, namespace).await?;
        let gone = |r: Result<(), kube::Error>| match r {
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            other => other,
        };
        gone(
            self.secrets(namespace)
                .delete(&secret_name(name), &DeleteParams::default())
                .await
                .map(|_| ()),
        )?;
        gone(
            self.claims(namespace)
                .delete(&claim_name(name), &DeleteParams::default())
                .await
                .map(|_| ()),
        )?;
        Ok(())
    }

    /// The objects installation `installation` made in `namespace` whose sandbox is not
    /// one of `known`, made `min_age_secs` ago or more: (kind, name). Another
    /// installation's (another user's) are never among them.
    pub async fn leftovers(
        &self,
        namespace: &str,
        known: &[String],
        installation: &str,
        min_age_secs: i64,
    ) -> Result<Vec<(&'static str, String)>, KubeError> {
        let selector = format!(
            "{}={},{INSTALLATION_LABEL}={installation}",
            MANAGED_BY.0, MANAGED_BY.1
        );
        let params = ListParams::default().labels(&selector);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let unknown = |meta: &ObjectMeta| {
            // Made moments ago, it may be a sandbox being made now, recorded once ready.
            let young = meta
                .creation_timestamp
                .as_ref()
                .is_some_and(|at| now.saturating_sub(at.0.as_second()) < min_age_secs);
            let sandbox = meta
                .labels
                .as_ref()
                .and_then(|l| l.get(SANDBOX_LABEL))
                .cloned()
                .unwrap_or_default();
            !known.contains(&sandbox) && !young
        };
        let mut found = Vec::new();
        for pod in self.pods(namespace).list(&params).await? {
            if unknown(&pod.metadata) {
                found.push(("Pod", pod.metadata.name.unwrap_or_default()));
            }
        }
        for secret in self.secrets(namespace).list(&params).await? {
            if unknown(&secret.metadata) {
                found.push(("Secret", secret.metadata.name.unwrap_or_default()));
            }
        }
        for claim in self.claims(namespace).list(&params).await? {
            if unknown(&claim.metadata) {
                found.push((
                    "PersistentVolumeClaim",
                    claim.metadata.name.unwrap_or_default(),
                ));
            }
        }
        Ok(found)
    }

    /// Deletes one leftover `leftovers` found.
    pub async fn delete(&self, namespace: &str, kind: &str, name: &str) -> Result<(), KubeError> {
        let dp = DeleteParams::default();
        let result = match kind {
            "Pod" => self.pods(namespace).delete(name, &dp).await.map(|_| ()),
            "Secret" => self.secrets(namespace).delete(name, &dp).await.map(|_| ()),
            _ => self.claims(namespace).delete(name, &dp).await.map(|_| ()),
        };
        match result {
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            other => other.map_err(Into::into),
        }
    }

    /// A way to coved in sandbox `name`: its Pod's address inside the cluster, or a local
    /// port forwarded through the API server outside it.
    pub async fn connect(
        &self,
        name: &str,
        namespace: &str,
        ip: Option<&str>,
    ) -> Result<Tunnel, KubeError> {
        if self.in_cluster {
            let ip = ip.ok_or_else(|| KubeError::Forward {
                name: pod_name(name),
                message: "the Pod has no address yet".into(),
            })?;
            let host = if ip.contains(':') {
                format!("[{ip}]")
            } else {
                ip.to_string()
            };
            return Ok(Tunnel {
                url: format!("http://{host}:{PORT}"),
                task: None,
            });
        }
        forward(self.pods(namespace), pod_name(name)).await
    }
}

/// Where coved answers, kept open while the value lives (a port-forward runs behind it).
#[derive(Debug)]
pub struct Tunnel {
    pub url: String,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A local port on 127.0.0.1 whose every connection is a port-forward to the Pod's coved,
/// as `kubectl port-forward` does.
async fn forward(pods: Api<Pod>, pod: String) -> Result<Tunnel, KubeError> {
    let failed = |e: std::io::Error| KubeError::Forward {
        name: pod.clone(),
        message: e.to_string(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(failed)?;
    let url = format!("http://{}", listener.local_addr().map_err(failed)?);
    let task = tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let pods = pods.clone();
            let pod = pod.clone();
            tokio::spawn(async move {
                let mut forwarder = match pods.portforward(&pod, &[PORT]).await {
                    Ok(forwarder) => forwarder,
                    Err(e) => {
                        tracing::warn!(error = %e, pod, "port-forward refused");
                        return;
                    }
                };
                let Some(mut upstream) = forwarder.take_stream(PORT) else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
                drop(upstream);
                let _ = forwarder.join().await;
            });
        }
    });
    Ok(Tunnel {
        url,
        task: Some(task),
    })
}

#[cfg(test)]
mod tests;
