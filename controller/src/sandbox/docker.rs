//! The Docker provider: sandbox containers made from the Cove image, driven through the
//! Docker Engine API on its Unix socket (no `docker` CLI needed).
//!
//! A container runs `coved` on port 7700 with a token Cove generates and passes in its
//! environment; the port is published on 127.0.0.1 at a port Docker picks, which Cove reads
//! back after each start.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// The image `cove sandbox create` uses unless told.
pub const DEFAULT_IMAGE: &str = "cove-sandbox:latest";
/// The port coved listens on inside the container.
pub const CONTAINER_PORT: &str = "7700/tcp";
/// The label that marks Cove's containers, valued with the sandbox's name.
pub const LABEL: &str = "cove.sandbox";
/// How long a fresh container may take to answer `/health`.
const HEALTH_WAIT: Duration = Duration::from_secs(60);
/// Deadline of one Engine API call.
const CALL_LIMIT: Duration = Duration::from_secs(120);

/// What went wrong with Docker, by what the user does next.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// Start Docker, or point DOCKER_HOST at its socket.
    #[error(
        "cannot reach Docker at {socket}: {message} (is the Docker engine running? set DOCKER_HOST=unix:///path/to/docker.sock)"
    )]
    Unreachable { socket: String, message: String },
    /// Only Unix sockets are spoken.
    #[error("DOCKER_HOST={0} is not supported: use a unix:// socket")]
    UnsupportedHost(String),
    /// Build or pull the image first.
    #[error(
        "Docker has no image {image}: build it with `docker build -t {image} sandbox-image/` (see sandbox-image/README.md)"
    )]
    NoImage { image: String },
    /// Pick another name, or remove the old sandbox.
    #[error("a container named {name} already exists: pick another name or `cove sandbox rm`")]
    Conflict { name: String },
    /// The container is gone (removed outside Cove).
    #[error("Docker has no container {0}")]
    NotFound(String),
    /// The container started but coved never answered.
    #[error(
        "the sandbox container {name} started but coved did not answer at {url} within {secs} s; see `docker logs {name}`"
    )]
    Unhealthy {
        name: String,
        url: String,
        secs: u64,
    },
    /// Docker refused; its message says why.
    #[error("Docker refused ({status}): {message}")]
    Api { status: u16, message: String },
}

/// Resources and image of a new sandbox container.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSpec {
    pub image: String,
    /// Memory limit in bytes.
    pub memory_bytes: Option<i64>,
    /// CPU limit in cores.
    pub cpus: Option<f64>,
    /// Size of /dev/shm (Chromium needs more than Docker's 64 MB).
    pub shm_bytes: i64,
}

impl Default for ContainerSpec {
    fn default() -> Self {
        ContainerSpec {
            image: DEFAULT_IMAGE.to_string(),
            memory_bytes: None,
            cpus: None,
            shm_bytes: 512 * 1024 * 1024,
        }
    }
}

/// A sandbox container as Docker reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInfo {
    pub id: String,
    /// The sandbox name (from the label).
    pub name: String,
    pub running: bool,
    /// `running`, `exited`, ...
    pub status: String,
    /// Where coved answers, while running.
    pub url: Option<String>,
}

/// A Docker engine.
#[derive(Debug, Clone)]
pub struct Docker {
    socket: PathBuf,
}

/// The container name of a sandbox.
pub fn container_name(sandbox: &str) -> String {
    format!("cove-{sandbox}")
}

/// Reads a size such as `512m`, `2g`, `1073741824`.
pub fn parse_size(raw: &str) -> Option<i64> {
    let raw = raw.trim().to_ascii_lowercase();
    let (digits, unit) = match raw.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(at) => raw.split_at(at),
        None => (raw.as_str(), ""),
    };
    let value: f64 = digits.parse().ok()?;
    let factor = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = value * factor;
    (1.0..9.0e18).contains(&bytes).then_some(bytes as i64)
}

fn published_url(inspect: &Value) -> Option<String> {
    let binding = &inspect["NetworkSettings"]["Ports"][CONTAINER_PORT][0];
    let port = binding["HostPort"].as_str().filter(|p| !p.is_empty())?;
    let ip = match binding["HostIp"].as_str() {
        None | Some("") | Some("0.0.0.0") => "127.0.0.1",
        Some("::") => "[::1]",
        Some(ip) => ip,
    };
    Some(format!("http://{ip}:{port}"))
}

