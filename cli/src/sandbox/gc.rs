//! `cove sandbox gc [--yes]`: what this installation of Cove made for sandboxes it no
//! longer knows, in Docker and in Kubernetes; listed, and removed with `--yes`.

use std::process::ExitCode;

use serde_json::{Value, json};

use crate::{CliError, Invocation};
use cove_core::store::ManagedSandbox;
use cove_sandbox::choice::pod_plan;
use cove_sandbox::docker::Docker;
use cove_sandbox::kubernetes::Kubernetes;

/// `cove sandbox gc`: a dry run unless `!dry_run`.
pub(super) async fn gc(
    inv: &Invocation,
    namespaces: Vec<String>,
    dry_run: bool,
) -> Result<ExitCode, CliError> {
    let installation = inv.store.installation_id()?;
    let made = inv.store.sandboxes()?;
    let mut rows = pool_leftovers(inv, dry_run).await?;
    // Whatever a pool made is known while the pool's record of it lives.
    let members = inv.store.pool_members(None)?;
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
    match docker_leftovers(&installation, &known("docker"), dry_run).await {
        Ok(found) => rows.extend(found),
        Err(e) => unreached.push(e),
    }
    let wants_kube = !namespaces.is_empty() || made.iter().any(|s| s.provider == "kubernetes");
    match kube_leftovers(
        inv,
        namespaces,
        &installation,
        (&made, &known("kubernetes")),
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
        "nothing to remove: everything Cove made belongs to a sandbox it knows",
        |row| {
            let place = match row["namespace"].as_str() {
                Some(namespace) => format!("{namespace}/"),
                None => String::new(),
            };
            format!(
                "{verb} {} {} {place}{}",
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
    dry_run: bool,
) -> Result<Vec<Value>, CliError> {
    let docker = Docker::from_env()?;
    docker.ping().await?;
    let mut found = docker.leftovers(installation, known).await?;
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
        for (kind, name) in kube.leftovers(namespace, known, installation).await? {
            if !dry_run {
                kube.delete(namespace, kind, &name).await?;
            }
            rows.push(json!({"provider": "kubernetes", "namespace": namespace, "kind": kind, "name": name}));
        }
    }
    Ok(rows)
}
