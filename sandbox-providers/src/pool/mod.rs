//! Warm pools (`[pools.NAME]` of `cove.toml`): sandboxes made ahead of use, so a new
//! thread's sandbox answers in milliseconds instead of the seconds a container or Pod takes
//! to make. A member is handed out whole to one sandbox name (a database transaction takes
//! it out of the pool and records the sandbox), gets the sandbox's own token as it opens,
//! and is removed with that sandbox, never handed out again. The pool refills behind it:
//! `cove sandbox pool fill NAME`, started as a process of its own, one at a time per pool
//! (a lock beside the database).

mod fill;

pub use fill::Filled;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use cove_config::{FileConfig, PoolConfig};
use cove_store::{ManagedSandbox, PoolMember, StoreError, now_ms};
use rustix::fs::FlockOperation;

use super::choice::{Sandboxes, SandboxesError};
use super::docker::{ContainerSpec, DEFAULT_IMAGE, parse_size};
use super::kubernetes::PodPlan;

/// What went wrong with a pool, by what the operator does next.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// Name a pool `cove.toml` has, or add it.
    #[error(
        "no pool {pool} in cove.toml{known}: add [pools.{pool}] with its size (docs/sandboxes.md)"
    )]
    Unknown { pool: String, known: String },
    /// Fix `[pools.NAME]`.
    #[error("[pools.{pool}] in cove.toml: {why}")]
    Invalid { pool: String, why: String },
    /// A sandbox of the pool could not be made: the reason says what to fix.
    #[error("pool {pool} cannot fill: {why}")]
    CannotFill { pool: String, why: String },
    #[error(transparent)]
    Sandboxes(#[from] SandboxesError),
}

impl From<StoreError> for PoolError {
    fn from(e: StoreError) -> Self {
        PoolError::Sandboxes(e.into())
    }
}

/// How a pool's sandboxes are made.
#[derive(Debug, Clone)]
pub enum PoolKind {
    Docker(ContainerSpec),
    Kubernetes(PodPlan),
}

/// A pool as `cove.toml` has it, read and checked.
#[derive(Debug, Clone)]
pub struct PoolPlan {
    pub name: String,
    /// Ready sandboxes it keeps.
    pub size: usize,
    pub image: String,
    /// How long a ready member waits before a fresh one replaces it.
    pub max_age: Option<Duration>,
    pub kind: PoolKind,
}

impl PoolPlan {
    /// `docker` or `kubernetes`.
    pub fn provider(&self) -> &'static str {
        match self.kind {
            PoolKind::Docker(_) => "docker",
            PoolKind::Kubernetes(_) => "kubernetes",
        }
    }

    /// The oldest a member handed out may have been made (ms since the epoch).
    fn fresh_since(&self) -> i64 {
        self.max_age.map_or(i64::MIN, |age| {
            now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX))
        })
    }
}

/// A pool's name: lower-case letters, digits and - (at most 20), so its members' names
/// suit Docker and Kubernetes alike.
fn check_pool_name(pool: &str) -> Result<(), String> {
    let valid = !pool.is_empty()
        && pool.len() <= 20
        && pool
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && pool.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !pool.ends_with('-');
    if valid {
        Ok(())
    } else {
        Err("a pool's name has lower-case letters, digits and - (at most 20, not starting or ending in -)".into())
    }
}

/// What `[sandbox_limits]` lets a sandbox Cove makes use.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FileLimits {
    pub memory_bytes: Option<i64>,
    pub cpus: Option<f64>,
    pub processes: Option<i64>,
    pub disk_bytes: Option<i64>,
}

/// The limits `[sandbox_limits]` sets, checked.
pub fn file_limits(file: &FileConfig) -> Result<FileLimits, String> {
    let limits = file.sandbox_limits.clone().unwrap_or_default();
    let memory_bytes = match limits.memory.as_deref() {
        Some(m) => Some(parse_size(m).ok_or_else(|| {
            format!("[sandbox_limits] memory {m:?} is not a size like 512m, 4g or 10Gi")
        })?),
        None => None,
    };
    if let Some(c) = limits.cpus
        && !(c > 0.0 && c <= 1024.0)
    {
        return Err(format!("[sandbox_limits] cpus = {c} is not a CPU count"));
    }
    if let Some(p) = limits.processes
        && p < 1
    {
        return Err(format!("[sandbox_limits] processes = {p}: give 1 or more"));
    }
    let disk_bytes = match limits.disk.as_deref() {
        Some(d) => Some(parse_size(d).ok_or_else(|| {
            format!("[sandbox_limits] disk {d:?} is not a size like 10g or 20Gi")
        })?),
        None => None,
    };
    Ok(FileLimits {
        memory_bytes,
        cpus: limits.cpus,
        processes: limits.processes,
        disk_bytes,
    })
}

