//! Filling and draining a pool, and removing what a made sandbox is made of.

use std::time::Duration;

use cove_config::{ConfigError, FileConfig};
use cove_store::{ManagedSandbox, PoolMember, now_ms};
use futures_util::stream::{self, StreamExt};

use super::{PoolError, PoolKind, PoolPlan, fill_lock};
use crate::choice::{Sandboxes, SandboxesError, pod_plan};
use crate::docker::{Created, Docker, DockerError};
use crate::kubernetes::{Kubernetes, PodPlan, PodState};

/// Sandboxes made at once while a pool fills.
const FILL_AT_ONCE: usize = 3;

/// What a fill did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Filled {
    pub pool: String,
    pub size: usize,
    /// Ready now.
    pub ready: usize,
    /// Made by this fill.
    pub made: usize,
    /// Removed by this fill: past their age, no longer answering, or left half-made.
    pub removed: usize,
    /// How long each sandbox made took, in milliseconds.
    pub made_ms: Vec<u64>,
}

impl Sandboxes<'_> {
    /// Brings pool `pool` to its size: removes members past their age, those that no
    /// longer answer and those a fill that died left half-made, then makes the rest (a few
    /// at once). One fill per pool at a time; a second waits for the first. The pool is
    /// read from `config_now()` once the fill's turn has come.
    pub async fn fill_pool(
        &self,
        pool: &str,
        config_now: &dyn Fn() -> Result<FileConfig, ConfigError>,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<Filled, PoolError> {
        let _lock = match self.store.path() {
            Some(db) => fill_lock(&db, pool).await,
            None => None,
        };
        // cove.toml as it is once the lock is held, not as this process read it when it
        // started: a pool drained and taken out of it while this fill waited is not filled
        // again.
        let file = config_now().map_err(|e| cannot_fill(pool, e))?;
        let mut plan = self.pool_plan_in(&file, pool)?;
        let kube = match &mut plan.kind {
            PoolKind::Kubernetes(pod) => {
                let kube = Kubernetes::from_env(self.in_cluster)
                    .await
                    .map_err(|e| cannot_fill(pool, e))?;
                if pod.namespace.is_empty() {
                    pod.namespace = kube.default_namespace.clone();
                }
                Some(kube)
            }
            PoolKind::Docker(_) => None,
        };
        let docker = match plan.kind {
            PoolKind::Docker(_) => Some(Docker::from_env().map_err(|e| cannot_fill(pool, e))?),
            PoolKind::Kubernetes(_) => None,
        };
        let engine = Engine {
            docker: docker.as_ref(),
            kube: kube.as_ref(),
        };
        let mut filled = Filled {
            pool: pool.to_string(),
            size: plan.size,
            ..Filled::default()
        };
        let fresh_since = plan.fresh_since();
        for member in self.store.pool_members(Some(pool))? {
            let why = if !member.ready {
                Some("left half-made")
            } else if member.created_at < fresh_since {
                Some("past its age")
            } else if !engine.answers(&member).await {
                Some("no longer answering")
            } else {
                None
            };
            match why {
                Some(why) => {
                    progress(&format!("removing {} ({why})", member.name));
                    self.remove_member(&engine, &member).await?;
                    filled.removed += 1;
                }
                None => filled.ready += 1,
            }
        }
        let missing = plan.size.saturating_sub(filled.ready);
        if missing > 0 {
            progress(&format!(
                "making {missing} sandbox{} for pool {pool} from {}",
                if missing == 1 { "" } else { "es" },
                plan.image
            ));
        }
        let results: Vec<Result<u64, String>> = stream::iter(0..missing)
            .map(|_| self.make_member(&engine, &plan))
            .buffer_unordered(FILL_AT_ONCE)
            .collect()
            .await;
        let mut failures = Vec::new();
        for result in results {
            match result {
                Ok(ms) => {
                    filled.made += 1;
                    filled.ready += 1;
                    filled.made_ms.push(ms);
                }
                Err(why) => failures.push(why),
            }
        }
        match failures.first() {
            Some(why) => Err(PoolError::CannotFill {
                pool: pool.to_string(),
                why: format!("{why} ({} of {} ready)", filled.ready, filled.size),
            }),
            None => Ok(filled),
        }
    }

    /// Makes one member of `plan`'s pool and records it ready; what a failure left is
    /// removed, and the reason returned.
    async fn make_member(&self, engine: &Engine<'_>, plan: &PoolPlan) -> Result<u64, String> {
        let begun = std::time::Instant::now();
        let member = PoolMember {
            name: format!("pool-{}-{}", plan.name, cove_store::new_id(4)),
            pool: plan.name.clone(),
            provider: plan.provider().into(),
            container_id: String::new(),
            url: None,
            boot_token: cove_store::new_id(32),
            image: plan.image.clone(),
            spec: match &plan.kind {
                PoolKind::Kubernetes(pod) => serde_json::to_string(pod).ok(),
                PoolKind::Docker(_) => None,
            },
            ready: false,
            created_at: now_ms(),
        };
        self.store
            .add_pool_member(&member)
            .map_err(|e| e.to_string())?;
        let made = match (&plan.kind, engine.docker, engine.kube) {
            (PoolKind::Docker(spec), Some(docker), _) => docker
                .create(&member.name, &member.boot_token, spec)
                .await
                .map(|Created { info, .. }| (info.id, info.url))
                .map_err(|e| e.to_string()),
            (PoolKind::Kubernetes(pod), _, Some(kube)) => kube
                .create(&member.name, &member.boot_token, pod)
                .await
                .map(|_| {
                    (
                        format!(
                            "{}/{}",
                            pod.namespace,
                            crate::kubernetes::pod_name(&member.name)
                        ),
                        None,
                    )
                })
                .map_err(|e| e.to_string()),
            _ => Err("no engine for this pool".to_string()),
        };
        // Its coved must be able to take a token of its own when it is taken: what failed,
        // with the container made (to remove).
        let made: Result<(String, Option<String>), (String, String)> = match made {
            Ok((id, Some(url))) => {
                let boot = &member.boot_token;
                match crate::tokens::hand_over(&url, &member.name, boot, boot).await {
                    Ok(()) => Ok((id, Some(url))),
                    Err(e) => Err((e.to_string(), id)),
                }
            }
            Ok((id, None)) => Ok((id, None)),
            Err(why) => Err((why, String::new())),
        };
        let recorded = match &made {
            Ok((id, url)) => self
                .store
                .set_pool_member_ready(&member.name, id, url.as_deref(), None)
                .map_err(|e| e.to_string()),
            Err((why, _)) => Err(why.clone()),
        };
        match recorded {
            Ok(()) => Ok(u64::try_from(begun.elapsed().as_millis()).unwrap_or(u64::MAX)),
            Err(why) => {
                let mut member = member;
                match made {
                    Ok((id, _)) | Err((_, id)) => member.container_id = id,
                }
                if let Err(e) = self.remove_member(engine, &member).await {
                    tracing::warn!(error = %e, member = member.name, "a half-made pool sandbox could not be removed; `cove sandbox gc` lists it");
                }
                Err(why)
            }
        }
    }

    /// Removes every member of pool `pool`; how many there were.
    pub async fn drain_pool(&self, pool: &str) -> Result<usize, PoolError> {
        let _lock = match self.store.path() {
            Some(db) => fill_lock(&db, pool).await,
            None => None,
        };
        let members = self.store.pool_members(Some(pool))?;
        let docker = match members.iter().any(|m| m.provider == "docker") {
            true => Some(Docker::from_env().map_err(SandboxesError::from)?),
            false => None,
        };
        let kube = match members.iter().any(|m| m.provider == "kubernetes") {
            true => Some(
                Kubernetes::from_env(self.in_cluster)
                    .await
                    .map_err(SandboxesError::from)?,
            ),
            false => None,
        };
        let engine = Engine {
            docker: docker.as_ref(),
            kube: kube.as_ref(),
        };
        for member in &members {
            self.remove_member(&engine, member).await?;
        }
        Ok(members.len())
    }

    /// Forgets member `member` and removes its container and network, or Pod, unless it
    /// was taken meanwhile (then it is a sandbox's, and stays).
    async fn remove_member(
        &self,
        engine: &Engine<'_>,
        member: &PoolMember,
    ) -> Result<(), SandboxesError> {
        // Out of the pool first, in one statement a take cannot interleave with.
        if !self.store.remove_pool_member(&member.name)? {
            return Ok(());
        }
        match (member.provider.as_str(), engine.docker, engine.kube) {
            ("kubernetes", _, Some(kube)) => {
                let plan: Option<PodPlan> = member
                    .spec
                    .as_deref()
                    .and_then(|s| serde_json::from_str(s).ok());
                if let Some(plan) = plan {
                    kube.remove(&member.name, &plan.namespace).await?;
                }
            }
            (_, Some(docker), _) => {
                remove_container(docker, &member.container_id, &member.name).await?
            }
            _ => {}
        }
        Ok(())
    }

    /// Removes sandbox `made` (its container and network, or its Pod and what it owns) and
    /// forgets it.
    pub async fn remove_made(&self, made: &ManagedSandbox) -> Result<(), SandboxesError> {
        if made.provider == "kubernetes" {
            let plan = pod_plan(made)?;
            Kubernetes::from_env(self.in_cluster)
                .await?
                .remove(made.resource_name(), &plan.namespace)
                .await?;
        } else {
            let docker = Docker::from_env()?;
            remove_container(&docker, &made.container_id, made.resource_name()).await?;
        }
        self.store.remove_sandbox(&made.name)?;
        Ok(())
    }
}

