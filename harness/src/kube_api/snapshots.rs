//! VolumeSnapshots (`snapshot.storage.k8s.io/v1`, as the CSI snapshot controller serves
//! them): taking one copies its claim's files at once and turns it ready to use; a claim
//! whose `dataSource` names one starts with its files. A cluster without the API answers
//! 404, as one without the snapshot controller does.

use super::*;

pub(super) struct Snapshot {
    pub(super) object: Value,
    pub(super) files: Option<TempDir>,
}

/// Copies the tree under `from` into `to`.
pub(super) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn no_api(shared: &Shared) -> Option<Response> {
    (!lock(shared).snapshots_offered).then(|| {
        status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    })
}

pub(super) async fn create_snapshot(
    State(shared): State<AppState>,
    UrlPath(ns): UrlPath<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Some(refused) = no_api(&shared) {
        return refused;
    }
    let Some(name) = body["metadata"]["name"].as_str().map(str::to_string) else {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "metadata.name: Required value",
        );
    };
    let Some(source) = body["spec"]["source"]["persistentVolumeClaimName"]
        .as_str()
        .map(str::to_string)
    else {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "spec.source: exactly one of persistentVolumeClaimName and volumeSnapshotContentName is required",
        );
    };
    let mut cluster = lock(&shared);
    let key = (ns.clone(), name.clone());
    if cluster.snapshots.contains_key(&key) {
        return status(
            StatusCode::CONFLICT,
            "AlreadyExists",
            &format!("volumesnapshots.snapshot.storage.k8s.io \"{name}\" already exists"),
        );
    }
    let mut object = body.clone();
    object["metadata"]["namespace"] = json!(ns);
    object["metadata"]["uid"] = json!(format!("snap-{}", cluster.version));
    let files = match cluster.claims.get(&(ns.clone(), source.clone())) {
        Some(claim) => {
            let copy = tempfile::tempdir().and_then(|dir| {
                copy_tree(claim.dir.path(), dir.path())?;
                Ok(dir)
            });
            let Ok(copy) = copy else {
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            };
            object["status"] = json!({
                "readyToUse": true,
                "restoreSize": claim.object["spec"]["resources"]["requests"]["storage"],
                "creationTime": "2026-01-01T00:00:00Z",
            });
            Some(copy)
        }
        None => {
            object["status"] = json!({
                "readyToUse": false,
                "error": {"message": format!("failed to get input parameters to create snapshot {name}: \"the PVC {source} is not yet bound\"")},
            });
            None
        }
    };
    touch(&mut cluster, &mut object);
    cluster.snapshots.insert(
        key,
        Snapshot {
            object: object.clone(),
            files,
        },
    );
    (StatusCode::CREATED, axum::Json(object)).into_response()
}

pub(super) async fn get_snapshot(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
) -> Response {
    if let Some(refused) = no_api(&shared) {
        return refused;
    }
    match lock(&shared).snapshots.get(&(ns, name.clone())) {
        Some(snapshot) => axum::Json(snapshot.object.clone()).into_response(),
        None => not_found("volumesnapshots.snapshot.storage.k8s.io", &name),
    }
}

pub(super) async fn delete_snapshot(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
) -> Response {
    if let Some(refused) = no_api(&shared) {
        return refused;
    }
    match lock(&shared).snapshots.remove(&(ns, name.clone())) {
        Some(snapshot) => axum::Json(snapshot.object).into_response(),
        None => not_found("volumesnapshots.snapshot.storage.k8s.io", &name),
    }
}

pub(super) async fn list_snapshots(
    State(shared): State<AppState>,
    UrlPath(ns): UrlPath<String>,
    Query(q): Query<ListQuery>,
) -> Response {
    if let Some(refused) = no_api(&shared) {
        return refused;
    }
    let cluster = lock(&shared);
    let items: Vec<Value> = cluster
        .snapshots
        .values()
        .filter(|s| s.object["metadata"]["namespace"] == ns.as_str())
        .filter(|s| labels_match(&s.object, q.label_selector.as_ref()))
        .map(|s| s.object.clone())
        .collect();
    axum::Json(json!({
        "kind": "VolumeSnapshotList", "apiVersion": "snapshot.storage.k8s.io/v1",
        "metadata": {"resourceVersion": cluster.version.to_string()},
        "items": items,
    }))
    .into_response()
}

/// The files a claim made from snapshot `dataSource` of `claim` starts with.
pub(super) fn restore_into(cluster: &Cluster, ns: &str, claim: &Value, dir: &Path) {
    let source = &claim["spec"]["dataSource"];
    if source["kind"] != "VolumeSnapshot" {
        return;
    }
    let Some(name) = source["name"].as_str() else {
        return;
    };
    if let Some(files) = cluster
        .snapshots
        .get(&(ns.to_string(), name.to_string()))
        .and_then(|s| s.files.as_ref())
    {
        let _ = copy_tree(files.path(), dir);
    }
}
