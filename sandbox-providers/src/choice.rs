//! Which sandbox a request names (`sandbox` of the request or `cove.toml`, the name of a
//! sandbox Cove made with Docker or Kubernetes, `k8s:NAME`, a URL, or a local one) and
//! opening it: a stopped Docker sandbox is started first, then reached at its current URL;
//! a Kubernetes sandbox's Pod is made again if it is gone (stopped, evicted), then reached
//! through port-forward. Every front end opens its sandboxes here.

use std::path::{Path, PathBuf};

use cove_config::FileConfig;
use cove_store::{ManagedSandbox, Store, StoreError, now_ms};

use super::docker::{ContainerSpec, DEFAULT_IMAGE, Docker, DockerError};
use super::kubernetes::{KubeError, Kubernetes, PodPlan, pod_name};
use super::{LocalSettings, Sandbox, SandboxError, SandboxSpec};

/// What a caller asks for: a sandbox by name, URL or kind, its token, a local one's folder.
#[derive(Debug, Clone, Default)]
pub struct SandboxRequest {
    /// `local`, `host`, a coved URL, a name from `cove.toml`, a name Cove made, `k8s:NAME`;
    /// none: `cove.toml`'s `sandbox`, else a local one.
    pub sandbox: Option<String>,
    /// The token of a remote sandbox.
    pub token: Option<String>,
    /// The workspace folder of a local sandbox.
    pub workspace: Option<PathBuf>,
}

/// Where the lifecycle of a sandbox is told as it happens ("starting sandbox x").
pub trait Narrate: Sync {
    /// Worth knowing.
    fn note(&self, text: &str);
    /// The person should read it (a sandbox with no walls).
    fn warn(&self, text: &str);
}

