//! A scripted Docker Engine API on a Unix socket or a TCP port: the calls Cove's Docker
//! provider makes, answered as Docker answers them (paths with or without the API version,
//! `/v1.47/containers/...`, as clients send them). A "container" of the sandbox image runs a real `coved`
//! (with the token from its environment) while it is started, so the controller can use it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{DaemonBuilder, DaemonProcess};

/// The image the scripted engine knows.
pub const IMAGE: &str = "cove-sandbox:test";

struct Container {
    id: String,
    name: String,
    create: Value,
    daemon: Option<DaemonProcess>,
    /// Started behind the provider's back, its coved not listening yet on this port.
    booting: Option<u16>,
    started: u32,
    /// The container's filesystem: it outlives stops, as a container's does.
    workspace: TempDir,
}

#[derive(Default)]
struct Engine {
    containers: Mutex<Vec<Container>>,
    /// Every call, as `METHOD path`.
    calls: Mutex<Vec<String>>,
    next: Mutex<u64>,
    /// Networks by name, as they were asked for.
    networks: Mutex<HashMap<String, Value>>,
}

type Shared = Arc<(Engine, PathBuf)>;

/// A scripted Docker engine listening on a Unix socket or a TCP port.
pub struct ScriptedDocker {
    shared: Shared,
    /// For `DOCKER_HOST`.
    host: String,
    _dir: TempDir,
    task: tokio::task::JoinHandle<()>,
}

