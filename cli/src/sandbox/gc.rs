//! `cove sandbox gc [--yes]`: what this installation of Cove made for sandboxes it no
//! longer knows, in Docker and in Kubernetes, members of pools gone from cove.toml, and
//! Docker sandboxes no thread uses that have been stopped long; listed, and removed with
//! `--yes`.

use std::collections::HashSet;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::{CliError, Invocation};
use cove_core::store::ManagedSandbox;
use cove_sandbox::choice::pod_plan;
use cove_sandbox::docker::Docker;
use cove_sandbox::kubernetes::Kubernetes;

/// How old what gc takes must be.
pub(super) struct Ages {
    /// A sandbox no thread uses, stopped this long.
    pub(super) stopped_for: Duration,
    /// A leftover, made this long ago.
    pub(super) min_age: Duration,
}

/// `cove sandbox gc`: a dry run unless `!dry_run`.
pub(super) async fn gc(
    inv: &Invocation,
    namespaces: Vec<String>,
    ages: Ages,
    dry_run: bool,
) -> Result<ExitCode, CliError> {
    let installation = inv.store.installation_id()?;
    let mut rows = pool_leftovers(inv, dry_run).await?;
    rows.extend(stopped_unused(inv, ages.stopped_for, dry_run).await?);
    let min_age = i64::try_from(ages.min_age.as_secs()).unwrap_or(i64::MAX);
    // Whatever a pool made is known while the pool's record of it lives.
    let (made, members) = inv.store.sandboxes_and_pool_members()?;
    let known = |provider: &str| -> Vec<String> {
        made.iter()
            .filter(|s| (s.provider == "kubernetes") == (provider == "kubernetes"))
            .flat_map(|s| [s.name.clone(), s.resource_name().to_string()])
            .chain(
                members
                    .iter()
                    .filter(|m| m.provider == provider)
                    .map(|m| m.name.clone()),
            )
            .collect()
    };
    let mut unreached = Vec::new();
    match docker_leftovers(&installation, &known("docker"), min_age, dry_run).await {
        Ok(found) => rows.extend(found),
        Err(e) => unreached.push(e),
    }
    let wants_kube = !namespaces.is_empty() || made.iter().any(|s| s.provider == "kubernetes");
    match kube_leftovers(
        inv,
        namespaces,
        &installation,
        (&made, &known("kubernetes")),
        min_age,
        dry_run,
    )
    .await
    {
        Ok(found) => rows.extend(found),
        Err(e) if wants_kube => return Err(e),
        Err(e) => unreached.push(e),
    }
    if unreached.len() == 2 {
        return Err(unreached.remove(0));
    }
    for e in &unreached {
        tracing::debug!(error = %e, "a provider was not looked at");
    }
    let verb = if dry_run { "would remove" } else { "removed" };
    inv.printer.list(
        &rows,
        "nothing to remove: everything Cove made belongs to a sandbox it knows, and no sandbox of no thread has been stopped that long",
        |row| {
            let place = match row["namespace"].as_str() {
                Some(namespace) => format!("{namespace}/"),
                None => String::new(),
            };
            let why = row["why"]
                .as_str()
                .map(|why| format!(" ({why})"))
                .unwrap_or_default();
            format!(
                "{verb} {} {} {place}{}{why}",
                row["provider"].as_str().unwrap_or_default(),
                row["kind"].as_str().unwrap_or_default(),
                row["name"].as_str().unwrap_or_default()
            )
        },
    );
    if dry_run && !rows.is_empty() {
        inv.printer
            .note("nothing was removed: `cove sandbox gc --yes` removes these");
    }
    Ok(ExitCode::SUCCESS)
}

