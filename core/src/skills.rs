//! Skills: folders with a `SKILL.md` (YAML frontmatter with `name` and `description`, then
//! instructions) and the files they use (`scripts/`, `references/`, …), in the format other
//! agents share (agentskills.io). The agent sees each skill's name and description; loading
//! one gives it the instructions and copies the folder into the sandbox, where its scripts
//! run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Longest SKILL.md read.
const MAX_SKILL_MD: u64 = 256 * 1024;
/// Most files, and bytes, of one skill copied into the sandbox.
pub const MAX_FILES: usize = 200;
pub const MAX_BYTES: u64 = 20 * 1024 * 1024;

/// A skill found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its folder.
    pub dir: PathBuf,
    /// The instructions: SKILL.md after the frontmatter.
    pub body: String,
}

/// A skill folder that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SkillProblem {
    pub path: PathBuf,
    pub message: String,
}

#[derive(Deserialize)]
struct Frontmatter {
    name: Option<String>,
    description: Option<String>,
    // Other fields of the format (license, allowed-tools, metadata, …) are allowed and unused.
    #[serde(flatten)]
    _rest: BTreeMap<String, yaml_serde::Value>,
}

/// The folders skills are read from, highest precedence first: the project's
/// `.cove/skills`, the user's `~/.config/cove/skills`, then Claude's `~/.claude/skills`.
pub fn skill_dirs(project: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![
        project.join(".cove").join("skills"),
        crate::config::config_dir().join("skills"),
    ];
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        dirs.push(PathBuf::from(home).join(".claude").join("skills"));
    }
    dirs
}

/// Splits SKILL.md into its frontmatter and its body.
fn split(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err(
            "SKILL.md does not start with a `---` line of YAML frontmatter (name, description)"
                .into(),
        );
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[start..at], &text[at + line.len()..]));
        }
        at += line.len();
    }
    Err("the frontmatter of SKILL.md has no closing `---` line".into())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}
/// The skill folders: the folder's own (`.cove/skills`) only when `project` (trusted).
pub fn run_dirs(project: bool) -> Vec<PathBuf> {
    let here = crate::trust::project_dir();
    let own = here.join(crate::trust::PROJECT_SKILLS);
    skill_dirs(&here)
        .into_iter()
        .filter(|dir| project || *dir != own)
        .collect()
}

/// Reads the skill in `dir` (whose SKILL.md is `dir/SKILL.md`).
pub fn read(dir: &Path) -> Result<Skill, SkillProblem> {
    let path = dir.join("SKILL.md");
    let problem = |message: String| SkillProblem {
        path: path.clone(),
        message,
    };
    let size = std::fs::metadata(&path)
        .map_err(|e| problem(format!("cannot read it: {e}")))?
        .len();
    if size > MAX_SKILL_MD {
        return Err(problem(format!(
            "it is {size} bytes; SKILL.md may be at most {MAX_SKILL_MD}"
        )));
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| problem(format!("cannot read it as UTF-8 text: {e}")))?;
    let (yaml, body) = split(&text).map_err(problem)?;
    let front: Frontmatter = yaml_serde::from_str(yaml)
        .map_err(|e| problem(format!("its frontmatter is not valid YAML: {e}")))?;
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = front
        .name
        .map(|n| n.trim().to_string())
        .ok_or_else(|| problem("its frontmatter has no `name`".into()))?;
    if !valid_name(&name) {
        return Err(problem(format!(
            "name {name:?} must be 1-64 lowercase letters, digits and single hyphens"
        )));
    }
    if name != folder {
        return Err(problem(format!(
            "name {name:?} must match its folder's name {folder:?}"
        )));
    }
    let description = front
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or_else(|| problem("its frontmatter has no `description`".into()))?;
    if description.chars().count() > 1024 {
        return Err(problem(
            "its description is longer than 1024 characters".into(),
        ));
    }
    Ok(Skill {
        name,
        description,
        dir: dir.to_path_buf(),
        body: body.trim().to_string(),
    })
}

/// The skills of `dirs` (a skill of an earlier folder hides one of the same name in a later
/// one) and the problems found; folders that do not exist are skipped.
pub fn discover(dirs: &[PathBuf]) -> (Vec<Skill>, Vec<SkillProblem>) {
    let mut skills: Vec<Skill> = Vec::new();
    let mut problems = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("SKILL.md").is_file())
            .collect();
        folders.sort();
        for folder in folders {
            match read(&folder) {
                Ok(skill) if skills.iter().any(|s| s.name == skill.name) => {}
                Ok(skill) => skills.push(skill),
                Err(problem) => problems.push(problem),
            }
        }
    }
    (skills, problems)
}