fn info_of(inspect: &Value) -> ContainerInfo {
    ContainerInfo {
        id: inspect["Id"].as_str().unwrap_or_default().to_string(),
        name: inspect["Config"]["Labels"][LABEL]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        running: inspect["State"]["Running"].as_bool().unwrap_or(false),
        status: inspect["State"]["Status"]
            .as_str()
            .unwrap_or("unknown")
            .to_string(),
        url: published_url(inspect),
    }
}

impl Docker {
    /// The engine at `DOCKER_HOST` (a `unix://` socket), else `/var/run/docker.sock`.
    pub fn from_env() -> Result<Docker, DockerError> {
        match std::env::var("DOCKER_HOST") {
            Ok(host) if !host.is_empty() => match host.strip_prefix("unix://") {
                Some(path) => Ok(Docker::at(path)),
                None => Err(DockerError::UnsupportedHost(host)),
            },
            _ => Ok(Docker::at("/var/run/docker.sock")),
        }
    }

    /// The engine listening on `socket`.
    pub fn at(socket: impl AsRef<Path>) -> Docker {
        Docker {
            socket: socket.as_ref().to_path_buf(),
        }
    }

    fn unreachable(&self, message: impl std::fmt::Display) -> DockerError {
        DockerError::Unreachable {
            socket: self.socket.display().to_string(),
            message: message.to_string(),
        }
    }

    /// One Engine API call: status and JSON body (`Null` when empty).
    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), DockerError> {
        let exchange = async {
            let stream = tokio::net::UnixStream::connect(&self.socket)
                .await
                .map_err(|e| self.unreachable(e))?;
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream))
                    .await
                    .map_err(|e| self.unreachable(e))?;
            let driver = tokio::spawn(connection);
            let payload = body.map(Value::to_string).unwrap_or_default();
            let request = Request::builder()
                .method(method)
                .uri(path)
                .header(HOST, "docker")
                .header(CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(payload)))
                .map_err(|e| self.unreachable(e))?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| self.unreachable(e))?;
            let status = response.status().as_u16();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| self.unreachable(e))?
                .to_bytes();
            driver.abort();
            let value = if bytes.iter().all(u8::is_ascii_whitespace) {
                Value::Null
            } else {
                serde_json::from_slice(&bytes)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
            };
            Ok((status, value))
        };
        tokio::time::timeout(CALL_LIMIT, exchange)
            .await
            .map_err(|_| self.unreachable("no answer in time"))?
    }

    fn refused(status: u16, body: &Value) -> DockerError {
        DockerError::Api {
            status,
            message: body["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| body.to_string()),
        }
    }

    /// Checks the engine answers.
    pub async fn ping(&self) -> Result<(), DockerError> {
        match self.call("GET", "/_ping", None).await? {
            (200, _) => Ok(()),
            (status, body) => Err(Self::refused(status, &body)),
        }
    }

    /// Creates and starts the container of sandbox `name`, running coved with `token`, and
    /// waits until coved answers.
    pub async fn create(
        &self,
        name: &str,
        token: &str,
        spec: &ContainerSpec,
    ) -> Result<ContainerInfo, DockerError> {
        let mut host = json!({
            "Init": true,
            "ShmSize": spec.shm_bytes,
            "PortBindings": {CONTAINER_PORT: [{"HostIp": "127.0.0.1", "HostPort": ""}]},
            "RestartPolicy": {"Name": "unless-stopped"},
        });
        if let Some(memory) = spec.memory_bytes {
            host["Memory"] = json!(memory);
        }
        if let Some(cpus) = spec.cpus {
            host["NanoCpus"] = json!((cpus * 1e9) as i64);
        }
        let body = json!({
            "Image": spec.image,
            "Env": [format!("COVE_TOKEN={token}")],
            "ExposedPorts": {CONTAINER_PORT: {}},
            "Labels": {LABEL: name},
            "HostConfig": host,
        });
        let container = container_name(name);
        let (status, answer) = self
            .call(
                "POST",
                &format!("/containers/create?name={container}"),
                Some(&body),
            )
            .await?;
        let id = match status {
            200 | 201 => answer["Id"].as_str().unwrap_or_default().to_string(),
            404 => {
                return Err(DockerError::NoImage {
                    image: spec.image.clone(),
                });
            }
            409 => return Err(DockerError::Conflict { name: container }),
            _ => return Err(Self::refused(status, &answer)),
        };
        self.start(&id).await
    }

    /// Starts a stopped container; answers with where coved listens once it does.
    pub async fn start(&self, id: &str) -> Result<ContainerInfo, DockerError> {
        match self
            .call("POST", &format!("/containers/{id}/start"), None)
            .await?
        {
            (204 | 304, _) => {}
            (404, _) => return Err(DockerError::NotFound(id.to_string())),
            (status, body) => return Err(Self::refused(status, &body)),
        }
        let info = self.inspect(id).await?;
        let Some(url) = info.url.clone() else {
            return Err(DockerError::Api {
                status: 500,
                message: format!("container {id} runs but publishes no port for {CONTAINER_PORT}"),
            });
        };
        wait_healthy(&url, &info.name).await?;
        Ok(info)
    }

    /// Stops a container (coved gets SIGTERM and `timeout_secs` to finish).
    pub async fn stop(&self, id: &str, timeout_secs: u32) -> Result<(), DockerError> {
        match self
            .call(
                "POST",
                &format!("/containers/{id}/stop?t={timeout_secs}"),
                None,
            )
            .await?
        {
            (204 | 304, _) => Ok(()),
            (404, _) => Err(DockerError::NotFound(id.to_string())),
            (status, body) => Err(Self::refused(status, &body)),
        }
    }

    /// Removes a container, running or not.
    pub async fn remove(&self, id: &str) -> Result<(), DockerError> {
        match self
            .call("DELETE", &format!("/containers/{id}?force=true"), None)
            .await?
        {
            (204, _) => Ok(()),
            (404, _) => Err(DockerError::NotFound(id.to_string())),
            (status, body) => Err(Self::refused(status, &body)),
        }
    }

    /// What Docker says of a container now.
    pub async fn inspect(&self, id: &str) -> Result<ContainerInfo, DockerError> {
        match self
            .call("GET", &format!("/containers/{id}/json"), None)
            .await?
        {
            (200, body) => Ok(info_of(&body)),
            (404, _) => Err(DockerError::NotFound(id.to_string())),
            (status, body) => Err(Self::refused(status, &body)),
        }
    }
}

