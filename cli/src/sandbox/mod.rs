//! `cove sandbox up|status|ls|create|start|stop|rm|gc`: local sandboxes for other tools,
//! and sandboxes Cove makes: Docker containers and Kubernetes Pods.

mod connect;
mod gc;
mod list;
mod pause;
mod pool;
mod snapshot;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use crate::sandbox_choice::{self, SandboxArgs, coved_log};
use crate::{CliError, Invocation};
use cove_core::store::{ManagedSandbox, now_ms};
use cove_sandbox::choice::pod_plan;
use cove_sandbox::docker::{ContainerSpec, Created, Docker, parse_size};
use cove_sandbox::kubernetes::{Kubernetes, PodPlan, pod_name};
use cove_sandbox::{LocalDaemon, SandboxSpec};

#[derive(Debug, Subcommand)]
pub(super) enum SandboxCommand {
    /// Start a local sandbox and print its URL and token; runs until interrupted.
    Up {
        /// Workspace folder (default: the current folder).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
    },
    /// Check the configured sandbox.
    Status {
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
    /// Open a sandbox and print its URL and token for another program (the Harbor
    /// environment); a Kubernetes sandbox's port-forward stays open until standard input
    /// closes or Ctrl-C.
    Connect {
        /// The sandbox's name.
        name: String,
    },
    /// List the sandboxes named in cove.toml and those Cove made, with health and version.
    Ls,
    /// Make a sandbox and start it: a Docker container (the Engine API at DOCKER_HOST), or
    /// with --kubernetes a Pod (credentials as kubectl finds them).
    Create {
        /// The sandbox's name, for --sandbox NAME.
        name: String,
        /// Take a ready sandbox from this warm pool (`[pools.NAME]` in cove.toml) instead
        /// of making one; the pool refills in the background.
        #[arg(long, conflicts_with_all = ["image", "from", "memory", "cpus", "disk", "kubernetes", "engine_capabilities"])]
        pool: Option<String>,
        /// The sandbox image (build it from sandbox-image/).
        #[arg(long, default_value = cove_sandbox::docker::DEFAULT_IMAGE)]
        image: String,
        /// Make it from a snapshot (`cove sandbox snapshots` lists them): a Docker one's
        /// whole filesystem, or a Kubernetes one's workspace volume (`k8s:NAMESPACE/NAME`;
        /// its Pod is made in that namespace).
        #[arg(long, conflicts_with_all = ["image", "namespace"])]
        from: Option<String>,
        /// Memory limit (512m, 4g, 4Gi).
        #[arg(long)]
        memory: Option<String>,
        /// CPU limit in cores (2, 0.5).
        #[arg(long, visible_alias = "cpu")]
        cpus: Option<f64>,
        /// Disk limit of its own filesystem (10g): Docker, where the engine's storage can
        /// limit it; a Kubernetes Pod's ephemeral storage.
        #[arg(long)]
        disk: Option<String>,
        /// Make a Pod in Kubernetes instead of a Docker container.
        #[arg(long)]
        kubernetes: bool,
        /// Kubernetes: the namespace (default: the kubeconfig context's).
        #[arg(long, requires = "kubernetes")]
        namespace: Option<String>,
        /// Kubernetes: a volume of this size (10Gi) holds the workspace; it outlives the Pod
        /// (stop, eviction). Without one the workspace goes with the Pod.
        #[arg(long, requires = "kubernetes")]
        storage: Option<String>,
        /// Kubernetes: the Pod ends this many seconds after it starts (activeDeadlineSeconds).
        #[arg(long, requires = "kubernetes")]
        deadline_secs: Option<i64>,
        /// Docker: keep the engine's default capabilities instead of dropping them all
        /// (root in the sandbox may change owners, switch users, install packages), for
        /// tasks that expect a plain container. The agent's commands hold them too.
        #[arg(long, conflicts_with_all = ["kubernetes", "from"])]
        engine_capabilities: bool,
    },
    /// Start a stopped sandbox (a Kubernetes one's Pod is made again).
    Start { name: String },
    /// Stop a sandbox: a Docker one keeps its files in the container; a Kubernetes one's
    /// Pod goes, and its files with it unless it has a volume.
    Stop { name: String },
    /// Pause a sandbox: a Docker one's processes (shells, browser, servers) wait in memory
    /// and take no CPU; a Kubernetes one keeps its volume's files, not its processes. Its
    /// next use resumes it.
    Pause { name: String },
    /// Resume a paused sandbox: its processes go on from where they were.
    Resume { name: String },
    /// Take a snapshot of a Docker sandbox: its whole filesystem (what was installed
    /// outside the workspace included), as an image new sandboxes can be made from.
    Snapshot {
        name: String,
        /// The snapshot's tag (default: `t` and the time).
        #[arg(long)]
        tag: Option<String>,
        /// Take it even while a command runs in one of its shells.
        #[arg(long)]
        force: bool,
    },
    /// List snapshots.
    Snapshots,
    /// Remove a snapshot (refused while a sandbox is made from it).
    RmSnapshot { snapshot: String },
    /// Make a new Docker sandbox from a snapshot of NAME taken now: a copy that goes on
    /// apart.
    Fork {
        name: String,
        new: String,
        /// Take the snapshot even while a command runs in one of its shells.
        #[arg(long)]
        force: bool,
    },
    /// Pause a Docker sandbox once it has been idle this long (Cove starts it as the
    /// sandbox opens when `idle_pause_secs` is set).
    #[command(hide = true)]
    IdleWatch {
        name: String,
        #[arg(long)]
        after: u64,
    },
    /// Remove a sandbox and what it is made of.
    Rm { name: String },
    /// Warm pools (`[pools.NAME]` in cove.toml): sandboxes made ahead of use.
    #[command(subcommand)]
    Pool(pool::PoolCommand),
    /// List what Cove made for sandboxes it no longer knows (left by a failed create, a
    /// removed database): Docker containers, networks and snapshots of sandboxes gone that
    /// no container is made from; Kubernetes Pods, Secrets and volumes. Only this
    /// installation's. Removes them with --yes.
    Gc {
        /// Namespaces to look in (default: those of Cove's Kubernetes sandboxes and the
        /// kubeconfig context's).
        #[arg(long)]
        namespace: Vec<String>,
        /// Remove what is listed (without it, nothing is removed).
        #[arg(long)]
        yes: bool,
        /// Also list Docker sandboxes Cove made that no thread uses and that have been
        /// stopped this long (`7d`, `12h`, `0s` for any stopped).
        #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
        stopped_for: std::time::Duration,
        /// Leave what was made this recently (a sandbox being made now is recorded only
        /// once it answers).
        #[arg(long, default_value = "15m", value_parser = humantime::parse_duration)]
        min_age: std::time::Duration,
    },
}

/// Runs a `cove sandbox` command.
pub(super) async fn command(inv: &Invocation, cmd: SandboxCommand) -> Result<ExitCode, CliError> {
    match cmd {
        SandboxCommand::Up { workspace, listen } => up(inv, workspace, &listen).await,
        SandboxCommand::Status { sandbox } => status(inv, &sandbox).await,
        SandboxCommand::Connect { name } => connect::connect(inv, &name).await,
        SandboxCommand::Ls => list::ls(inv).await,
        SandboxCommand::Create {
            name,
            pool: Some(pool),
            ..
        } => pool::create(inv, &name, &pool).await,
        SandboxCommand::Create {
            name,
            pool: None,
            image,
            from,
            memory,
            cpus,
            disk,
            kubernetes,
            namespace,
            storage,
            deadline_secs,
            engine_capabilities,
        } => {
            let mut sizes = Sizes::read(inv, memory.as_deref(), cpus, storage.as_deref())?;
            if let Some(disk) = disk {
                sizes.disk_bytes = Some(parse_size(&disk).ok_or_else(|| {
                    CliError::Usage(format!("--disk {disk:?} is not a size like 10g or 20Gi"))
                })?);
            }
            let from_volume = match &from {
                Some(reference) => {
                    snapshot::plan_from(inv, reference, None, sizes.storage_bytes).await?
                }
                None => None,
            };
            if from.is_some() && kubernetes && from_volume.is_none() {
                return Err(CliError::Usage(
                    "a Docker snapshot makes Docker sandboxes: leave out --kubernetes, or give a Kubernetes snapshot (k8s:NAMESPACE/NAME)".into(),
                ));
            }
            inv.sandboxes()
                .check_name(&name, kubernetes || from_volume.is_some())?;
            if let Some(mut plan) = from_volume {
                plan.cpu = sizes.cpus.map(cove_sandbox::kubernetes::cpu_quantity);
                plan.memory_bytes = sizes.memory_bytes;
                plan.deadline_secs = deadline_secs;
                plan.disk_bytes = sizes.disk_bytes;
                return create_pod_with(inv, &name, plan).await;
            }
            if kubernetes {
                create_pod(inv, &name, image, sizes, namespace, deadline_secs).await
            } else {
                let image = match from {
                    Some(snapshot) => snapshot::image_of(&snapshot).await?,
                    None => image,
                };
                create(inv, &name, image, sizes, engine_capabilities).await
            }
        }
        SandboxCommand::Start { name } => start(inv, &name).await,
        SandboxCommand::Stop { name } => stop(inv, &name).await,
        SandboxCommand::Pause { name } => pause::pause(inv, &name).await,
        SandboxCommand::Resume { name } => pause::resume(inv, &name).await,
        SandboxCommand::Snapshot { name, tag, force } => {
            snapshot::snapshot(inv, &name, tag, force).await
        }
        SandboxCommand::Snapshots => snapshot::list(inv).await,
        SandboxCommand::RmSnapshot { snapshot } => snapshot::remove(inv, &snapshot).await,
        SandboxCommand::Fork { name, new, force } => {
            let source = managed(inv, &name)?;
            if source.provider == "kubernetes" {
                inv.sandboxes().check_name(&new, true)?;
                return snapshot::fork_pod(inv, &source, &new, force).await;
            }
            inv.sandboxes().check_name(&new, false)?;
            let snapshot = snapshot::take(inv, &name, None, force).await?;
            let sizes = Sizes::read(inv, None, None, None)?;
            create(inv, &new, snapshot, sizes, false).await
        }
        SandboxCommand::IdleWatch { name, after } => pause::idle_watch(inv, &name, after).await,
        SandboxCommand::Rm { name } => remove(inv, &name).await,
        SandboxCommand::Pool(cmd) => pool::command(inv, cmd).await,
        SandboxCommand::Gc {
            namespace,
            yes,
            stopped_for,
            min_age,
        } => {
            let ages = gc::Ages {
                stopped_for,
                min_age,
            };
            gc::gc(inv, namespace, ages, !yes).await
        }
    }
}

/// `cove sandbox up`: a local coved for other tools, until Ctrl-C.
async fn up(
    inv: &Invocation,
    workspace: Option<PathBuf>,
    listen: &str,
) -> Result<ExitCode, CliError> {
    let workspace = workspace.unwrap_or_else(|| PathBuf::from("."));
    let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
    std::fs::create_dir_all(&workspace).map_err(|e| {
        CliError::Usage(format!(
            "cannot make the workspace {}: {e}",
            workspace.display()
        ))
    })?;
    let isolation = cove_sandbox::Isolation::Walled(inv.local.clone());
    let mut daemon = LocalDaemon::start(&workspace, &isolation, listen, Some(&coved_log())).await?;
    inv.printer.result(
        &json!({"url": daemon.url, "token": daemon.token, "workspace": workspace}),
        |_| {
            format!(
                "sandbox: {url}\ntoken: {token}\nworkspace: {}\nUse it with: COVE_SANDBOX_URL={url} COVE_SANDBOX_TOKEN={token} cove run \"...\"\nPress Ctrl-C to stop it.",
                workspace.display(),
                url = daemon.url,
                token = daemon.token,
            )
        },
    );
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = daemon.wait() => {
            return Err(CliError::Failed(format!(
                "the sandbox stopped; see {}",
                coved_log().display()
            )));
        }
    }
    daemon.stop().await;
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox status`: what the configured sandbox runs.
async fn status(inv: &Invocation, args: &SandboxArgs) -> Result<ExitCode, CliError> {
    sandbox_choice::refuse_pool(inv, args)?;
    let (spec, token) = sandbox_choice::choose(inv, args, || PathBuf::from("."))?;
    match spec {
        SandboxSpec::Local { .. } | SandboxSpec::Host { .. } => {
            let coved = cove_sandbox::find_coved()?;
            inv.printer
                .result(&json!({"kind": "local", "coved": coved}), |_| {
                    format!("local sandboxes start per command with {}", coved.display())
                });
        }
        remote => {
            let sandbox = sandbox_choice::open(inv, remote, token, None).await?;
            let info = sandbox.client.info().await;
            let url = sandbox.client.base_url().to_string();
            sandbox.close().await;
            let info = info?;
            inv.printer.result(&json!({"url": url, "info": info}), |_| {
                format!(
                    "{url}: coved {} (API {}), workspace {}, serves {}",
                    info.version,
                    info.api_version,
                    info.workspace,
                    info.capabilities.join(", ")
                )
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn managed(inv: &Invocation, name: &str) -> Result<ManagedSandbox, CliError> {
    inv.store.sandbox(name)?.ok_or_else(|| {
        CliError::NotFound(format!(
            "no sandbox {name} made by Cove; `cove sandbox ls` lists them"
        ))
    })
}

/// The sizes a new sandbox asks for.
struct Sizes {
    memory_bytes: Option<i64>,
    cpus: Option<f64>,
    storage_bytes: Option<i64>,
    processes: Option<i64>,
    disk_bytes: Option<i64>,
}

impl Sizes {
    /// The sizes the flags ask for, else `[sandbox_limits]`'s.
    fn read(
        inv: &Invocation,
        memory: Option<&str>,
        cpus: Option<f64>,
        storage: Option<&str>,
    ) -> Result<Sizes, CliError> {
        let file = cove_sandbox::pool::file_limits(&inv.file).map_err(CliError::Usage)?;
        let size = |flag: &str, value: &str| {
            parse_size(value).ok_or_else(|| {
                CliError::Usage(format!(
                    "{flag} {value:?} is not a size like 512m, 4g or 10Gi"
                ))
            })
        };
        let memory_bytes = match memory {
            Some(m) => Some(size("--memory", m)?),
            None => file.memory_bytes,
        };
        let cpus = cpus.or(file.cpus);
        if let Some(c) = cpus
            && !(c > 0.0 && c <= 1024.0)
        {
            return Err(CliError::Usage(format!("--cpus {c} is not a CPU count")));
        }
        Ok(Sizes {
            memory_bytes,
            cpus,
            storage_bytes: storage.map(|s| size("--storage", s)).transpose()?,
            processes: file.processes,
            disk_bytes: file.disk_bytes,
        })
    }
}

/// `cove sandbox create NAME`
async fn create(
    inv: &Invocation,
    name: &str,
    image: String,
    sizes: Sizes,
    engine_capabilities: bool,
) -> Result<ExitCode, CliError> {
    let docker = Docker::from_env()?;
    docker.ping().await?;
    let token = cove_core::store::new_id(32);
    // What the container's environment holds; its daemon is given `token` below.
    let boot_token = cove_core::store::new_id(32);
    let spec = ContainerSpec {
        image: image.clone(),
        memory_bytes: sizes.memory_bytes,
        cpus: sizes.cpus,
        processes: sizes.processes,
        disk_bytes: sizes.disk_bytes,
        installation: Some(inv.store.installation_id()?),
        engine_capabilities,
        ..ContainerSpec::default()
    };
    inv.printer
        .note(&format!("creating sandbox {name} from {image}"));
    let Created { info, phases } = docker.create(name, &boot_token, &spec).await?;
    let made = ManagedSandbox {
        name: name.to_string(),
        provider: "docker".into(),
        container_id: info.id.clone(),
        url: info.url.clone(),
        token,
        image,
        created_at: now_ms(),
        spec: None,
        boot_token: Some(boot_token),
        made_as: None,
    };
    inv.store.add_sandbox(&made)?;
    if let Some(url) = &info.url {
        cove_sandbox::tokens::ensure_own(url, &made).await?;
    }
    let url = info.url.unwrap_or_default();
    inv.printer.result(
        &json!({"name": name, "container_id": info.id, "url": url, "phases": phases}),
        |_| {
            format!(
                "sandbox {name} runs at {url} (network {} ms, container {} ms, start {} ms, coved healthy {} ms); use it with: cove run --sandbox {name} \"...\"",
                phases.network_ms, phases.create_ms, phases.start_ms, phases.healthy_ms
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox create NAME --kubernetes`
async fn create_pod(
    inv: &Invocation,
    name: &str,
    image: String,
    sizes: Sizes,
    namespace: Option<String>,
    deadline_secs: Option<i64>,
) -> Result<ExitCode, CliError> {
    let kube = Kubernetes::from_env(inv.in_cluster).await?;
    let plan = PodPlan {
        namespace: namespace.unwrap_or_else(|| kube.default_namespace.clone()),
        image,
        cpu: sizes.cpus.map(cove_sandbox::kubernetes::cpu_quantity),
        memory_bytes: sizes.memory_bytes,
        storage_bytes: sizes.storage_bytes,
        deadline_secs,
        shm_bytes: ContainerSpec::default().shm_bytes,
        installation: None,
        pod_uid: None,
        restore_from: None,
        disk_bytes: sizes.disk_bytes,
    };
    create_pod_with(inv, name, plan).await
}

/// Makes Kubernetes sandbox `name` as `plan` says.
async fn create_pod_with(
    inv: &Invocation,
    name: &str,
    plan: PodPlan,
) -> Result<ExitCode, CliError> {
    if plan.deadline_secs.is_some_and(|d| d < 1) {
        return Err(CliError::Usage("--deadline-secs must be 1 or more".into()));
    }
    let kube = Kubernetes::from_env(inv.in_cluster).await?;
    inv.sandboxes()
        .make_pod_sandbox(&kube, name, plan.clone())
        .await?;
    // Made with its boot token: opened once, to give its coved its own.
    let opened = inv
        .sandboxes()
        .open(
            SandboxSpec::Kubernetes {
                name: name.to_string(),
            },
            None,
            None,
        )
        .await?;
    opened.close().await;
    inv.printer.result(
        &json!({"name": name, "namespace": plan.namespace, "pod": pod_name(name), "from": plan.restore_from}),
        |_| {
            format!(
                "sandbox {name} runs in Pod {} (namespace {}); use it with: cove run --sandbox {name} \"...\"",
                pod_name(name),
                plan.namespace
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox start NAME`
pub(super) async fn start(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let sandbox = managed(inv, name)?;
    if sandbox.provider == "kubernetes" {
        let plan = pod_plan(&sandbox)?;
        let kube = Kubernetes::from_env(inv.in_cluster).await?;
        let started = kube
            .ensure_running(sandbox.resource_name(), sandbox.start_token(), &plan)
            .await?;
        inv.sandboxes()
            .keep_pod_uid(name, plan.clone(), started.uid.clone())?;
        // Started with its boot token: given its own at once.
        let tunnel = kube
            .connect(
                sandbox.resource_name(),
                &plan.namespace,
                started.ip.as_deref(),
            )
            .await?;
        cove_sandbox::tokens::ensure_own(&tunnel.url, &sandbox).await?;
        drop(tunnel);
        inv.printer.result(
            &json!({"name": name, "running": true, "remade": started.remade, "lost_workspace": started.lost_workspace}),
            |_| {
                if started.lost_workspace {
                    format!("sandbox {name} runs again, with an empty workspace (it has no volume)")
                } else {
                    format!("sandbox {name} runs in Pod {}", pod_name(sandbox.resource_name()))
                }
            },
        );
        return Ok(ExitCode::SUCCESS);
    }
    let docker = Docker::from_env()?;
    let found = docker.inspect(&sandbox.container_id).await?;
    let info = if found.paused {
        docker.resume(&sandbox.container_id).await?;
        found
    } else {
        docker.start(&sandbox.container_id).await?
    };
    // Started with its boot token: given its own at once.
    if let Some(url) = &info.url {
        cove_sandbox::tokens::ensure_own(url, &sandbox).await?;
    }
    inv.store.set_sandbox_url(name, info.url.as_deref())?;
    let url = info.url.unwrap_or_default();
    inv.printer
        .result(&json!({"name": name, "running": true, "url": url}), |_| {
            format!("sandbox {name} runs at {url}")
        });
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox stop NAME`
async fn stop(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let sandbox = managed(inv, name)?;
    if sandbox.provider == "kubernetes" {
        let plan = pod_plan(&sandbox)?;
        Kubernetes::from_env(inv.in_cluster)
            .await?
            .stop(sandbox.resource_name(), &plan.namespace)
            .await?;
        inv.printer
            .result(&json!({"name": name, "running": false}), |_| {
                let kept = if plan.storage_bytes.is_some() {
                    "its workspace stays on its volume"
                } else {
                    "its workspace went with it (no volume)"
                };
                format!(
                    "sandbox {name} stopped: its Pod is gone and {kept}; `cove sandbox start {name}` (or a run on it) makes it again"
                )
            });
        return Ok(ExitCode::SUCCESS);
    }
    let docker = Docker::from_env()?;
    if docker.inspect(&sandbox.container_id).await?.paused {
        // Frozen, it could not hear the signal to end.
        docker.resume(&sandbox.container_id).await?;
    }
    docker.stop(&sandbox.container_id, 10).await?;
    inv.store.set_sandbox_url(name, None)?;
    inv.printer
        .result(&json!({"name": name, "running": false}), |_| {
            format!(
                "sandbox {name} stopped; `cove sandbox start {name}` (or a run on it) starts it again"
            )
        });
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox rm NAME`
async fn remove(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let sandbox = managed(inv, name)?;
    inv.sandboxes().remove_made(&sandbox).await?;
    inv.printer
        .result(&json!({"name": name, "removed": true}), |_| {
            format!("sandbox {name} removed")
        });
    Ok(ExitCode::SUCCESS)
}