/// Why a sandbox could not be chosen or opened, sorted by what the caller does next.
#[derive(Debug, thiserror::Error)]
pub enum SandboxesError {
    /// The request names no sandbox that can be used: name another.
    #[error("{0}")]
    Invalid(String),
    /// The named sandbox is gone: list what there is.
    #[error("{0}")]
    NotFound(String),
    /// The sandbox is in a state Cove cannot use (the message says what to do).
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Docker(#[from] DockerError),
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The sandboxes a front end can reach: those `cove.toml` names, those Cove made (in the
/// database), local ones walled in by `local`.
#[derive(Clone)]
pub struct Sandboxes<'a> {
    pub store: &'a Store,
    pub file: &'a FileConfig,
    /// What a local sandbox's walls let through.
    pub local: &'a LocalSettings,
    /// How Kubernetes sandboxes are reached (none: detected).
    pub in_cluster: Option<bool>,
    pub narrate: &'a dyn Narrate,
    /// `cove` itself, for the helpers that outlive the command that starts them: the
    /// watcher that pauses a Docker sandbox left idle (`idle_pause_secs`), a pool's refill.
    pub helper_program: Option<PathBuf>,
}

impl Sandboxes<'_> {
    /// The sandbox `request` names, and its token; a local one gets `default_workspace`
    /// unless the request names a folder.
    pub fn choose(
        &self,
        request: &SandboxRequest,
        default_workspace: impl FnOnce() -> PathBuf,
    ) -> Result<(SandboxSpec, Option<String>), SandboxesError> {
        let file = self.file;
        let choice = request.sandbox.clone().or_else(|| file.sandbox.clone());
        if let Some(pool) = choice.as_deref().and_then(|c| c.strip_prefix("pool:")) {
            // Taken now, whole, for this thread alone; its daemon gets the sandbox's own
            // token as it opens.
            let made = self.take_from_pool(pool, None)?;
            return Ok((SandboxSpec::of_made(&made), None));
        }
        if let Some(name) = choice.as_deref().and_then(|c| c.strip_prefix("k8s:")) {
            // Made on first use when Cove does not know it yet.
            return match self.store.sandbox(name)? {
                Some(made) if made.provider != "kubernetes" => {
                    Err(SandboxesError::Invalid(format!(
                        "sandbox {name} is a {} sandbox, not a Kubernetes one: use --sandbox {name}",
                        made.provider
                    )))
                }
                _ => Ok((
                    SandboxSpec::Kubernetes {
                        name: name.to_string(),
                    },
                    None,
                )),
            };
        }
        if let Some(name) = choice.as_deref()
            && !file.sandboxes.contains_key(name)
            && let Some(made) = self.store.sandbox(name)?
        {
            return Ok((SandboxSpec::of_made(&made), None));
        }
        if let Some(named) = choice.as_deref().and_then(|n| file.sandboxes.get(n)) {
            let token = request
                .token
                .clone()
                .or_else(|| named.token.clone())
                .or_else(|| file.sandbox_token.clone());
            return Ok((
                SandboxSpec::Remote {
                    url: named.url.clone(),
                },
                token,
            ));
        }
        let token = request.token.clone().or_else(|| {
            choice
                .as_deref()
                .and_then(|url| file.token_for(url))
                .or_else(|| file.sandbox_token.clone())
        });
        match choice.as_deref() {
            None | Some("local") | Some("host") => {
                let workspace = request.workspace.clone().unwrap_or_else(default_workspace);
                let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
                Ok((
                    if choice.as_deref() == Some("host") {
                        SandboxSpec::Host { workspace }
                    } else {
                        SandboxSpec::Local { workspace }
                    },
                    None,
                ))
            }
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => Ok((
                SandboxSpec::Remote {
                    url: url.to_string(),
                },
                token,
            )),
            Some(other) => {
                let names: Vec<&str> = file.sandboxes.keys().map(String::as_str).collect();
                Err(SandboxesError::Invalid(format!(
                    "--sandbox must be `local`, `host`, a URL or a sandbox named in cove.toml ({}), not {other:?}",
                    if names.is_empty() {
                        "none are".to_string()
                    } else {
                        names.join(", ")
                    }
                )))
            }
        }
    }

    /// The token for `spec`, a thread's sandbox: the request's only for the sandbox the
    /// request names (or any when it names none), else the one `cove.toml` gives its
    /// address. A token belongs to the sandbox it was given for.
    pub fn token_for(&self, request: &SandboxRequest, spec: &SandboxSpec) -> Option<String> {
        let SandboxSpec::Remote { url } = spec else {
            return None;
        };
        let given_for_it = request.sandbox.is_none()
            || self
                .choose(request, PathBuf::new)
                .is_ok_and(|(chosen, _)| chosen.label() == spec.label());
        match &request.token {
            Some(token) if given_for_it => Some(token.clone()),
            _ => self.file.token_for(url),
        }
    }

    /// Opens `spec`'s sandbox; a Docker one is started first when it is not running, and
    /// resumed when it is paused (its processes go on from where they were).
    pub async fn open(
        &self,
        spec: SandboxSpec,
        token: Option<String>,
        log: Option<&Path>,
    ) -> Result<Sandbox, SandboxesError> {
        if let SandboxSpec::Kubernetes { name } = &spec {
            return self.open_pod(name).await;
        }
        if let SandboxSpec::Host { workspace } = &spec {
            self.narrate.warn(&format!(
                "warning: --sandbox host: no walls; the agent's commands run as you, on this machine, and can read and change anything you can (workspace {})",
                workspace.display()
            ));
        }
        let SandboxSpec::Docker { name } = &spec else {
            return Ok(Sandbox::open(spec, token, log, self.local).await?);
        };
        let managed = self.store.sandbox(name)?.ok_or_else(|| {
            SandboxesError::NotFound(format!(
                "no sandbox {name}: it was removed; `cove sandbox ls` lists what there is"
            ))
        })?;
        let docker = Docker::from_env()?;
        // Held while it is open: its idle watcher does not pause it meanwhile.
        let in_use = match self.store.path() {
            Some(db) => crate::idle_watch::in_use(&db, name).await,
            None => None,
        };
        let mut info = docker.inspect(&managed.container_id).await?;
        if info.paused {
            self.narrate
                .note(&format!("resuming sandbox {name} (it was paused)"));
            docker.resume(&managed.container_id).await?;
        } else if !info.running {
            self.narrate.note(&format!("starting sandbox {name}"));
            info = docker.start(&managed.container_id).await?;
        }
        let url = info
            .url
            .ok_or_else(|| SandboxesError::Failed(format!("sandbox {name} publishes no port")))?;
        self.store.set_sandbox_url(name, Some(&url))?;
        if let (Some(secs), Some(program), Some(db)) = (
            self.file.idle_pause_secs,
            &self.helper_program,
            self.store.path(),
        ) {
            crate::idle_watch::start(program, &db, name, secs);
        }
        match crate::tokens::ensure_own(&url, &managed).await {
            // Started outside Cove (`docker restart`, the engine's restart policy), the
            // container may run before its coved listens: wait for it as a start by Cove does.
            Err(SandboxError::Unreachable { .. }) => {
                crate::docker::wait_healthy(&url, name).await?;
                crate::tokens::ensure_own(&url, &managed).await?;
            }
            other => other?,
        }
        let mut sandbox = Sandbox::open(
            SandboxSpec::Remote { url },
            Some(managed.token),
            log,
            self.local,
        )
        .await?;
        // Threads remember the name, not the URL of this start.
        sandbox.spec = spec;
        sandbox._in_use = in_use;
        Ok(sandbox)
    }

    /// Keeps the uid of the Pod a Kubernetes sandbox runs in now with its plan, when it
    /// changed (the Pod was made again): the next use refuses any other Pod of that name.
    pub fn keep_pod_uid(
        &self,
        name: &str,
        mut plan: PodPlan,
        uid: Option<String>,
    ) -> Result<(), SandboxesError> {
        if uid.is_some() && uid != plan.pod_uid {
            plan.pod_uid = uid;
            if let Ok(spec) = serde_json::to_string(&plan) {
                self.store.set_sandbox_spec(name, &spec)?;
            }
        }
        Ok(())
    }

    /// Checks `name` for a new sandbox: a valid name (for Kubernetes when `kubernetes`)
    /// that no sandbox has yet.
    pub fn check_name(&self, name: &str, kubernetes: bool) -> Result<(), SandboxesError> {
        let valid = !name.is_empty()
            && name.len() <= 40
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || (c == '_' && !kubernetes))
            && name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
            && (!kubernetes
                || (name.chars().all(|c| !c.is_ascii_uppercase()) && !name.ends_with('-')));
        if !valid {
            return Err(SandboxesError::Invalid(if kubernetes {
                format!(
                    "{name:?} is not a sandbox name for Kubernetes: use lower-case letters, digits and - (at most 40, not ending in -)"
                )
            } else {
                format!("{name:?} is not a sandbox name: use letters, digits, - and _ (at most 40)")
            }));
        }
        if self.file.sandboxes.contains_key(name) || self.store.sandbox(name)?.is_some() {
            return Err(SandboxesError::Invalid(format!(
                "a sandbox named {name} exists already"
            )));
        }
        Ok(())
    }

