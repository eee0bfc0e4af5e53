//! The Docker provider: sandbox containers made from the Cove image, driven through the
//! Docker Engine API with `bollard` (no `docker` CLI needed), at `DOCKER_HOST` as Docker's
//! own client reads it: a `unix://` socket (the default, `/var/run/docker.sock`),
//! `tcp://host:port`, or TLS with `DOCKER_TLS_VERIFY=1` and the `ca.pem`, `cert.pem` and
//! `key.pem` of `DOCKER_CERT_PATH` (default `~/.docker`).
//!
//! A container runs `coved` on port 7700 with a token Cove generates and passes in its
//! environment; the port is published at a port Docker picks, which Cove reads back after
//! each start: on 127.0.0.1 when the engine is on this machine, on the engine's host when
//! it is reached over the network.

mod leftovers;
mod limits;
mod snapshots;

pub use leftovers::{INSTALLATION, Leftover};
pub use limits::{Limits, parse_size};
pub use snapshots::{SNAPSHOT_OF, Snapshot, repository};

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bollard::errors::Error as BollardError;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, HostConfig, PortBinding, RestartPolicy,
    RestartPolicyNameEnum,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder, StopContainerOptionsBuilder,
};

/// The image `cove sandbox create` uses unless told.
pub const DEFAULT_IMAGE: &str = "cove-sandbox:latest";
/// The port coved listens on inside the container.
pub const CONTAINER_PORT: &str = "7700/tcp";
/// The label that marks Cove's containers, valued with the sandbox's name.
pub const LABEL: &str = "cove.sandbox";
/// A sandbox's memory unless told: a browser, a build and the agent's tools fit.
pub const DEFAULT_MEMORY_BYTES: i64 = 4 << 30;
/// A sandbox's CPUs unless told.
pub const DEFAULT_CPUS: f64 = 2.0;
/// Most processes and threads in one sandbox: a fork bomb stops there, not at the host's.
pub const PIDS_LIMIT: i64 = 4096;
/// How long a fresh container may take to answer `/health`.
const HEALTH_WAIT: Duration = Duration::from_secs(60);
/// Deadline of one Engine API call.
const CALL_LIMIT: Duration = Duration::from_secs(120);

/// What went wrong with Docker, by what the user does next.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// Start Docker, or point DOCKER_HOST at it.
    #[error(
        "cannot reach Docker at {socket}: {message} (is the Docker engine running? set DOCKER_HOST=unix:///path/to/docker.sock or tcp://host:port)"
    )]
    Unreachable { socket: String, message: String },
    /// DOCKER_HOST names something Cove cannot speak to, or its TLS files are missing.
    #[error(
        "DOCKER_HOST={host} cannot be used: {message} (use unix:///path/to/docker.sock, tcp://host:port, or tcp://host:port with DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH holding ca.pem, cert.pem and key.pem)"
    )]
    UnsupportedHost { host: String, message: String },
    /// Build or pull the image first.
    #[error(
        "Docker has no image {image}: build it with `docker build -t {image} sandbox-image/` (see sandbox-image/README.md)"
    )]
    NoImage { image: String },
    /// The engine's disk is full.
    #[error(
        "the Docker engine's disk is full ({message}): free space (`cove sandbox gc --yes`, `cove sandbox rm-snapshot`, `docker system prune`) and try again"
    )]
    DiskFull { message: String },
    /// The engine's storage cannot limit a container's disk.
    #[error(
        "this Docker engine cannot limit a sandbox's disk ({message}): remove `disk` from [sandbox_limits] (or --disk), or give the engine storage that can (overlay2 over xfs mounted with pquota)"
    )]
    NoDiskLimit { message: String },
    /// Pick another name, or remove the old sandbox.
    #[error(
        "a container or network named {name} already exists: pick another name or `cove sandbox rm`"
    )]
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
    /// Memory limit in bytes ([`DEFAULT_MEMORY_BYTES`] when none is asked).
    pub memory_bytes: Option<i64>,
    /// CPU limit in cores ([`DEFAULT_CPUS`] when none is asked).
    pub cpus: Option<f64>,
    /// Processes at once ([`PIDS_LIMIT`] when none is asked).
    pub processes: Option<i64>,
    /// Bytes of its own filesystem (none: as much as the engine's disk holds). Engines
    /// limit it only on some storage (overlay2 over xfs with project quotas, btrfs, zfs).
    pub disk_bytes: Option<i64>,
    /// The Cove installation that makes it (its label; `cove sandbox gc` collects only its
    /// own).
    pub installation: Option<String>,
    /// Size of /dev/shm (Chromium needs more than Docker's 64 MB).
    pub shm_bytes: i64,
    /// Keep the engine's default capabilities instead of dropping them all: root in the
    /// container may then change owners, switch users and install packages, as a plain
    /// container allows (for benchmark tasks that expect one).
    pub engine_capabilities: bool,
}