/// The files of a skill to copy, as (path relative to its folder, absolute path), within
/// the limits; symbolic links are not followed.
pub fn files(skill: &Skill) -> Result<Vec<(String, PathBuf)>, String> {
    let mut out = Vec::new();
    let mut bytes = 0;
    let mut stack = vec![skill.dir.clone()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
                let relative = path
                    .strip_prefix(&skill.dir)
                    .map_err(|e| e.to_string())?
                    .to_string_lossy()
                    .into_owned();
                out.push((relative, path));
            }
        }
        if out.len() > MAX_FILES || bytes > MAX_BYTES {
            return Err(format!(
                "the skill's folder holds more than {MAX_FILES} files or {} MB; it is not copied",
                MAX_BYTES / 1024 / 1024
            ));
        }
    }
    out.sort();
    Ok(out)
}

/// The system prompt's list of skills, within about `budget` characters: every name, and
/// descriptions while they fit.
pub fn prompt_section(skills: &[Skill], budget: usize) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n\n## Skills\nSkills are instructions (and scripts) for particular kinds of work, written by the user or others. When a task matches one, load it with `load_skill` before you start, then follow it.\n",
    );
    let names_only: usize = skills.iter().map(|s| s.name.len() + 3).sum();
    let mut room = budget.saturating_sub(out.len() + names_only);
    for skill in skills {
        let extra = skill.description.len() + 2;
        if extra <= room {
            room -= extra;
            out.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        } else {
            out.push_str(&format!("- {}\n", skill.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("SKILL.md"), text).unwrap();
        folder
    }

    #[test]
    fn skills_are_read_and_bad_ones_reported_with_their_path() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        let user = tmp.path().join("user");
        write(
            &project,
            "pdf-forms",
            "---\nname: pdf-forms\ndescription: >\n  Fill PDF forms\n  with pdftk.\nlicense: MIT\nmetadata:\n  version: \"1.0\"\n---\n# Steps\nRun scripts/fill.sh\n",
        );
        write(
            &user,
            "pdf-forms",
            "---\nname: pdf-forms\ndescription: the user's copy\n---\nhidden\n",
        );
        write(&user, "plain", "# No frontmatter\n");
        write(&user, "bad-yaml", "---\nname: [unclosed\n---\n");
        write(
            &user,
            "wrong-name",
            "---\nname: other\ndescription: x\n---\n",
        );
        write(&user, "Caps", "---\nname: Caps\ndescription: x\n---\n");
        write(&user, "no-desc", "---\nname: no-desc\n---\nbody\n");
        let (skills, problems) = discover(&[project, user.clone(), tmp.path().join("none")]);
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].name, "pdf-forms");
        assert_eq!(skills[0].description, "Fill PDF forms with pdftk.");
        assert_eq!(skills[0].body, "# Steps\nRun scripts/fill.sh");
        let said: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(said.len(), 5, "{said:?}");
        let about = |folder: &str| {
            said.iter()
                .find(|p| p.contains(&format!("/{folder}/SKILL.md")))
                .unwrap_or_else(|| panic!("no problem for {folder}: {said:?}"))
                .clone()
        };
        assert!(about("plain").contains("does not start with"));
        assert!(about("bad-yaml").contains("not valid YAML"));
        assert!(about("wrong-name").contains("must match its folder"));
        assert!(about("Caps").contains("lowercase"));
        assert!(about("no-desc").contains("no `description`"));
    }

    #[test]
    fn the_prompt_lists_every_name_and_descriptions_within_the_budget() {
        let skill = |name: &str, description: &str| Skill {
            name: name.into(),
            description: description.into(),
            dir: PathBuf::new(),
            body: String::new(),
        };
        let skills = vec![
            skill("a", "short"),
            skill("b", &"long ".repeat(100)),
            skill("c", "also short"),
        ];
        let roomy = prompt_section(&skills, 10_000);
        assert!(roomy.contains("- a: short\n") && roomy.contains("- b: long"));
        let tight = prompt_section(&skills, 300);
        assert!(tight.contains("- a: short\n"), "{tight}");
        assert!(tight.contains("- b\n"), "{tight}");
        assert!(tight.contains("- c: also short\n"), "{tight}");
        assert_eq!(prompt_section(&[], 100), "");
    }
}