    /// Makes Kubernetes sandbox `name` (its Pod, and its volume when the plan has one) and
    /// records it.
    pub async fn make_pod_sandbox(
        &self,
        kube: &Kubernetes,
        name: &str,
        mut plan: PodPlan,
    ) -> Result<ManagedSandbox, SandboxesError> {
        let token = cove_store::new_id(32);
        // What the Pod's environment holds; its daemon is given `token` as it opens.
        let boot_token = cove_store::new_id(32);
        plan.installation = Some(self.store.installation_id()?);
        self.narrate.note(&format!(
            "creating sandbox {name} in Kubernetes namespace {} from {}",
            plan.namespace, plan.image
        ));
        match kube.create(name, &boot_token, &plan).await {
            Ok(started) => plan.pod_uid = started.uid,
            Err(e) => {
                // A claim made before the Pod failed, say; a name taken is someone else's.
                if !matches!(e, KubeError::Conflict { .. }) {
                    let _ = kube.remove(name, &plan.namespace).await;
                }
                return Err(e.into());
            }
        }
        let made = ManagedSandbox {
            name: name.to_string(),
            provider: "kubernetes".into(),
            container_id: format!("{}/{}", plan.namespace, pod_name(name)),
            url: None,
            token,
            image: plan.image.clone(),
            created_at: now_ms(),
            spec: serde_json::to_string(&plan).ok(),
            boot_token: Some(boot_token),
            made_as: None,
        };
        self.store.add_sandbox(&made)?;
        Ok(made)
    }