impl Default for ContainerSpec {
    fn default() -> Self {
        ContainerSpec {
            image: DEFAULT_IMAGE.to_string(),
            memory_bytes: None,
            cpus: None,
            processes: None,
            disk_bytes: None,
            installation: None,
            shm_bytes: 512 * 1024 * 1024,
            engine_capabilities: false,
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
    /// Frozen by `pause` (Docker counts it running): its processes wait where they were.
    pub paused: bool,
    /// `running`, `paused`, `exited`, ...
    pub status: String,
    /// Where coved answers, while running.
    pub url: Option<String>,
    /// What the engine lets it use.
    pub limits: Limits,
    /// When it last stopped, as the engine says it (RFC 3339; none if it never has).
    pub finished_at: Option<String>,
}

/// How long each phase of making a sandbox took, in milliseconds: where a cold start goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Phases {
    /// Its network made.
    pub network_ms: u64,
    /// Its container made from the image.
    pub create_ms: u64,
    /// The container started.
    pub start_ms: u64,
    /// coved answering its `/health`.
    pub healthy_ms: u64,
}

/// A sandbox just made: the container, and how long each phase took.
#[derive(Debug, Clone)]
pub struct Created {
    pub info: ContainerInfo,
    pub phases: Phases,
}

fn ms_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A Docker engine.
#[derive(Debug, Clone)]
pub struct Docker {
    /// A client at bollard's own API version, until the engine's is known.
    first: bollard::Docker,
    /// The client at the version both speak, found on first use.
    client: std::sync::Arc<tokio::sync::OnceCell<bollard::Docker>>,
    /// Where it is, as DOCKER_HOST says (for messages).
    host: String,
    /// The address its published ports are reached at.
    published_on: String,
}

/// The container name of a sandbox.
pub fn container_name(sandbox: &str) -> String {
    format!("cove-{sandbox}")
}

/// Where coved answers in a container `inspect` describes, reached at `host`.
fn published_url(inspect: &ContainerInspectResponse, host: &str) -> Option<String> {
    let bindings = inspect
        .network_settings
        .as_ref()?
        .ports
        .as_ref()?
        .get(CONTAINER_PORT)?
        .as_ref()?;
    let binding = bindings.first()?;
    let port = binding.host_port.as_deref().filter(|p| !p.is_empty())?;
    let ip = match binding.host_ip.as_deref() {
        None | Some("") | Some("0.0.0.0") | Some("::") => host,
        Some(ip) if ip.contains(':') => return Some(format!("http://[{ip}]:{port}")),
        Some(ip) => ip,
    };
    Some(format!("http://{ip}:{port}"))
}

fn info_of(inspect: &ContainerInspectResponse, host: &str) -> ContainerInfo {
    let state = inspect.state.as_ref();
    ContainerInfo {
        id: inspect.id.clone().unwrap_or_default(),
        name: inspect
            .config
            .as_ref()
            .and_then(|c| c.labels.as_ref())
            .and_then(|l| l.get(LABEL))
            .cloned()
            .unwrap_or_default(),
        running: state.and_then(|s| s.running).unwrap_or(false),
        paused: state.and_then(|s| s.paused).unwrap_or(false),
        status: state
            .and_then(|s| s.status)
            .map(|s| s.to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".into()),
        url: published_url(inspect, host),
        finished_at: state
            .and_then(|s| s.finished_at.clone())
            .filter(|f| !f.is_empty() && !f.starts_with("0001-")),
        limits: {
            let host = inspect.host_config.as_ref();
            // Docker reports 0 (or -1 for processes) where there is no limit.
            Limits {
                memory_bytes: host.and_then(|h| h.memory).filter(|m| *m > 0),
                nano_cpus: host.and_then(|h| h.nano_cpus).filter(|c| *c > 0),
                processes: host.and_then(|h| h.pids_limit).filter(|p| *p > 0),
                disk_bytes: host
                    .and_then(|h| h.storage_opt.as_ref())
                    .and_then(|o| o.get("size"))
                    .and_then(|size| parse_size(size)),
            }
        },
    }
}

/// The host a `tcp://` or `https://` DOCKER_HOST names (its published ports are there), or
/// none for a socket on this machine.
fn remote_host(docker_host: &str) -> Option<String> {
    let rest = docker_host
        .strip_prefix("tcp://")
        .or_else(|| docker_host.strip_prefix("https://"))
        .or_else(|| docker_host.strip_prefix("http://"))?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    Some(host.to_string()).filter(|h| !h.is_empty())
}

/// The version an engine names in "client version 1.53 is too new. Maximum supported API
/// version is 1.41".
fn newest_supported(message: &str) -> Option<bollard::ClientVersion> {
    let (_, version) = message.split_once("Maximum supported API version is ")?;
    let version: String = version
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let (major, minor) = version.split_once('.')?;
    Some(bollard::ClientVersion {
        major_version: major.parse().ok()?,
        minor_version: minor.parse().ok()?,
    })
}

/// A client of the engine at `host` (a DOCKER_HOST value) speaking API `version`.
fn connect_at(
    host: &str,
    version: &bollard::ClientVersion,
) -> Result<bollard::Docker, DockerError> {
    let timeout = CALL_LIMIT.as_secs();
    let unusable = |e: BollardError| DockerError::UnsupportedHost {
        host: host.to_string(),
        message: e.to_string(),
    };
    // Set at all, as bollard (and so the first connection) reads it.
    let tls = std::env::var_os("DOCKER_TLS_VERIFY").is_some();
    if let Some(socket) = host.strip_prefix("unix://") {
        return bollard::Docker::connect_with_unix(socket, timeout, version).map_err(unusable);
    }
    if host.starts_with("https://") || tls {
        let certs = std::env::var_os("DOCKER_CERT_PATH")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".docker")))
            .unwrap_or_default();
        return bollard::Docker::connect_with_ssl(
            host,
            &certs.join("key.pem"),
            &certs.join("cert.pem"),
            &certs.join("ca.pem"),
            timeout,
            version,
        )
        .map_err(unusable);
    }
    bollard::Docker::connect_with_http(host, timeout, version).map_err(unusable)
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl Docker {
    /// The engine at `DOCKER_HOST` (as Docker's client reads it), else the local socket.
    pub fn from_env() -> Result<Docker, DockerError> {
        let host = std::env::var("DOCKER_HOST")
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unix:///var/run/docker.sock".into());
        let first = bollard::Docker::connect_with_host(&host)
            .map_err(|e| match e {
                // No socket there: the engine is not running (or elsewhere).
                BollardError::SocketNotFoundError(socket) => DockerError::Unreachable {
                    socket,
                    message: "no socket there".into(),
                },
                other => DockerError::UnsupportedHost {
                    host: host.clone(),
                    message: other.to_string(),
                },
            })?
            .with_timeout(CALL_LIMIT);
        let published_on = remote_host(&host)
            .filter(|h| !is_loopback(h))
            .unwrap_or_else(|| "127.0.0.1".into());
        let tls = host.starts_with("https://") || std::env::var_os("DOCKER_TLS_VERIFY").is_some();
        if published_on != "127.0.0.1" && !tls {
            // Sandboxes' tokens would cross the network in clear, and so would the engine's
            // control of this machine's containers.
            return Err(DockerError::UnsupportedHost {
                host,
                message: "a remote engine is reached over TLS only".into(),
            });
        }
        Ok(Docker {
            first,
            client: Default::default(),
            host,
            published_on,
        })
    }

    /// The client, at the API version the engine speaks: a newer engine is spoken to at
    /// bollard's version, an older one at its own (it refuses versions newer than its own,
    /// and the newest engines refuse very old ones, so no single version fits all).
    async fn client(&self) -> Result<&bollard::Docker, DockerError> {
        self.client
            .get_or_try_init(|| async {
                match self.first.clone().negotiate_version().await {
                    Ok(client) => Ok(client),
                    Err(BollardError::DockerResponseServerError {
                        status_code: 400,
                        message,
                    }) => match newest_supported(&message) {
                        Some(version) => connect_at(&self.host, &version),
                        None => Err(DockerError::Api {
                            status: 400,
                            message,
                        }),
                    },
                    Err(e) => Err(self.failed(e, || DockerError::NotFound("/version".into()))),
                }
            })
            .await
    }

    /// What a failed call means for the user; `not_found` names what a 404 is about.
    fn failed(&self, error: BollardError, not_found: impl FnOnce() -> DockerError) -> DockerError {
        match error {
            BollardError::DockerResponseServerError {
                status_code,
                message,
            } => match status_code {
                404 => not_found(),
                _ if message.contains("no space left on device") => {
                    DockerError::DiskFull { message }
                }
                _ => DockerError::Api {
                    status: status_code,
                    message,
                },
            },
            other => DockerError::Unreachable {
                socket: self.host.clone(),
                message: other.to_string(),
            },
        }
    }

    /// Checks the engine answers.
    pub async fn ping(&self) -> Result<(), DockerError> {
        self.client()
            .await?
            .ping()
            .await
            .map(|_| ())
            .map_err(|e| self.failed(e, || DockerError::NotFound("/_ping".into())))
    }

    /// Creates and starts the container of sandbox `name`, running coved with `token`, and
    /// waits until coved answers.
    pub async fn create(
        &self,
        name: &str,
        token: &str,
        spec: &ContainerSpec,
    ) -> Result<Created, DockerError> {
        let mut phases = Phases::default();
        // Published where the controller reaches the engine: loopback for a local engine.
        let bind = if self.published_on == "127.0.0.1" {
            "127.0.0.1"
        } else {
            "0.0.0.0"
        };
        let host = HostConfig {
            init: Some(true),
            shm_size: Some(spec.shm_bytes),
            port_bindings: Some(HashMap::from([(
                CONTAINER_PORT.to_string(),
                Some(vec![PortBinding {
                    host_ip: Some(bind.into()),
                    host_port: Some(String::new()),
                }]),
            )])),
            restart_policy: Some(RestartPolicy {
                name: Some(RestartPolicyNameEnum::UNLESS_STOPPED),
                maximum_retry_count: None,
            }),
            memory: Some(spec.memory_bytes.unwrap_or(DEFAULT_MEMORY_BYTES)),
            nano_cpus: Some((spec.cpus.unwrap_or(DEFAULT_CPUS) * 1e9) as i64),
            pids_limit: Some(spec.processes.unwrap_or(PIDS_LIMIT)),
            storage_opt: spec
                .disk_bytes
                .map(|b| HashMap::from([("size".to_string(), b.to_string())])),
            // coved runs as an unprivileged user and needs no capability.
            cap_drop: (!spec.engine_capabilities).then(|| vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges:true".into()]),
            // A network of its own: sandboxes do not reach each other.
            network_mode: Some(network_name(name)),
            ..Default::default()
        };
        let begun = Instant::now();
        self.make_network(name, spec.installation.as_deref())
            .await?;
        phases.network_ms = ms_since(begun);
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            env: Some(container_env(token)),
            exposed_ports: Some(vec![CONTAINER_PORT.to_string()]),
            labels: Some(labels(name, spec.installation.as_deref())),
            host_config: Some(host),
            ..Default::default()
        };
        let container = container_name(name);
        let options = CreateContainerOptionsBuilder::default()
            .name(&container)
            .build();
        let begun = Instant::now();
        let created = match self
            .client()
            .await?
            .create_container(Some(options), body)
            .await
        {
            Ok(created) => created,
            Err(BollardError::DockerResponseServerError {
                status_code: 409, ..
            }) => return Err(DockerError::Conflict { name: container }),
            Err(e) => {
                // Nothing of it is left: its network goes too.
                if let Err(left) = self.remove_network(name).await {
                    tracing::warn!(error = %left, sandbox = name, "a failed sandbox's network could not be removed; `cove sandbox gc` lists it");
                }
                return Err(match e {
                    BollardError::DockerResponseServerError { message, .. }
                        if spec.disk_bytes.is_some()
                            && (message.contains("quota") || message.contains("storage-opt")) =>
                    {
                        DockerError::NoDiskLimit { message }
                    }
                    e => self.failed(e, || DockerError::NoImage {
                        image: spec.image.clone(),
                    }),
                });
            }
        };
        phases.create_ms = ms_since(begun);
        let begun = Instant::now();
        let (info, url) = self.start_container(&created.id).await?;
        phases.start_ms = ms_since(begun);
        let begun = Instant::now();
        wait_healthy(&url, &info.name).await?;
        phases.healthy_ms = ms_since(begun);
        Ok(Created { info, phases })
    }

    /// Makes sandbox `name`'s own network (kept if it is there).
    async fn make_network(
        &self,
        name: &str,
        installation: Option<&str>,
    ) -> Result<(), DockerError> {
        let request = bollard::models::NetworkCreateRequest {
            name: network_name(name),
            driver: Some("bridge".into()),
            labels: Some(labels(name, installation)),
            options: Some(HashMap::from([(
                "com.docker.network.bridge.enable_icc".to_string(),
                "false".to_string(),
            )])),
            ..Default::default()
        };
        match self.client().await?.create_network(request).await {
            Ok(_) => Ok(()),
            // There already: Cove's own for this sandbox (a create that failed half-way),
            // or someone else's, which the sandbox does not join.
            Err(BollardError::DockerResponseServerError {
                status_code: 409, ..
            }) => {
                let existing = self
                    .client()
                    .await?
                    .inspect_network(&network_name(name), None)
                    .await
                    .map_err(|e| self.failed(e, || DockerError::NotFound(network_name(name))))?;
                let ours = existing
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(LABEL))
                    .is_some_and(|n| n == name);
                if ours {
                    Ok(())
                } else {
                    Err(DockerError::Conflict {
                        name: network_name(name),
                    })
                }
            }
            // An engine without the networks API: the container's creation, which names
            // the network, says whether it can do without.
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => {
                tracing::warn!(network = %network_name(name), "the engine cannot make networks");
                Ok(())
            }
            Err(e) => Err(self.failed(e, || DockerError::NotFound("/networks/create".into()))),
        }
    }

    /// Removes sandbox `name`'s network, if it has one.
    pub async fn remove_network(&self, name: &str) -> Result<(), DockerError> {
        match self
            .client()
            .await?
            .remove_network(&network_name(name))
            .await
        {
            Ok(()) => Ok(()),
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(self.failed(e, || DockerError::NotFound(network_name(name)))),
        }
    }

    /// Starts a stopped container; answers with where coved listens once it does.
    pub async fn start(&self, id: &str) -> Result<ContainerInfo, DockerError> {
        let (info, url) = self.start_container(id).await?;
        wait_healthy(&url, &info.name).await?;
        Ok(info)
    }

    /// Starts a container; answers with it and where coved will listen.
    async fn start_container(&self, id: &str) -> Result<(ContainerInfo, String), DockerError> {
        self.client()
            .await?
            .start_container(id, None)
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound(id.to_string())))?;
        let info = self.inspect(id).await?;
        let Some(url) = info.url.clone() else {
            return Err(DockerError::Api {
                status: 500,
                message: format!("container {id} runs but publishes no port for {CONTAINER_PORT}"),
            });
        };
        Ok((info, url))
    }

    /// Stops a container (coved gets SIGTERM and `timeout_secs` to finish).
    pub async fn stop(&self, id: &str, timeout_secs: u32) -> Result<(), DockerError> {
        let options = StopContainerOptionsBuilder::default()
            .t(i32::try_from(timeout_secs).unwrap_or(i32::MAX))
            .build();
        self.client()
            .await?
            .stop_container(id, Some(options))
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound(id.to_string())))
    }

    /// Freezes a running container's processes where they are (the cgroup freezer): its
    /// memory is kept, and it takes no CPU until [`Docker::unpause`].
    pub async fn pause(&self, id: &str) -> Result<(), DockerError> {
        self.client()
            .await?
            .pause_container(id)
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound(id.to_string())))
    }

    /// Lets a paused container's processes go on from where they were.
    pub async fn unpause(&self, id: &str) -> Result<(), DockerError> {
        self.client()
            .await?
            .unpause_container(id)
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound(id.to_string())))
    }

    /// Lets a paused container go on, and is content when someone else just did.
    pub async fn resume(&self, id: &str) -> Result<(), DockerError> {
        match self.unpause(id).await {
            Ok(()) => Ok(()),
            Err(e) => match self.inspect(id).await {
                Ok(info) if info.running && !info.paused => Ok(()),
                _ => Err(e),
            },
        }
    }

    /// Removes a container, running or not.
    pub async fn remove(&self, id: &str) -> Result<(), DockerError> {
        let options = RemoveContainerOptionsBuilder::default().force(true).build();
        self.client()
            .await?
            .remove_container(id, Some(options))
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound(id.to_string())))
    }

    /// What Docker says of a container now.
    pub async fn inspect(&self, id: &str) -> Result<ContainerInfo, DockerError> {
        let inspect = self
            .client()
            .await?
            .inspect_container(id, None)
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound(id.to_string())))?;
        Ok(info_of(&inspect, &self.published_on))
    }
}

