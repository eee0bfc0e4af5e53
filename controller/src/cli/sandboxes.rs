//! `cove sandbox ls|create|start|stop|rm`, and opening whichever sandbox a thread names:
//! a Docker sandbox is started if it is stopped, then reached at its current URL.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use cove_protocol::client::CovedClient;
use serde_json::json;

use super::{Context, Failure, fail};
use crate::sandbox::docker::{ContainerSpec, Docker, parse_size};
use crate::sandbox::{Sandbox, SandboxSpec};
use crate::store::{ManagedSandbox, now_ms};

/// Opens `spec`'s sandbox; a Docker one is started first when it is not running.
pub(super) async fn open(
    ctx: &Context,
    spec: SandboxSpec,
    token: Option<String>,
    log: Option<&Path>,
) -> Result<Sandbox, Failure> {
    let SandboxSpec::Docker { name } = &spec else {
        return Sandbox::open(spec, token, log).await.map_err(fail);
    };
    let managed = ctx.store.sandbox(name).map_err(fail)?.ok_or_else(|| {
        Failure(format!(
            "no sandbox {name}: it was removed; `cove sandbox ls` lists what there is"
        ))
    })?;
    let docker = Docker::from_env().map_err(fail)?;
    let mut info = docker.inspect(&managed.container_id).await.map_err(fail)?;
    if !info.running {
        if !ctx.json {
            eprintln!("cove: starting sandbox {name}");
        }
        info = docker.start(&managed.container_id).await.map_err(fail)?;
    }
    let url = info
        .url
        .ok_or_else(|| Failure(format!("sandbox {name} publishes no port")))?;
    ctx.store.set_sandbox_url(name, Some(&url)).map_err(fail)?;
    let mut sandbox = Sandbox::open(SandboxSpec::Remote { url }, Some(managed.token), log)
        .await
        .map_err(fail)?;
    // Threads remember the name, not the URL of this start.
    sandbox.spec = spec;
    Ok(sandbox)
}

fn managed(ctx: &Context, name: &str) -> Result<ManagedSandbox, Failure> {
    ctx.store.sandbox(name).map_err(fail)?.ok_or_else(|| {
        Failure(format!(
            "no Docker sandbox {name}; `cove sandbox ls` lists them"
        ))
    })
}

