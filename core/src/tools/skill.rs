//! `load_skill`: the instructions of one of the user's skills, and its files copied into
//! the sandbox so its scripts run there (never on the controller's machine).

use cove_protocol::events::EventKind;
use cove_protocol::shell::ExecRequest;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{ToolDef, ToolEnv, ToolResult, describe_client_error, tool};
use crate::skills;

/// The name of the tool.
pub const LOAD_SKILL: &str = "load_skill";

/// Where skills go in the workspace.
const SKILLS_DIR: &str = ".skills";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadSkill {
    /// The skill's name, as listed under Skills in your instructions.
    name: String,
}

async fn load_skill(env: &ToolEnv, a: LoadSkill) -> ToolResult {
    let name = a.name.trim();
    let Some(skill) = env.skills.iter().find(|s| s.name == name) else {
        let known: Vec<&str> = env.skills.iter().map(|s| s.name.as_str()).collect();
        return ToolResult::error(format!(
            "there is no skill {name:?}; the skills are: {}",
            known.join(", ")
        ));
    };
    let files = match skills::files(skill) {
        Ok(files) => files,
        Err(e) => return ToolResult::error(e),
    };
    let folder = format!("{SKILLS_DIR}/{}", skill.name);
    let mut executables = Vec::new();
    for (relative, path) in &files {
        let bytes = match tokio::fs::read(path).await {
            Ok(bytes) => bytes,
            Err(e) => {
                return ToolResult::error(format!("cannot read {}: {e}", path.display()));
            }
        };
        let target = format!("{folder}/{relative}");
        if let Err(e) = env.sandbox.upload(&target, bytes).await {
            return ToolResult::error(format!(
                "copying {target} into the sandbox failed: {}",
                describe_client_error(&e)
            ));
        }
        if is_executable(path) {
            executables.push(format!("'{}'", target.replace('\'', r"'\''")));
        }
    }
    if !executables.is_empty() {
        // Uploads carry no mode: scripts meant to run as `./script` get it back here.
        let mut chmod = ExecRequest::new(format!("chmod +x {}", executables.join(" ")));
        chmod.session = "cove-skills".into();
        if let Err(e) = env.sandbox.exec(&chmod).await {
            tracing::warn!(error = %e, "cannot mark a skill's scripts executable");
        }
    }
    let listing: Vec<&str> = files.iter().map(|(r, _)| r.as_str()).collect();
    let mut result = ToolResult::ok(format!(
        "Skill {name} loaded. Its files are in the workspace under {folder}/ ({}); paths in its instructions are relative to that folder.\n\n{}",
        listing.join(", "),
        skill.body
    ));
    result.event = Some(EventKind::SkillLoaded {
        name: skill.name.clone(),
        path: folder,
        files: files.len() as u32,
    });
    result
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// The skill tools.
pub fn tools() -> Vec<ToolDef> {
    vec![tool! {
        name: "load_skill",
        args: LoadSkill,
        summary: Some("name"),
        raw: &[],
        description: "Load one of the skills listed under Skills in your instructions: returns its instructions and copies its files (scripts, references) into the workspace under .skills/NAME/.",
        example: json!({"name": "pdf-forms"}),
        run: load_skill,
    }]
}
