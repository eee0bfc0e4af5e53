//! Forks: copies of the workspace inside this sandbox, for sub-agents that must not step on
//! each other. Each fork is a workspace of its own, materialized from a checkpoint (the
//! archive of the workspace's, imported into the fork's own store and restored), and served
//! by a daemon of its own in this process: a request with `x-cove-fork: ID` is handed to
//! it, so every route works on the copy, with its own shells and browser.
//!
//! What a fork changed comes back as its store's diff from where it began, and is merged
//! into the workspace file by file (see [`apply`]): never silently over a change made here.
//! Forks outlive the daemon (see [`kept`]).

mod apply;
pub mod http;
mod kept;
mod merge;

use std::collections::HashMap;
use std::io::{Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cove_protocol::ErrorCode;
use cove_protocol::checkpoints::{CURRENT, CheckpointDiff};
use cove_protocol::forks::{ApplyResponse, CreateFork, FORK_HEADER, ForkInfo, ForkList};
use tower::ServiceExt;

use crate::checkpoints::{CheckpointError, CheckpointSettings, Checkpoints};
use crate::error::ApiError;
use crate::random::random_hex;
use crate::timestamp::rfc3339;
use crate::{AppState, Daemon, DaemonConfig};

/// Forks kept at once.
const MAX_FORKS: usize = 16;

/// What went wrong with a fork, by what the caller does next.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// Check the id: `GET /v1/forks` lists them.
    #[error("no fork {0:?}; GET /v1/forks lists them")]
    NotFound(String),
    /// A fork cannot be forked; fork the workspace.
    #[error("forks are made of the workspace, not of a fork")]
    Nested,
    /// Delete a fork first.
    #[error("{MAX_FORKS} forks exist already; delete one first")]
    TooMany,
    /// The checkpoint part failed (a bad id, a full disk).
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The fork's folder or daemon could not be made.
    #[error("the fork could not be made: {0}")]
    Io(String),
}

impl From<ForkError> for ApiError {
    fn from(e: ForkError) -> Self {
        match e {
            ForkError::Checkpoint(e) => e.into(),
            ForkError::NotFound(_) => ApiError::new(ErrorCode::NotFound, e.to_string()),
            ForkError::Nested => ApiError::new(ErrorCode::InvalidRequest, e.to_string()),
            ForkError::TooMany => ApiError::new(ErrorCode::Busy, e.to_string()),
            ForkError::Io(_) => ApiError::internal(e.to_string()),
        }
    }
}

/// One fork: its daemon, and where it began in its own store.
struct Fork {
    info: ForkInfo,
    daemon: Daemon,
    router: Router,
    /// Its own checkpoint of where it began.
    began: String,
    /// Its folder (workspace and store).
    dir: PathBuf,
}

/// Every fork of the workspace.
pub struct Forks {
    /// Where forks live; none in a fork's own daemon.
    root: Option<PathBuf>,
    /// The settings a fork's daemon starts from.
    template: DaemonConfig,
    forks: Mutex<HashMap<String, Arc<Fork>>>,
    /// One merge at a time: each compares with the workspace as the one before left it.
    merging: tokio::sync::Mutex<()>,
    /// The lock on the kept forks, held while this daemon lives.
    _claim: Option<std::os::fd::OwnedFd>,
}

impl Forks {
    /// Forks kept beside the workspace's checkpoint store, their daemons made like this one;
    /// those an earlier daemon made there are taken up.
    pub fn new(checkpoints: &Checkpoints, template: DaemonConfig) -> Forks {
        let root = checkpoints.dir().join("forks");
        let claim = kept::claim(&root);
        let kept = match claim {
            Some(_) => kept::found(&root),
            None => {
                tracing::warn!(dir = %root.display(), "another coved holds the kept forks: none taken up");
                Vec::new()
            }
        };
        let forks = Forks {
            root: Some(root),
            template,
            forks: Mutex::default(),
            merging: tokio::sync::Mutex::new(()),
            _claim: claim,
        };
        for (dir, record) in kept {
            match forks.daemon_in(&dir) {
                Ok(daemon) => {
                    let router = daemon.router();
                    forks.map().insert(
                        record.info.id.clone(),
                        Arc::new(Fork {
                            info: record.info,
                            daemon,
                            router,
                            began: record.began,
                            dir,
                        }),
                    );
                }
                Err(e) => {
                    tracing::warn!(error = %e, dir = %dir.display(), "a kept fork could not be taken up")
                }
            }
        }
        forks
    }