/// `/v1.47/containers/...` as `/containers/...`.
async fn unversioned(mut request: axum::extract::Request) -> axum::extract::Request {
    let path = request.uri().path();
    let rest = path
        .strip_prefix("/v")
        .and_then(|r| r.split_once('/'))
        .filter(|(version, _)| {
            !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
        .map(|(_, rest)| format!("/{rest}"));
    if let Some(rest) = rest {
        let query = request
            .uri()
            .query()
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        if let Ok(uri) = format!("{rest}{query}").parse() {
            *request.uri_mut() = uri;
        }
    }
    request
}

fn message(status: StatusCode, text: &str) -> Response {
    (status, axum::Json(json!({"message": text}))).into_response()
}

fn record(shared: &Shared, call: String) {
    if let Ok(mut calls) = shared.0.calls.lock() {
        calls.push(call);
    }
}

impl ScriptedDocker {
    /// Serves the engine on a Unix socket; `coved` is the binary its containers run.
    pub async fn start(coved: impl AsRef<Path>) -> Result<ScriptedDocker> {
        ScriptedDocker::serve(coved.as_ref(), false).await
    }

    /// Serves the engine on a TCP port of 127.0.0.1 (`tcp://` in `DOCKER_HOST`).
    pub async fn start_tcp(coved: impl AsRef<Path>) -> Result<ScriptedDocker> {
        ScriptedDocker::serve(coved.as_ref(), true).await
    }

    async fn serve(coved: &Path, tcp: bool) -> Result<ScriptedDocker> {
        let dir = tempfile::tempdir()?;
        let shared: Shared = Arc::new((Engine::default(), coved.to_path_buf()));
        let app = Router::new()
            .route("/_ping", get(|| async { "OK" }))
            .route(
                "/version",
                get(|| async {
                    axum::Json(
                        json!({"ApiVersion": "1.47", "MinAPIVersion": "1.24", "Version": "27.3.1", "Os": "linux", "Arch": "amd64"}),
                    )
                }),
            )
            .route("/containers/create", post(create))
            .route("/containers/{id}/start", post(start))
            .route("/containers/{id}/stop", post(stop))
            .route("/containers/{id}/json", get(inspect))
            .route("/containers/{id}", delete(remove))
            .route("/networks/create", post(create_network))
            .route("/networks/{id}", delete(remove_network))
            .with_state(shared.clone());
        // The version prefix goes before routing.
        let app = tower::Layer::layer(&axum::middleware::map_request(unversioned), app);
        let app = axum::ServiceExt::<axum::extract::Request>::into_make_service(app);
        let (host, task) = if tcp {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let host = format!("tcp://{}", listener.local_addr()?);
            let task = tokio::spawn(async move {
                let _ = axum::serve(listener, app).await;
            });
            (host, task)
        } else {
            let socket = dir.path().join("docker.sock");
            let listener = tokio::net::UnixListener::bind(&socket)?;
            let task = tokio::spawn(async move {
                let _ = axum::serve(listener, app).await;
            });
            (format!("unix://{}", socket.display()), task)
        };
        Ok(ScriptedDocker {
            shared,
            host,
            _dir: dir,
            task,
        })
    }

    /// `unix://...` or `tcp://...`, for `DOCKER_HOST`.
    pub fn host(&self) -> String {
        self.host.clone()
    }

    /// The calls made so far.
    pub fn calls(&self) -> Vec<String> {
        self.shared
            .0
            .calls
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// The networks there are, by name, with what they were created with.
    pub fn networks(&self) -> HashMap<String, Value> {
        self.shared
            .0
            .networks
            .lock()
            .map(|n| n.clone())
            .unwrap_or_default()
    }

    /// The body each container was created with, by container name.
    pub fn created(&self) -> HashMap<String, Value> {
        self.shared
            .0
            .containers
            .lock()
            .map(|c| {
                c.iter()
                    .map(|c| (c.name.clone(), c.create.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many containers exist, and how many run.
    pub fn counts(&self) -> (usize, usize) {
        self.shared
            .0
            .containers
            .lock()
            .map(|c| (c.len(), c.iter().filter(|c| c.daemon.is_some()).count()))
            .unwrap_or_default()
    }

    /// Restarts container `name` behind the provider's back, as `docker restart` does: it
    /// counts as running at once, on a new port where its coved listens only after `late`.
    pub async fn restart_late(&self, name: &str, late: std::time::Duration) -> Result<()> {
        self.kill_daemon(name).await;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let (token, workspace) = {
            let mut containers = self
                .shared
                .0
                .containers
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?;
            let c = containers
                .iter_mut()
                .find(|c| c.name == name)
                .ok_or_else(|| anyhow::anyhow!("no container {name}"))?;
            c.booting = Some(port);
            (env_token(&c.create), c.workspace.path().to_path_buf())
        };
        let shared = self.shared.clone();
        let name = name.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(late).await;
            let daemon = DaemonBuilder::new(&shared.1)
                .token_in_env(&token)
                .workspace(workspace)
                .listen(format!("127.0.0.1:{port}"))
                .spawn()
                .await;
            if let (Ok(daemon), Ok(mut containers)) = (daemon, shared.0.containers.lock())
                && let Some(c) = containers.iter_mut().find(|c| c.name == name)
            {
                c.daemon = Some(daemon);
                c.booting = None;
                c.started += 1;
            }
        });
        Ok(())
    }

    /// Stops a container's coved behind the provider's back (a crash, a reboot).
    pub async fn kill_daemon(&self, name: &str) {
        let daemon = self.shared.0.containers.lock().ok().and_then(|mut c| {
            c.iter_mut()
                .find(|c| c.name == name)
                .and_then(|c| c.daemon.take())
        });
        if let Some(daemon) = daemon {
            let _ = daemon.terminate().await;
        }
    }
}

impl Drop for ScriptedDocker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn create(
    State(shared): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    record(&shared, "POST /containers/create".into());
    if body["Image"] != IMAGE {
        return message(
            StatusCode::NOT_FOUND,
            &format!("No such image: {}", body["Image"].as_str().unwrap_or("")),
        );
    }
    let name = query.get("name").cloned().unwrap_or_default();
    let Ok(mut containers) = shared.0.containers.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    if containers.iter().any(|c| c.name == name) {
        return message(
            StatusCode::CONFLICT,
            &format!("Conflict. The container name \"/{name}\" is already in use"),
        );
    }
    let id = {
        let mut next = shared.0.next.lock().unwrap_or_else(|p| p.into_inner());
        *next += 1;
        format!("{:064x}", *next)
    };
    let workspace = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => return message(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    containers.push(Container {
        id: id.clone(),
        name,
        create: body,
        daemon: None,
        booting: None,
        started: 0,
        workspace,
    });
    (
        StatusCode::CREATED,
        axum::Json(json!({"Id": id, "Warnings": []})),
    )
        .into_response()
}

fn find<'a>(containers: &'a mut [Container], id: &str) -> Option<&'a mut Container> {
    containers
        .iter_mut()
        .find(|c| c.id == id || c.name == id || (id.len() >= 12 && c.id.starts_with(id)))
}

async fn start(State(shared): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    record(&shared, format!("POST /containers/{id}/start"));
    let (token, workspace) = {
        let Ok(mut containers) = shared.0.containers.lock() else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        let Some(container) = find(&mut containers, &id) else {
            return message(StatusCode::NOT_FOUND, &format!("No such container: {id}"));
        };
        if container.daemon.is_some() {
            return StatusCode::NOT_MODIFIED.into_response();
        }
        (
            env_token(&container.create),
            container.workspace.path().to_path_buf(),
        )
    };
    let daemon = match DaemonBuilder::new(&shared.1)
        .token_in_env(&token)
        .workspace(workspace)
        .spawn()
        .await
    {
        Ok(daemon) => daemon,
        Err(e) => return message(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let Ok(mut containers) = shared.0.containers.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    match find(&mut containers, &id) {
        Some(container) => {
            container.daemon = Some(daemon);
            container.started += 1;
            StatusCode::NO_CONTENT.into_response()
        }
        None => message(StatusCode::NOT_FOUND, &format!("No such container: {id}")),
    }
}

/// The token a container's environment gives its coved.
fn env_token(create: &Value) -> String {
    create["Env"]
        .as_array()
        .and_then(|env| {
            env.iter()
                .filter_map(Value::as_str)
                .find_map(|e| e.strip_prefix("COVE_TOKEN="))
        })
        .unwrap_or_default()
        .to_string()
}

async fn stop(State(shared): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    record(&shared, format!("POST /containers/{id}/stop"));
    let daemon = {
        let Ok(mut containers) = shared.0.containers.lock() else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        let Some(container) = find(&mut containers, &id) else {
            return message(StatusCode::NOT_FOUND, &format!("No such container: {id}"));
        };
        container.booting = None;
        container.daemon.take()
    };
    match daemon {
        Some(daemon) => {
            let _ = daemon.terminate().await;
            StatusCode::NO_CONTENT.into_response()
        }
        None => StatusCode::NOT_MODIFIED.into_response(),
    }
}

async fn inspect(State(shared): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    record(&shared, format!("GET /containers/{id}/json"));
    let Ok(mut containers) = shared.0.containers.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let Some(c) = find(&mut containers, &id) else {
        return message(StatusCode::NOT_FOUND, &format!("No such container: {id}"));
    };
    let running = c.daemon.is_some() || c.booting.is_some();
    let port = match &c.daemon {
        Some(daemon) => daemon.client.base_url().port(),
        None => c.booting,
    };
    let ports = match port {
        Some(port) => {
            json!({"7700/tcp": [{"HostIp": "127.0.0.1", "HostPort": port.to_string()}]})
        }
        None => json!({}),
    };
    axum::Json(json!({
        "Id": c.id,
        "Name": format!("/{}", c.name),
        "State": {"Running": running, "Status": if running { "running" } else if c.started > 0 { "exited" } else { "created" }},
        "Config": {"Image": c.create["Image"], "Labels": c.create["Labels"]},
        "NetworkSettings": {"Ports": ports},
    }))
    .into_response()
}

async fn remove(
    State(shared): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    record(&shared, format!("DELETE /containers/{id}"));
    let removed = {
        let Ok(mut containers) = shared.0.containers.lock() else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        let Some(at) = containers.iter().position(|c| c.id == id || c.name == id) else {
            return message(StatusCode::NOT_FOUND, &format!("No such container: {id}"));
        };
        if containers[at].daemon.is_some() && query.get("force").map(String::as_str) != Some("true")
        {
            return message(
                StatusCode::CONFLICT,
                "You cannot remove a running container. Stop the container before attempting removal or force remove",
            );
        }
        containers.remove(at)
    };
    if let Some(daemon) = removed.daemon {
        let _ = daemon.terminate().await;
    }
    StatusCode::NO_CONTENT.into_response()
}

/// `POST /networks/create`: kept by name (a second of the same name is a conflict).
async fn create_network(
    State(shared): State<Shared>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let name = body["Name"].as_str().unwrap_or_default().to_string();
    record(&shared, format!("POST /networks/create {name}"));
    let Ok(mut networks) = shared.0.networks.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    if networks.contains_key(&name) {
        return message(
            StatusCode::CONFLICT,
            &format!("network with name {name} already exists"),
        );
    }
    networks.insert(name.clone(), body);
    (
        StatusCode::CREATED,
        axum::Json(json!({"Id": name, "Warning": ""})),
    )
        .into_response()
}

/// `DELETE /networks/{id}`.
async fn remove_network(State(shared): State<Shared>, UrlPath(id): UrlPath<String>) -> Response {
    record(&shared, format!("DELETE /networks/{id}"));
    let Ok(mut networks) = shared.0.networks.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    match networks.remove(&id) {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => message(StatusCode::NOT_FOUND, &format!("network {id} not found")),
    }
}
