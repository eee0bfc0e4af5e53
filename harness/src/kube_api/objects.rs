//! Secrets and PersistentVolumeClaims: made, read, deleted and listed as the API does.

use super::*;

pub(super) async fn create_secret(
    State(shared): State<AppState>,
    UrlPath(ns): UrlPath<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let secret: Secret = match parse(&body) {
        Ok(secret) => secret,
        Err(e) => return *e,
    };
    let Some(name) = secret.metadata.name.clone() else {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "metadata.name: Required value",
        );
    };
    let response = {
        let mut cluster = lock(&shared);
        let key = (ns.clone(), name.clone());
        if cluster.secrets.contains_key(&key) {
            return status(
                StatusCode::CONFLICT,
                "AlreadyExists",
                &format!("secrets \"{name}\" already exists"),
            );
        }
        // The API server keeps stringData as data, base64-encoded.
        let mut secret = secret;
        if let Some(strings) = secret.string_data.take() {
            let data = secret.data.get_or_insert_with(Default::default);
            for (key, value) in strings {
                data.insert(key, k8s_openapi::ByteString(value.into_bytes()));
            }
        }
        let mut object = serde_json::to_value(&secret).unwrap_or(body);
        object["kind"] = json!("Secret");
        object["apiVersion"] = json!("v1");
        object["metadata"]["namespace"] = json!(ns);
        object["metadata"]["uid"] = json!(format!("secret-{ns}-{name}"));
        touch(&mut cluster, &mut object);
        cluster.secrets.insert(key, object.clone());
        (StatusCode::CREATED, axum::Json(object)).into_response()
    };
    spawn_kubelet(&shared);
    response
}

pub(super) async fn get_secret(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
) -> Response {
    match lock(&shared).secrets.get(&(ns, name.clone())) {
        Some(secret) => axum::Json(secret.clone()).into_response(),
        None => not_found("secrets", &name),
    }
}

pub(super) async fn delete_secret(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
) -> Response {
    match lock(&shared).secrets.remove(&(ns, name.clone())) {
        Some(secret) => axum::Json(secret).into_response(),
        None => not_found("secrets", &name),
    }
}

pub(super) async fn all_secrets(
    State(shared): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Response {
    secrets_in(&shared, None, &q)
}

pub(super) async fn list_secrets(
    State(shared): State<AppState>,
    UrlPath(ns): UrlPath<String>,
    Query(q): Query<ListQuery>,
) -> Response {
    secrets_in(&shared, Some(ns), &q)
}

pub(super) fn secrets_in(shared: &AppState, ns: Option<String>, q: &ListQuery) -> Response {
    let cluster = lock(shared);
    let items = cluster
        .secrets
        .values()
        .filter(|s| {
            ns.as_ref()
                .is_none_or(|ns| s["metadata"]["namespace"] == ns.as_str())
        })
        .filter(|s| labels_match(s, q.label_selector.as_ref()))
        .cloned()
        .collect();
    list("Secret", items, cluster.version)
}

pub(super) async fn create_claim(
    State(shared): State<AppState>,
    UrlPath(ns): UrlPath<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let claim: PersistentVolumeClaim = match parse(&body) {
        Ok(claim) => claim,
        Err(e) => return *e,
    };
    let Some(name) = claim.metadata.name.clone() else {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "metadata.name: Required value",
        );
    };
    let requested = claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"));
    if requested.is_none() {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "spec.resources.requests.storage: Required value",
        );
    }
    let mut cluster = lock(&shared);
    let key = (ns.clone(), name.clone());
    if cluster.claims.contains_key(&key) {
        return status(
            StatusCode::CONFLICT,
            "AlreadyExists",
            &format!("persistentvolumeclaims \"{name}\" already exists"),
        );
    }
    let Ok(dir) = tempfile::tempdir() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut object = serde_json::to_value(&claim).unwrap_or(body);
    restore_into(&cluster, &ns, &object, dir.path());
    object["kind"] = json!("PersistentVolumeClaim");
    object["apiVersion"] = json!("v1");
    object["metadata"]["namespace"] = json!(ns);
    object["status"] = json!({"phase": "Bound"});
    touch(&mut cluster, &mut object);
    cluster.claims.insert(
        key,
        Claim {
            object: object.clone(),
            dir,
        },
    );
    (StatusCode::CREATED, axum::Json(object)).into_response()
}

pub(super) async fn get_claim(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
) -> Response {
    match lock(&shared).claims.get(&(ns, name.clone())) {
        Some(claim) => axum::Json(claim.object.clone()).into_response(),
        None => not_found("persistentvolumeclaims", &name),
    }
}

pub(super) async fn delete_claim(
    State(shared): State<AppState>,
    UrlPath((ns, name)): UrlPath<(String, String)>,
) -> Response {
    match lock(&shared).claims.remove(&(ns, name.clone())) {
        Some(claim) => axum::Json(claim.object).into_response(),
        None => not_found("persistentvolumeclaims", &name),
    }
}

pub(super) async fn list_claims(
    State(shared): State<AppState>,
    UrlPath(ns): UrlPath<String>,
    Query(q): Query<ListQuery>,
) -> Response {
    let cluster = lock(&shared);
    let items = cluster
        .claims
        .values()
        .filter(|c| c.object["metadata"]["namespace"] == ns.as_str())
        .filter(|c| labels_match(&c.object, q.label_selector.as_ref()))
        .map(|c| c.object.clone())
        .collect();
    list("PersistentVolumeClaim", items, cluster.version)
}