/// `cove sandbox create NAME`
pub(super) async fn create(
    ctx: &Context,
    name: &str,
    image: String,
    memory: Option<&str>,
    cpus: Option<f64>,
) -> Result<ExitCode, Failure> {
    let valid = !name.is_empty()
        && name.len() <= 60
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if !valid {
        return Err(Failure(format!(
            "{name:?} is not a sandbox name: use letters, digits, - and _ (at most 60)"
        )));
    }
    if ctx.file.sandboxes.contains_key(name) || ctx.store.sandbox(name).map_err(fail)?.is_some() {
        return Err(Failure(format!("a sandbox named {name} exists already")));
    }
    let memory_bytes = memory
        .map(|m| {
            parse_size(m)
                .ok_or_else(|| Failure(format!("--memory {m:?} is not a size like 512m or 4g")))
        })
        .transpose()?;
    if let Some(c) = cpus
        && !(c > 0.0 && c <= 1024.0)
    {
        return Err(Failure(format!("--cpus {c} is not a CPU count")));
    }
    let docker = Docker::from_env().map_err(fail)?;
    docker.ping().await.map_err(fail)?;
    let token = crate::store::new_id(32);
    let spec = ContainerSpec {
        image: image.clone(),
        memory_bytes,
        cpus,
        ..ContainerSpec::default()
    };
    if !ctx.json {
        eprintln!("cove: creating sandbox {name} from {image}");
    }
    let info = docker.create(name, &token, &spec).await.map_err(fail)?;
    ctx.store
        .add_sandbox(&ManagedSandbox {
            name: name.to_string(),
            provider: "docker".into(),
            container_id: info.id.clone(),
            url: info.url.clone(),
            token,
            image,
            created_at: now_ms(),
        })
        .map_err(fail)?;
    let url = info.url.unwrap_or_default();
    if ctx.json {
        println!(
            "{}",
            json!({"name": name, "container_id": info.id, "url": url})
        );
    } else {
        println!("sandbox {name} runs at {url}; use it with: cove run --sandbox {name} \"...\"");
    }
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox start NAME`
pub(super) async fn start(ctx: &Context, name: &str) -> Result<ExitCode, Failure> {
    let sandbox = managed(ctx, name)?;
    let docker = Docker::from_env().map_err(fail)?;
    let info = docker.start(&sandbox.container_id).await.map_err(fail)?;
    ctx.store
        .set_sandbox_url(name, info.url.as_deref())
        .map_err(fail)?;
    if !ctx.json {
        println!("sandbox {name} runs at {}", info.url.unwrap_or_default());
    }
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox stop NAME`
pub(super) async fn stop(ctx: &Context, name: &str) -> Result<ExitCode, Failure> {
    let sandbox = managed(ctx, name)?;
    let docker = Docker::from_env().map_err(fail)?;
    docker.stop(&sandbox.container_id, 10).await.map_err(fail)?;
    ctx.store.set_sandbox_url(name, None).map_err(fail)?;
    if !ctx.json {
        println!(
            "sandbox {name} stopped; `cove sandbox start {name}` (or a run on it) starts it again"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox rm NAME`
pub(super) async fn remove(ctx: &Context, name: &str) -> Result<ExitCode, Failure> {
    let sandbox = managed(ctx, name)?;
    let docker = Docker::from_env().map_err(fail)?;
    match docker.remove(&sandbox.container_id).await {
        // Removed outside Cove already: forget it all the same.
        Ok(()) | Err(crate::sandbox::docker::DockerError::NotFound(_)) => {}
        Err(e) => return Err(fail(e)),
    }
    ctx.store.remove_sandbox(name).map_err(fail)?;
    if !ctx.json {
        println!("sandbox {name} removed");
    }
    Ok(ExitCode::SUCCESS)
}

/// One row of `cove sandbox ls`.
struct Row {
    name: String,
    kind: &'static str,
    url: String,
    state: Result<cove_protocol::info::InfoResponse, String>,
}

async fn check(url: &str, token: &str) -> Result<cove_protocol::info::InfoResponse, String> {
    let client = CovedClient::new(url, token.to_string()).map_err(|e| e.to_string())?;
    let limit = Duration::from_secs(5);
    match tokio::time::timeout(limit, client.info()).await {
        Ok(Ok(info)) => Ok(info),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", limit.as_secs())),
    }
}

/// `cove sandbox ls`: every named and every Docker sandbox, checked at once.
pub(super) async fn ls(ctx: &Context) -> Result<ExitCode, Failure> {
    let managed = ctx.store.sandboxes().map_err(fail)?;
    if ctx.file.sandboxes.is_empty() && managed.is_empty() {
        if !ctx.json {
            println!(
                "No sandboxes yet. Name one in cove.toml:\n\n[sandboxes.build-1]\nurl = \"http://10.0.0.7:7700\"\ntoken = \"...\"\n\nor make one with Docker: cove sandbox create build-1"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let named = ctx.file.sandboxes.iter().map(|(name, s)| async move {
        Row {
            name: name.clone(),
            kind: "config",
            url: s.url.clone(),
            state: check(&s.url, s.token.as_deref().unwrap_or_default()).await,
        }
    });
    let docker = Docker::from_env().ok();
    let made = managed.iter().map(|s| {
        let docker = docker.clone();
        async move {
            let state = match &docker {
                None => Err("DOCKER_HOST is not a unix:// socket".to_string()),
                Some(docker) => match docker.inspect(&s.container_id).await {
                    Err(e) => Err(e.to_string()),
                    Ok(info) if !info.running => Err(format!("container {}", info.status)),
                    Ok(info) => match info.url {
                        Some(url) => check(&url, &s.token).await,
                        None => Err("no published port".to_string()),
                    },
                },
            };
            Row {
                name: s.name.clone(),
                kind: "docker",
                url: s.url.clone().unwrap_or_default(),
                state,
            }
        }
    });
    let mut rows = futures_util::future::join_all(named).await;
    rows.extend(futures_util::future::join_all(made).await);
    let mut all_up = true;
    for row in &rows {
        all_up &= row.state.is_ok();
        if ctx.json {
            let line = match &row.state {
                Ok(info) => {
                    json!({"name": row.name, "kind": row.kind, "url": row.url, "healthy": true, "version": info.version, "api_version": info.api_version, "capabilities": info.capabilities})
                }
                Err(e) => {
                    json!({"name": row.name, "kind": row.kind, "url": row.url, "healthy": false, "error": e})
                }
            };
            println!("{line}");
        } else {
            match &row.state {
                Ok(info) => println!(
                    "{:<16} {:<7} {:<32} up    coved {} ({})",
                    row.name,
                    row.kind,
                    row.url,
                    info.version,
                    info.capabilities.join(", ")
                ),
                Err(e) => println!("{:<16} {:<7} {:<32} DOWN  {e}", row.name, row.kind, row.url),
            }
        }
    }
    Ok(if all_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