/// Removes a sandbox container (gone already is fine) and its network.
async fn remove_container(docker: &Docker, id: &str, name: &str) -> Result<(), DockerError> {
    if !id.is_empty() {
        match docker.remove(id).await {
            Ok(()) | Err(DockerError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    } else {
        // Half-made: no id was recorded; it may have a container of its name.
        match docker.remove(&crate::docker::container_name(name)).await {
            Ok(()) | Err(DockerError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    }
    docker.remove_network(name).await
}

fn cannot_fill(pool: &str, e: impl std::fmt::Display) -> PoolError {
    PoolError::CannotFill {
        pool: pool.to_string(),
        why: e.to_string(),
    }
}

/// The engines a pool's members live in.
struct Engine<'a> {
    docker: Option<&'a Docker>,
    kube: Option<&'a Kubernetes>,
}

impl Engine<'_> {
    /// Whether a ready member still answers: its coved's `/health` (Docker), its Pod ready
    /// (Kubernetes).
    async fn answers(&self, member: &PoolMember) -> bool {
        match (member.provider.as_str(), self.kube) {
            ("kubernetes", Some(kube)) => {
                let namespace = member.container_id.split_once('/').map_or("", |(ns, _)| ns);
                matches!(
                    kube.state(&member.name, namespace).await,
                    Ok(PodState::Ready { .. })
                )
            }
            _ => match &member.url {
                Some(url) => healthy(url).await,
                None => false,
            },
        }
    }
}

/// Whether coved at `url` answers `/health` within two seconds.
async fn healthy(url: &str) -> bool {
    let Ok(client) = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .no_proxy()
        .build()
    else {
        return false;
    };
    client
        .get(format!("{}/health", url.trim_end_matches('/')))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}
