//! `cove sandbox pool ls|fill|drain` and `cove sandbox create NAME --pool POOL`: warm pools
//! of sandboxes made ahead of use (`[pools.NAME]` in cove.toml).

use std::process::ExitCode;
use std::time::Instant;

use clap::Subcommand;
use serde_json::json;

use crate::{CliError, Invocation};
use cove_core::store::now_ms;

#[derive(Debug, Subcommand)]
pub(crate) enum PoolCommand {
    /// List the pools of cove.toml and the sandboxes they hold.
    Ls,
    /// Bring a pool to its size now: sandboxes past their age, or no longer answering, are
    /// replaced; says why it cannot.
    Fill {
        pool: String,
        /// Say only what goes wrong (the background refill).
        #[arg(long, hide = true)]
        quiet: bool,
    },
    /// Remove every sandbox a pool holds (those taken from it stay with their threads).
    Drain { pool: String },
}

/// Runs a `cove sandbox pool` command.
pub(super) async fn command(inv: &Invocation, cmd: PoolCommand) -> Result<ExitCode, CliError> {
    match cmd {
        PoolCommand::Ls => ls(inv),
        PoolCommand::Fill { pool, quiet } => fill(inv, &pool, quiet).await,
        PoolCommand::Drain { pool } => drain(inv, &pool).await,
    }
}

/// `cove sandbox create NAME --pool POOL`
pub(super) async fn create(inv: &Invocation, name: &str, pool: &str) -> Result<ExitCode, CliError> {
    let sandboxes = inv.sandboxes();
    let plan = sandboxes.pool_plan(pool)?;
    sandboxes.check_name(name, plan.provider() == "kubernetes")?;
    let begun = Instant::now();
    let (made, sandbox) = sandboxes.claim(pool, name).await?;
    let ready_ms = begun.elapsed().as_secs_f64() * 1000.0;
    sandbox.close().await;
    inv.printer.result(
        &json!({"name": name, "pool": pool, "from": made.made_as, "url": made.url, "ready_ms": ready_ms}),
        |_| {
            format!(
                "sandbox {name} taken from pool {pool} ({}), ready in {ready_ms:.0} ms with a token of its own; use it with: cove run --sandbox {name} \"...\"",
                made.made_as.as_deref().unwrap_or_default()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox pool ls`
fn ls(inv: &Invocation) -> Result<ExitCode, CliError> {
    let members = inv.store.pool_members(None)?;
    let mut pools: Vec<String> = inv.file.pools.keys().cloned().collect();
    for member in &members {
        if !pools.contains(&member.pool) {
            pools.push(member.pool.clone());
        }
    }
    let now = now_ms();
    let rows: Vec<serde_json::Value> = pools
        .iter()
        .map(|pool| {
            let config = inv.file.pools.get(pool);
            let held: Vec<serde_json::Value> = members
                .iter()
                .filter(|m| &m.pool == pool)
                .map(|m| json!({"name": m.name, "provider": m.provider, "ready": m.ready, "age_secs": (now - m.created_at) / 1000}))
                .collect();
            let ready = members.iter().filter(|m| &m.pool == pool && m.ready).count();
            let last_refill = std::fs::read_to_string(cove_sandbox::pool::refill_log(pool))
                .ok()
                .and_then(|text| text.lines().rev().find(|l| !l.trim().is_empty()).map(str::to_string));
            json!({
                "pool": pool,
                "size": config.map(|c| c.size),
                "image": config.map(|c| c.image.clone().unwrap_or_else(|| cove_sandbox::docker::DEFAULT_IMAGE.into())),
                "provider": config.map(|c| c.provider.clone().unwrap_or_else(|| "docker".into())),
                "max_age_secs": config.and_then(|c| c.max_age_secs),
                "ready": ready,
                "members": held,
                "last_refill_error": last_refill,
            })
        })
        .collect();
    inv.printer.list(
        &rows,
        "no pools: add one to cove.toml, e.g.\n\n[pools.py]\nsize = 3\nimage = \"cove-sandbox:latest\"\n\nthen `cove sandbox pool fill py`",
        |row| {
            let mut text = match row["size"].as_u64() {
                Some(size) => format!(
                    "{:<12} {:<10} {} of {size} ready · {}{}",
                    row["pool"].as_str().unwrap_or_default(),
                    row["provider"].as_str().unwrap_or_default(),
                    row["ready"],
                    row["image"].as_str().unwrap_or_default(),
                    row["max_age_secs"]
                        .as_u64()
                        .map(|s| format!(" · replaced after {s} s"))
                        .unwrap_or_default()
                ),
                None => format!(
                    "{:<12} no longer in cove.toml: `cove sandbox gc --yes` removes its sandboxes",
                    row["pool"].as_str().unwrap_or_default()
                ),
            };
            for member in row["members"].as_array().into_iter().flatten() {
                text.push_str(&format!(
                    "\n  {:<28} {:<8} {} s old",
                    member["name"].as_str().unwrap_or_default(),
                    if member["ready"] == true { "ready" } else { "making" },
                    member["age_secs"]
                ));
            }
            if let Some(error) = row["last_refill_error"].as_str() {
                text.push_str(&format!("\n  last background refill: {error}"));
            }
            text
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox pool fill POOL`
async fn fill(inv: &Invocation, pool: &str, quiet: bool) -> Result<ExitCode, CliError> {
    let progress = |line: &str| {
        if !quiet {
            inv.printer.note(line);
        }
    };
    let filled = inv
        .sandboxes()
        .fill_pool(pool, &cove_core::config::load_file, &progress)
        .await?;
    if quiet {
        return Ok(ExitCode::SUCCESS);
    }
    inv.printer.result(&filled, |f| {
        let made = if f.made == 0 {
            "none made".to_string()
        } else {
            format!(
                "made {} ({} s each)",
                f.made,
                f.made_ms
                    .iter()
                    .map(|ms| format!("{:.1}", *ms as f64 / 1000.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let removed = match f.removed {
            0 => String::new(),
            n => format!(", {n} replaced"),
        };
        format!(
            "pool {pool}: {} of {} ready; {made}{removed}",
            f.ready, f.size
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// `cove sandbox pool drain POOL`
async fn drain(inv: &Invocation, pool: &str) -> Result<ExitCode, CliError> {
    let removed = inv.sandboxes().drain_pool(pool).await?;
    inv.printer
        .result(&json!({"pool": pool, "removed": removed}), |_| {
            format!(
                "pool {pool} drained: {removed} sandbox{} removed",
                if removed == 1 { "" } else { "es" }
            )
        });
    Ok(ExitCode::SUCCESS)
}
