//! `cove skills ls`, and the skills of a run: read from the usual folders, the bad ones
//! noted and left out.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use super::{CliError, Invocation};
use cove_core::skills::{self, Skill, SkillProblem};

#[derive(Debug, Subcommand)]
pub(super) enum SkillsCommand {
    /// List the skills the agent can load, and the skill folders that cannot be used.
    Ls,
}

/// Runs a `cove skills` command.
pub(super) fn command(inv: &Invocation, cmd: SkillsCommand) -> Result<ExitCode, CliError> {
    match cmd {
        SkillsCommand::Ls => ls(inv),
    }
}

fn ls(inv: &Invocation) -> Result<ExitCode, CliError> {
    let (found, problems): (Vec<Skill>, Vec<SkillProblem>) =
        skills::discover(&skills::run_dirs(true));
    let mut rows: Vec<serde_json::Value> = found
        .iter()
        .map(|s| json!({"name": s.name, "description": s.description, "path": s.dir}))
        .collect();
    rows.extend(
        problems
            .iter()
            .map(|p| json!({"problem": p.message, "path": p.path})),
    );
    let empty = format!(
        "No skills. Cove reads SKILL.md folders from: {}",
        skills::run_dirs(true)
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    inv.printer
        .list(&rows, &empty, |row| match row["problem"].as_str() {
            Some(problem) => format!("! {}: {problem}", row["path"].as_str().unwrap_or_default()),
            None => format!(
                "{}  {} ({})",
                row["name"].as_str().unwrap_or_default(),
                row["description"].as_str().unwrap_or_default(),
                row["path"].as_str().unwrap_or_default()
            ),
        });
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::exit::FAILED)
    })
}