impl Sandboxes<'_> {
    /// Pool `pool` as `cove.toml` has it.
    pub fn pool_plan(&self, pool: &str) -> Result<PoolPlan, PoolError> {
        self.pool_plan_in(self.file, pool)
    }

    /// Pool `pool` as `file` has it.
    pub(super) fn pool_plan_in(
        &self,
        file: &FileConfig,
        pool: &str,
    ) -> Result<PoolPlan, PoolError> {
        let config = file.pools.get(pool).ok_or_else(|| PoolError::Unknown {
            pool: pool.to_string(),
            known: if file.pools.is_empty() {
                String::new()
            } else {
                format!(
                    " (it has {})",
                    file.pools.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            },
        })?;
        plan_of(pool, config, file, self.store.installation_id()?)
    }

    /// Takes a ready member of `pool` for a new sandbox named `name` (one is made up when
    /// none is given) and starts the pool's refill. The sandbox's daemon is given its own
    /// token as it opens (see [`crate::tokens`]).
    pub fn take_from_pool(
        &self,
        pool: &str,
        name: Option<&str>,
    ) -> Result<ManagedSandbox, SandboxesError> {
        let plan = self
            .pool_plan(pool)
            .map_err(|e| SandboxesError::Invalid(e.to_string()))?;
        let name = name.map_or_else(|| format!("{pool}-{}", cove_store::new_id(4)), String::from);
        let taken = self
            .store
            .claim_pool_member(pool, plan.fresh_since(), |member| ManagedSandbox {
                name: name.clone(),
                provider: member.provider.clone(),
                container_id: member.container_id.clone(),
                url: member.url.clone(),
                token: cove_store::new_id(32),
                image: member.image.clone(),
                created_at: now_ms(),
                spec: member.spec.clone(),
                boot_token: Some(member.boot_token.clone()),
                made_as: Some(member.name.clone()),
            })?;
        self.refill_later(pool);
        match taken {
            Some((_, made)) => {
                self.narrate
                    .note(&format!("sandbox {name} taken from pool {pool}"));
                Ok(made)
            }
            None => Err(SandboxesError::Failed(format!(
                "pool {pool} has no ready sandbox now (it refills in the background; `cove sandbox pool ls` shows it, `cove sandbox pool fill {pool}` fills it and says why it cannot)"
            ))),
        }
    }

    /// Takes a ready member of `pool` as sandbox `name` and opens it, its daemon given the
    /// sandbox's own token; a member that no longer answers is removed and the next one
    /// taken.
    pub async fn claim(
        &self,
        pool: &str,
        name: &str,
    ) -> Result<(ManagedSandbox, crate::Sandbox), SandboxesError> {
        for _ in 0..3 {
            let made = self.take_from_pool(pool, Some(name))?;
            match self
                .open(crate::SandboxSpec::of_made(&made), None, None)
                .await
            {
                Ok(sandbox) => return Ok((made, sandbox)),
                Err(e) => {
                    self.narrate.note(&format!(
                        "a sandbox of pool {pool} did not answer ({e}); taking another"
                    ));
                    if let Err(e) = self.remove_made(&made).await {
                        tracing::warn!(error = %e, sandbox = made.name, "a pool sandbox that did not answer could not be removed; `cove sandbox gc` lists it");
                        self.store.remove_sandbox(&made.name)?;
                    }
                }
            }
        }
        Err(SandboxesError::Failed(format!(
            "the sandboxes of pool {pool} do not answer; `cove sandbox pool fill {pool}` replaces them, or says why it cannot"
        )))
    }

    /// Starts `cove sandbox pool fill POOL` as a process of its own, which waits for any
    /// fill of that pool under way, then brings it to its size.
    pub fn refill_later(&self, pool: &str) {
        let (Some(program), Some(db)) = (&self.helper_program, self.store.path()) else {
            return;
        };
        // What it says (why it cannot fill) is kept for `cove sandbox pool ls`.
        let log = refill_log(pool);
        let stderr = log
            .parent()
            .and_then(|dir| std::fs::create_dir_all(dir).ok())
            .and_then(|()| std::fs::File::create(&log).ok())
            .map_or_else(Stdio::null, Stdio::from);
        let args = ["sandbox", "pool", "fill", pool, "--quiet"];
        if let Err(e) = crate::idle_watch::spawn_helper(program, &db, &args, stderr) {
            tracing::warn!(error = %e, pool, "the pool's refill did not start");
        }
    }

    /// The members of every pool (or `pool`'s), oldest first.
    pub fn pool_members(&self, pool: Option<&str>) -> Result<Vec<PoolMember>, PoolError> {
        Ok(self.store.pool_members(pool)?)
    }
}

/// Where the last background refill of pool `pool` wrote what it said.
pub fn refill_log(pool: &str) -> PathBuf {
    cove_config::data_dir().join(format!("logs/pool-{pool}.log"))
}