    /// Opens Kubernetes sandbox `name`: its Pod is made again if it is gone, then coved is
    /// reached (port-forward from outside the cluster, the Pod's address inside).
    async fn open_pod(&self, name: &str) -> Result<Sandbox, SandboxesError> {
        let kube = Kubernetes::from_env(self.in_cluster).await?;
        let made = match self.store.sandbox(name)? {
            Some(made) => made,
            // `--sandbox k8s:NAME` for a sandbox Cove does not know: made now, with the
            // defaults `cove sandbox create NAME --kubernetes` has.
            None => {
                self.check_name(name, true)?;
                let plan = PodPlan {
                    namespace: kube.default_namespace.clone(),
                    image: DEFAULT_IMAGE.into(),
                    cpu: None,
                    memory_bytes: None,
                    storage_bytes: None,
                    deadline_secs: None,
                    shm_bytes: ContainerSpec::default().shm_bytes,
                    installation: None,
                    pod_uid: None,
                    restore_from: None,
                    disk_bytes: None,
                };
                self.make_pod_sandbox(&kube, name, plan).await?
            }
        };
        let plan = pod_plan(&made)?;
        let resource = made.resource_name();
        // Held while it is open: its idle watcher does not pause it meanwhile.
        let in_use = match self.store.path() {
            Some(db) => crate::idle_watch::in_use(&db, name).await,
            None => None,
        };
        let started = kube
            .ensure_running(resource, made.start_token(), &plan)
            .await?;
        self.keep_pod_uid(name, plan.clone(), started.uid.clone())?;
        if started.remade {
            let why = started
                .why
                .as_deref()
                .map(|w| format!(" (its Pod had ended: {w})"))
                .unwrap_or_default();
            self.narrate.note(&if started.lost_workspace {
                format!(
                    "sandbox {name} was started again{why} and lost its workspace: it has no volume (make it with --storage to keep one)"
                )
            } else {
                format!("sandbox {name} was started again{why}; its workspace is on its volume")
            });
        }
        let tunnel = kube
            .connect(resource, &plan.namespace, started.ip.as_deref())
            .await?;
        crate::tokens::ensure_own(&tunnel.url, &made).await?;
        // Only a sandbox with a volume is paused when idle: its files stay on it.
        if let (Some(secs), Some(program), Some(db), Some(_)) = (
            self.file.idle_pause_secs,
            &self.helper_program,
            self.store.path(),
            plan.storage_bytes,
        ) {
            crate::idle_watch::start(program, &db, name, secs);
        }
        let mut sandbox = Sandbox::through(
            tunnel,
            made.token.clone(),
            SandboxSpec::Kubernetes {
                name: name.to_string(),
            },
        )
        .await?;
        sandbox._in_use = in_use;
        Ok(sandbox)
    }
}

/// The plan a Kubernetes sandbox was made with.
pub fn pod_plan(made: &ManagedSandbox) -> Result<PodPlan, SandboxesError> {
    made.spec
        .as_deref()
        .and_then(|spec| serde_json::from_str(spec).ok())
        .ok_or_else(|| {
            SandboxesError::Failed(format!(
                "sandbox {} has no Pod plan recorded; remove it (`cove sandbox rm {}`) and make it again",
                made.name, made.name
            ))
        })
}
