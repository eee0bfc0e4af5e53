//! Snapshots of a Kubernetes sandbox: its workspace claim through a VolumeSnapshot
//! (`snapshot.storage.k8s.io/v1`, the CSI snapshot API, where the cluster offers it), and
//! new claims made from one (`dataSource`). A Pod's own filesystem outside the volume is
//! not kept: Kubernetes has no snapshot of it.

use std::time::Duration;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use serde_json::{Value, json};

use super::{INSTALLATION_LABEL, KubeError, Kubernetes, MANAGED_BY, PodPlan, claim_name};

/// The API group of volume snapshots.
pub const SNAPSHOT_GROUP: &str = "snapshot.storage.k8s.io";
/// The label naming the sandbox a snapshot was taken of.
pub const SNAPSHOT_OF_LABEL: &str = "cove.snapshot.of";
/// How long a snapshot may take to turn ready to use.
const READY_WAIT: Duration = Duration::from_secs(300);

fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(SNAPSHOT_GROUP, "v1", "VolumeSnapshot"),
        "volumesnapshots",
    )
}

/// A snapshot of a sandbox's workspace volume.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VolumeSnapshot {
    pub namespace: String,
    pub name: String,
    /// The sandbox it was taken of.
    pub of: String,
    /// Ready to make a volume from.
    pub ready: bool,
    /// The size a volume made from it needs (`1Gi`), once known.
    pub restore_size: Option<String>,
    /// What the snapshot controller said went wrong.
    pub error: Option<String>,
}

impl VolumeSnapshot {
    /// How `--from` names it: `k8s:NAMESPACE/NAME`.
    pub fn reference(&self) -> String {
        format!("k8s:{}/{}", self.namespace, self.name)
    }

    fn read(object: &DynamicObject) -> VolumeSnapshot {
        let status = &object.data["status"];
        VolumeSnapshot {
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone().unwrap_or_default(),
            of: object
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SNAPSHOT_OF_LABEL))
                .cloned()
                .unwrap_or_default(),
            ready: status["readyToUse"] == true,
            restore_size: status["restoreSize"].as_str().map(str::to_string),
            error: status["error"]["message"].as_str().map(str::to_string),
        }
    }
}

/// Reads `k8s:NAMESPACE/NAME`.
pub fn parse_reference(reference: &str) -> Option<(&str, &str)> {
    let (namespace, name) = reference.strip_prefix("k8s:")?.split_once('/')?;
    (!namespace.is_empty() && !name.is_empty()).then_some((namespace, name))
}

/// The VolumeSnapshot `snapshot` of the claim of sandbox `resource` (made as `plan` says),
/// labelled with sandbox `of`; `class` names its VolumeSnapshotClass (none: the default).
pub fn snapshot_manifest(
    snapshot: &str,
    resource: &str,
    of: &str,
    plan: &PodPlan,
    class: Option<&str>,
) -> Value {
    let mut labels = json!({ MANAGED_BY.0: MANAGED_BY.1, SNAPSHOT_OF_LABEL: of });
    if let Some(installation) = &plan.installation {
        labels[INSTALLATION_LABEL] = json!(installation);
    }
    let mut spec = json!({"source": {"persistentVolumeClaimName": claim_name(resource)}});
    if let Some(class) = class {
        spec["volumeSnapshotClassName"] = json!(class);
    }
    json!({
        "apiVersion": format!("{SNAPSHOT_GROUP}/v1"),
        "kind": "VolumeSnapshot",
        "metadata": {"name": snapshot, "namespace": plan.namespace, "labels": labels},
        "spec": spec,
    })
}

impl Kubernetes {
    fn volume_snapshots(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &resource())
    }

    /// Takes snapshot `snapshot` of sandbox `of`'s workspace claim (its resources named
    /// `resource`) and waits until it is ready to use.
    pub async fn snapshot(
        &self,
        snapshot: &str,
        resource: &str,
        of: &str,
        plan: &PodPlan,
        class: Option<&str>,
    ) -> Result<VolumeSnapshot, KubeError> {
        let object: DynamicObject =
            serde_json::from_value(snapshot_manifest(snapshot, resource, of, plan, class))
                .map_err(|e| KubeError::Unreachable(e.to_string()))?;
        let api = self.volume_snapshots(&plan.namespace);
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {
                return Err(KubeError::NoSnapshots {
                    namespace: plan.namespace.clone(),
                });
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                return Err(KubeError::Conflict {
                    kind: "VolumeSnapshot",
                    name: snapshot.to_string(),
                    namespace: plan.namespace.clone(),
                });
            }
            Err(e) => return Err(e.into()),
        }
        let started = std::time::Instant::now();
        loop {
            let taken = VolumeSnapshot::read(&api.get(snapshot).await?);
            if taken.ready {
                return Ok(taken);
            }
            if let Some(error) = taken.error {
                return Err(KubeError::SnapshotFailed {
                    name: snapshot.to_string(),
                    namespace: plan.namespace.clone(),
                    why: error,
                });
            }
            if started.elapsed() > READY_WAIT {
                return Err(KubeError::SnapshotFailed {
                    name: snapshot.to_string(),
                    namespace: plan.namespace.clone(),
                    why: format!("not ready to use after {} s", READY_WAIT.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The snapshots Cove took in `namespace`; none where the cluster has no snapshot API.
    pub async fn snapshots_in(&self, namespace: &str) -> Result<Vec<VolumeSnapshot>, KubeError> {
        let params = ListParams::default().labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1));
        match self.volume_snapshots(namespace).list(&params).await {
            Ok(list) => Ok(list.items.iter().map(VolumeSnapshot::read).collect()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// The snapshot `name` in `namespace`, if it is there.
    pub async fn volume_snapshot(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<VolumeSnapshot>, KubeError> {
        match self.volume_snapshots(namespace).get_opt(name).await {
            Ok(found) => Ok(found.as_ref().map(VolumeSnapshot::read)),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes snapshot `name` in `namespace`.
    pub async fn remove_volume_snapshot(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(), KubeError> {
        match self
            .volume_snapshots(namespace)
            .delete(name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_read_back() {
        assert_eq!(
            parse_reference("k8s:agents/cove-a-t1"),
            Some(("agents", "cove-a-t1"))
        );
        assert_eq!(parse_reference("k8s:/x"), None);
        assert_eq!(parse_reference("cove-snapshot/a:t1"), None);
    }
}