/// Docker sandboxes Cove made that no thread records and that have been stopped for
/// `limit` or longer, removed unless `dry_run`.
async fn stopped_unused(
    inv: &Invocation,
    limit: Duration,
    dry_run: bool,
) -> Result<Vec<Value>, CliError> {
    let made: Vec<ManagedSandbox> = inv
        .store
        .sandboxes()?
        .into_iter()
        .filter(|s| s.provider == "docker")
        .collect();
    if made.is_empty() {
        return Ok(Vec::new());
    }
    let mut used: HashSet<String> = inv
        .store
        .threads()?
        .into_iter()
        .map(|t| t.sandbox)
        .collect();
    // Named in cove.toml (the default sandbox, those a server offers): kept for what comes.
    let named = inv.file.sandbox.iter().chain(
        inv.file
            .serve
            .iter()
            .flat_map(|serve| serve.sandboxes.iter()),
    );
    used.extend(named.map(|name| format!("docker:{name}")));
    let docker = Docker::from_env()?;
    let mut rows = Vec::new();
    for sandbox in made {
        if used.contains(&format!("docker:{}", sandbox.name)) {
            continue;
        }
        let info = match docker.inspect(&sandbox.container_id).await {
            Ok(info) => info,
            // Gone outside Cove: `cove sandbox rm` forgets it.
            Err(_) => continue,
        };
        let stopped_secs = info
            .finished_at
            .as_deref()
            .and_then(|at| humantime::parse_rfc3339_weak(at).ok())
            .and_then(|at| at.elapsed().ok())
            .map(|d| d.as_secs());
        let Some(stopped_secs) = stopped_secs.filter(|_| !info.running) else {
            continue;
        };
        if stopped_secs < limit.as_secs() {
            continue;
        }
        if !dry_run {
            inv.sandboxes().remove_made(&sandbox).await?;
        }
        rows.push(json!({"provider": "docker", "kind": "sandbox", "name": sandbox.name, "stopped_secs": stopped_secs, "why": format!("no thread uses it; stopped {}", humantime::format_duration(Duration::from_secs(stopped_secs)))}));
    }
    Ok(rows)
}

/// The members of pools `cove.toml` no longer has, removed unless `dry_run`.
async fn pool_leftovers(inv: &Invocation, dry_run: bool) -> Result<Vec<Value>, CliError> {
    let mut rows = Vec::new();
    let mut gone: Vec<String> = Vec::new();
    for member in inv.store.pool_members(None)? {
        if inv.file.pools.contains_key(&member.pool) {
            continue;
        }
        rows.push(json!({"provider": member.provider, "kind": "pool member", "name": member.name, "pool": member.pool}));
        if !gone.contains(&member.pool) {
            gone.push(member.pool);
        }
    }
    if !dry_run {
        for pool in &gone {
            inv.sandboxes().drain_pool(pool).await?;
        }
    }
    Ok(rows)
}

/// Docker's leftovers of this installation, removed unless `dry_run`.
async fn docker_leftovers(
    installation: &str,
    known: &[String],
    min_age: i64,
    dry_run: bool,
) -> Result<Vec<Value>, CliError> {
    let docker = Docker::from_env()?;
    docker.ping().await?;
    let mut found = docker.leftovers(installation, known, min_age).await?;
    // Containers first: a network or an image goes once nothing uses it.
    found.sort_by_key(|l| match l.kind {
        "container" => 0,
        "network" => 1,
        _ => 2,
    });
    let mut rows = Vec::new();
    for leftover in found {
        if !dry_run {
            docker.remove_leftover(&leftover).await?;
        }
        rows.push(json!({"provider": "docker", "kind": leftover.kind, "name": leftover.name, "sandbox": leftover.sandbox}));
    }
    Ok(rows)
}

/// Kubernetes' leftovers of this installation, removed unless `dry_run`.
async fn kube_leftovers(
    inv: &Invocation,
    mut namespaces: Vec<String>,
    installation: &str,
    (made, known): (&[ManagedSandbox], &[String]),
    min_age: i64,
    dry_run: bool,
) -> Result<Vec<Value>, CliError> {
    let kube = Kubernetes::from_env(inv.in_cluster).await?;
    if namespaces.is_empty() {
        namespaces.push(kube.default_namespace.clone());
        for sandbox in made.iter().filter(|s| s.provider == "kubernetes") {
            if let Ok(plan) = pod_plan(sandbox)
                && !namespaces.contains(&plan.namespace)
            {
                namespaces.push(plan.namespace);
            }
        }
    }
    let mut rows = Vec::new();
    for namespace in &namespaces {
        for (kind, name) in kube
            .leftovers(namespace, known, installation, min_age)
            .await?
        {
            if !dry_run {
                kube.delete(namespace, kind, &name).await?;
            }
            rows.push(json!({"provider": "kubernetes", "namespace": namespace, "kind": kind, "name": name}));
        }
    }
    Ok(rows)
}