/// The labels of sandbox `name`'s container and network.
fn labels(name: &str, installation: Option<&str>) -> HashMap<String, String> {
    let mut labels = HashMap::from([(LABEL.to_string(), name.to_string())]);
    if let Some(installation) = installation {
        labels.insert(INSTALLATION.to_string(), installation.to_string());
    }
    labels
}

/// The network of sandbox `name`.
pub fn network_name(name: &str) -> String {
    format!("cove-{name}")
}

/// Polls coved's `/health` until it answers.
pub(crate) async fn wait_healthy(url: &str, name: &str) -> Result<(), DockerError> {
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

/// A new container's environment: its token, and where the controller's traces go.
fn container_env(token: &str) -> Vec<String> {
    let mut env: Vec<String> = cove_telemetry::daemon_env()
        .into_iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    env.push(format!("COVE_TOKEN={token}"));
    env
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
        let inspect: ContainerInspectResponse = serde_json::from_value(serde_json::json!({
            "Id": "abc", "Config": {"Labels": {LABEL: "b1"}},
            "State": {"Running": true, "Status": "running"},
            "NetworkSettings": {"Ports": {CONTAINER_PORT: [{"HostIp": "0.0.0.0", "HostPort": "49153"}]}}}))
        .unwrap();
        let info = info_of(&inspect, "127.0.0.1");
        assert_eq!(info.url.as_deref(), Some("http://127.0.0.1:49153"));
        assert_eq!(
            (info.name.as_str(), info.running, info.paused),
            ("b1", true, false)
        );
        assert_eq!(
            info_of(&inspect, "docker.internal").url.as_deref(),
            Some("http://docker.internal:49153")
        );
        let stopped: ContainerInspectResponse = serde_json::from_value(serde_json::json!({
            "Id": "abc", "State": {"Running": false, "Status": "exited"},
            "NetworkSettings": {"Ports": {}}}))
        .unwrap();
        assert_eq!(info_of(&stopped, "127.0.0.1").url, None);
        assert_eq!(info_of(&stopped, "127.0.0.1").status, "exited");
    }

    #[test]
    fn limits_read_as_a_person_says_them() {
        let limits = Limits {
            memory_bytes: Some(512 * 1024 * 1024),
            nano_cpus: Some(2_500_000_000),
            processes: Some(4096),
            disk_bytes: None,
        };
        assert_eq!(limits.line(), "2.5 CPUs, 512 MiB, 4096 processes");
        let with_disk = Limits {
            disk_bytes: Some(10 << 30),
            ..limits
        };
        assert_eq!(
            with_disk.line(),
            "2.5 CPUs, 512 MiB, 4096 processes, 10.0 GiB disk"
        );
        assert_eq!(
            Limits::default().line(),
            "any CPUs, any memory, any processes"
        );
    }

    #[test]
    fn an_older_engine_names_the_version_it_speaks() {
        let v = newest_supported(
            "client version 1.53 is too new. Maximum supported API version is 1.41",
        )
        .unwrap();
        assert_eq!((v.major_version, v.minor_version), (1, 41));
        assert!(newest_supported("No such image").is_none());
    }

    #[test]
    fn a_remote_engine_publishes_on_its_own_host() {
        assert_eq!(
            remote_host("tcp://10.0.0.5:2376").as_deref(),
            Some("10.0.0.5")
        );
        assert_eq!(
            remote_host("tcp://[fd00::1]:2375").as_deref(),
            Some("fd00::1")
        );
        assert_eq!(
            remote_host("https://docker.lan:2376/").as_deref(),
            Some("docker.lan")
        );
        assert_eq!(remote_host("unix:///var/run/docker.sock"), None);
        assert!(is_loopback("127.0.0.1") && is_loopback("localhost") && !is_loopback("10.0.0.5"));
    }
}