/// Polls coved's `/health` until it answers.
async fn wait_healthy(url: &str, name: &str) -> Result<(), DockerError> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .no_proxy()
        .build()
        .map_err(|e| DockerError::Api {
            status: 500,
            message: e.to_string(),
        })?;
    let started = Instant::now();
    while started.elapsed() < HEALTH_WAIT {
        if let Ok(response) = client.get(format!("{url}/health")).send().await
            && response.status().is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(DockerError::Unhealthy {
        name: container_name(name),
        url: url.to_string(),
        secs: HEALTH_WAIT.as_secs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_docker_flags() {
        assert_eq!(parse_size("512m"), Some(512 * 1024 * 1024));
        assert_eq!(parse_size("2g"), Some(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_size("1.5GiB"), Some(1024 * 1024 * 1536));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("3x"), None);
    }

    #[test]
    fn the_published_port_becomes_a_url() {
        let inspect = json!({"Id": "abc", "Config": {"Labels": {LABEL: "b1"}},
            "State": {"Running": true, "Status": "running"},
            "NetworkSettings": {"Ports": {CONTAINER_PORT: [{"HostIp": "0.0.0.0", "HostPort": "49153"}]}}});
        let info = info_of(&inspect);
        assert_eq!(info.url.as_deref(), Some("http://127.0.0.1:49153"));
        assert_eq!((info.name.as_str(), info.running), ("b1", true));
        let stopped = json!({"Id": "abc", "State": {"Running": false, "Status": "exited"},
            "NetworkSettings": {"Ports": {}}});
        assert_eq!(info_of(&stopped).url, None);
    }
}