/// Reads pool `pool` of `file`.
fn plan_of(
    pool: &str,
    config: &PoolConfig,
    file: &FileConfig,
    installation: String,
) -> Result<PoolPlan, PoolError> {
    let invalid = |why: String| PoolError::Invalid {
        pool: pool.to_string(),
        why,
    };
    check_pool_name(pool).map_err(invalid)?;
    if config.size > 64 {
        return Err(invalid(format!(
            "size = {}: a pool keeps at most 64 sandboxes",
            config.size
        )));
    }
    let FileLimits {
        memory_bytes,
        cpus,
        processes,
        disk_bytes,
    } = file_limits(file).map_err(invalid)?;
    let image = config.image.clone().unwrap_or_else(|| DEFAULT_IMAGE.into());
    let kind = match config.provider.as_deref() {
        None | Some("docker") => {
            if config.namespace.is_some() || config.storage.is_some() {
                return Err(invalid(
                    "namespace and storage are for provider = \"kubernetes\"".into(),
                ));
            }
            PoolKind::Docker(ContainerSpec {
                image: image.clone(),
                memory_bytes,
                cpus,
                processes,
                disk_bytes,
                installation: Some(installation),
                ..ContainerSpec::default()
            })
        }
        Some("kubernetes") => PoolKind::Kubernetes(PodPlan {
            // Filled in from the cluster's context when the pool fills.
            namespace: config.namespace.clone().unwrap_or_default(),
            image: image.clone(),
            cpu: cpus.map(super::kubernetes::cpu_quantity),
            memory_bytes,
            storage_bytes: match config.storage.as_deref() {
                Some(s) => Some(
                    parse_size(s)
                        .ok_or_else(|| invalid(format!("storage {s:?} is not a size like 10Gi")))?,
                ),
                None => None,
            },
            deadline_secs: None,
            shm_bytes: ContainerSpec::default().shm_bytes,
            installation: Some(installation),
            pod_uid: None,
            restore_from: None,
            disk_bytes,
        }),
        Some(other) => {
            return Err(invalid(format!(
                "provider = {other:?}: use \"docker\" or \"kubernetes\""
            )));
        }
    };
    Ok(PoolPlan {
        name: pool.to_string(),
        size: config.size as usize,
        image,
        max_age: config.max_age_secs.map(Duration::from_secs),
        kind,
    })
}

/// The lock a fill of pool `pool` holds, beside database `db`.
fn lock_path(db: &Path, pool: &str) -> PathBuf {
    db.with_file_name("pools").join(format!("{pool}.lock"))
}

/// Takes pool `pool`'s fill lock, waiting for a fill under way to end first.
async fn fill_lock(db: &Path, pool: &str) -> Option<OwnedFd> {
    let path = lock_path(db, pool);
    std::fs::create_dir_all(path.parent()?).ok()?;
    let file: OwnedFd = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .ok()?
        .into();
    loop {
        if rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok() {
            return Some(file);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_reads_its_limits_and_refuses_what_it_cannot_make() {
        let mut file = FileConfig {
            sandbox_limits: Some(cove_config::SandboxLimits {
                memory: Some("1g".into()),
                cpus: Some(1.5),
                processes: None,
                disk: None,
            }),
            ..FileConfig::default()
        };
        file.pools.insert(
            "py".into(),
            PoolConfig {
                size: 3,
                max_age_secs: Some(600),
                ..PoolConfig::default()
            },
        );
        let plan = plan_of("py", &file.pools["py"], &file, "inst".into()).unwrap();
        assert_eq!(plan.size, 3);
        assert_eq!(plan.max_age, Some(Duration::from_secs(600)));
        let PoolKind::Docker(spec) = &plan.kind else {
            panic!("{plan:?}")
        };
        assert_eq!(spec.memory_bytes, Some(1 << 30));
        assert_eq!(spec.cpus, Some(1.5));
        assert_eq!(spec.installation.as_deref(), Some("inst"));

        let config = file.pools["py"].clone();
        let refused = |pool: &str, config: &PoolConfig, file: &FileConfig| {
            plan_of(pool, config, file, "i".into())
                .unwrap_err()
                .to_string()
        };
        assert!(refused("Py", &config, &file).contains("lower-case"));
        let mut k = config.clone();
        k.namespace = Some("ns".into());
        assert!(refused("py", &k, &file).contains("provider = \"kubernetes\""));
        k.provider = Some("kubernetes".into());
        k.storage = Some("ten".into());
        assert!(refused("py", &k, &file).contains("not a size"));
        k.provider = Some("podman".into());
        assert!(refused("py", &k, &file).contains("\"podman\""));
        let mut big = config.clone();
        big.size = 65;
        assert!(refused("py", &big, &file).contains("at most 64"));
        file.sandbox_limits.as_mut().unwrap().cpus = Some(0.0);
        assert!(refused("py", &config, &file).contains("cpus"));
    }
}