    /// No forks: a fork's own daemon.
    pub fn none(template: DaemonConfig) -> Forks {
        Forks {
            root: None,
            template,
            forks: Mutex::default(),
            merging: tokio::sync::Mutex::new(()),
            _claim: None,
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Fork>>> {
        self.forks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, id: &str) -> Result<Arc<Fork>, ForkError> {
        self.map()
            .get(id)
            .cloned()
            .ok_or_else(|| ForkError::NotFound(id.to_string()))
    }

    /// Makes a fork of the workspace from checkpoint `request.checkpoint` (one taken now
    /// when none is named).
    pub async fn create(
        &self,
        workspace: &Checkpoints,
        request: CreateFork,
    ) -> Result<ForkInfo, ForkError> {
        let root = self.root.clone().ok_or(ForkError::Nested)?;
        if self.map().len() >= MAX_FORKS {
            return Err(ForkError::TooMany);
        }
        let base = match request.checkpoint {
            Some(id) => {
                workspace.check(id.clone()).await?;
                id
            }
            None => {
                workspace
                    .create(Some("a fork begins".into()), false)
                    .await?
                    .checkpoint
                    .id
            }
        };
        let id = format!("f{}", random_hex(6));
        let dir = root.join(&id);
        let made = self.make(workspace, &base, &id, &dir).await;
        let (daemon, began, files) = match made {
            Ok(made) => made,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let info = ForkInfo {
            id: id.clone(),
            base,
            created_at: rfc3339(SystemTime::now()),
            files,
        };
        let record = kept::Record {
            info: info.clone(),
            began: began.clone(),
        };
        if let Err(e) = kept::write(&dir, &record) {
            stop_daemon(&daemon).await;
            let _ = std::fs::remove_dir_all(&dir);
            return Err(ForkError::Io(e.to_string()));
        }
        let router = daemon.router();
        self.map().insert(
            id,
            Arc::new(Fork {
                info: info.clone(),
                daemon,
                router,
                began,
                dir,
            }),
        );
        Ok(info)
    }

    /// The fork's daemon over a copy of checkpoint `base`: its own checkpoint of the copy,
    /// and the copy's files.
    async fn make(
        &self,
        workspace: &Checkpoints,
        base: &str,
        id: &str,
        dir: &std::path::Path,
    ) -> Result<(Daemon, String, u64), ForkError> {
        let daemon = self.daemon_in(dir)?;
        let own = daemon.state().checkpoints.clone();
        let (source, base_id, label) = (
            workspace.clone(),
            base.to_string(),
            format!("fork {id} began"),
        );
        let copy = own.clone();
        let imported = tokio::task::spawn_blocking(move || {
            let mut spool = source.spool()?;
            source.blocking(|work, store| work.export(store, &base_id, &mut spool))?;
            spool
                .seek(SeekFrom::Start(0))
                .map_err(|e| CheckpointError::Task(e.to_string()))?;
            copy.blocking(|work, store| work.import(store, &mut spool, Some(label)))
        })
        .await
        .map_err(|e| ForkError::Io(e.to_string()))??;
        let began = imported.checkpoint.id.clone();
        own.restore(began.clone(), Vec::new()).await?;
        Ok((daemon, began, imported.checkpoint.files))
    }

    /// The daemon of the fork in folder `dir` (its workspace and its own store there).
    fn daemon_in(&self, dir: &std::path::Path) -> Result<Daemon, ForkError> {
        let mut config = self.template.clone();
        config.workspace = dir.join("workspace");
        config.checkpoints = Some(CheckpointSettings {
            dir: dir.join("checkpoints"),
            cap: None,
        });
        config.forks = false;
        Daemon::new(config).map_err(|e| ForkError::Io(e.to_string()))
    }

    /// The commands running in the forks' shell sessions, as "fork F session S runs `C`".
    pub fn running_commands(&self) -> Vec<String> {
        let forks: Vec<Arc<Fork>> = self.map().values().cloned().collect();
        let mut running = Vec::new();
        for fork in forks {
            for session in fork.daemon.state().shell.list().sessions {
                if session.running {
                    running.push(format!(
                        "fork {} session {} runs `{}`",
                        fork.info.id,
                        session.name,
                        session.command.unwrap_or_default()
                    ));
                }
            }
        }
        running
    }

    /// Every fork.
    pub fn list(&self) -> ForkList {
        let mut forks: Vec<ForkInfo> = self.map().values().map(|f| f.info.clone()).collect();
        forks.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        ForkList { forks }
    }

    /// What fork `id` changed since it began.
    pub async fn changes(&self, id: &str) -> Result<CheckpointDiff, ForkError> {
        let fork = self.get(id)?;
        let own = fork.daemon.state().checkpoints.clone();
        Ok(own.diff(fork.began.clone(), CURRENT.to_string()).await?)
    }

    /// Merges fork `id`'s changes into the workspace.
    pub async fn apply(
        &self,
        id: &str,
        workspace_root: PathBuf,
    ) -> Result<ApplyResponse, ForkError> {
        let fork = self.get(id)?;
        let _one_at_a_time = self.merging.lock().await;
        let changes = self.changes(id).await?;
        let own = fork.daemon.state().checkpoints.clone();
        let fork_root = fork.daemon.state().workspace.root_path().to_path_buf();
        let began = fork.began.clone();
        tokio::task::spawn_blocking(move || {
            apply::apply(&changes, &own, &began, &fork_root, &workspace_root)
        })
        .await
        .map_err(|e| ForkError::Io(e.to_string()))?
    }

    /// Removes fork `id`: its sessions killed, its browser closed, its folder deleted.
    pub async fn delete(&self, id: &str) -> Result<ForkInfo, ForkError> {
        let fork = self
            .map()
            .remove(id)
            .ok_or_else(|| ForkError::NotFound(id.into()))?;
        stop(&fork).await;
        let dir = fork.dir.clone();
        let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
        Ok(fork.info.clone())
    }

    /// Stops every fork's processes (the daemon is shutting down); their copies stay.
    pub async fn shutdown(&self) {
        let forks: Vec<Arc<Fork>> = self.map().drain().map(|(_, f)| f).collect();
        for fork in forks {
            stop(&fork).await;
        }
    }

    /// The fork a request is for, if it names one.
    fn router_for(&self, id: &str) -> Result<Router, ForkError> {
        Ok(self.get(id)?.router.clone())
    }
}

async fn stop(fork: &Fork) {
    stop_daemon(&fork.daemon).await;
}

async fn stop_daemon(daemon: &Daemon) {
    let state = daemon.state();
    state.shell.shutdown().await;
    state.browser.shutdown().await;
}

/// Hands a request that names a fork (`x-cove-fork`) to that fork's daemon, whose own
/// routes (and token check) answer it; others go on to this daemon's routes.
pub async fn dispatch(State(app): State<AppState>, mut request: Request, next: Next) -> Response {
    let Some(value) = request.headers_mut().remove(FORK_HEADER) else {
        return next.run(request).await;
    };
    let id = value.to_str().unwrap_or_default().to_string();
    let router = match app.forks.router_for(&id) {
        Ok(router) => router,
        Err(e) => return ApiError::from(e).into_response(),
    };
    match router.oneshot(request.map(Body::new)).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
