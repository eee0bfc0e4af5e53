//! A task in Harbor's format: `task.toml`, `instruction.md`, `environment/Dockerfile` (or a
//! prebuilt `docker_image`), and `tests/test.sh`, which writes the reward to
//! `/logs/verifier/reward.txt`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::EvalError;

/// Harbor's defaults for a task.toml that leaves a limit out (seconds).
const DEFAULT_AGENT_TIMEOUT: f64 = 600.0;
const DEFAULT_VERIFIER_TIMEOUT: f64 = 600.0;
const DEFAULT_BUILD_TIMEOUT: f64 = 600.0;

/// One task, read and checked.
#[derive(Debug, Clone)]
pub(super) struct Task {
    /// The folder's name.
    pub(super) name: String,
    pub(super) dir: PathBuf,
    pub(super) instruction: String,
    pub(super) config: TaskConfig,
}

/// The parts of `task.toml` a run without Harbor uses; the rest is Harbor's own.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct TaskConfig {
    #[serde(default)]
    pub(super) agent: Limits,
    #[serde(default)]
    pub(super) verifier: Limits,
    #[serde(default)]
    pub(super) environment: EnvironmentConfig,
}

/// A phase's limit, and the variables its commands get.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Limits {
    pub(super) timeout_sec: Option<f64>,
    #[serde(default)]
    pub(super) env: std::collections::BTreeMap<String, String>,
}

/// Where the task runs.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct EnvironmentConfig {
    /// A prebuilt image, instead of building `environment/`.
    pub(super) docker_image: Option<String>,
    /// The working directory of the agent and the tests (default: the image's).
    pub(super) workdir: Option<String>,
    pub(super) build_timeout_sec: Option<f64>,
    pub(super) cpus: Option<f64>,
    pub(super) memory_mb: Option<u64>,
}

impl Task {
    /// Reads the task in `dir`.
    pub(super) fn read(dir: &Path) -> Result<Task, EvalError> {
        let bad = |why: String| EvalError::BadTask {
            task: dir.display().to_string(),
            why,
        };
        let toml_text = std::fs::read_to_string(dir.join("task.toml"))
            .map_err(|e| bad(format!("task.toml: {e}")))?;
        let config: TaskConfig =
            toml::from_str(&toml_text).map_err(|e| bad(format!("task.toml: {e}")))?;
        let instruction = std::fs::read_to_string(dir.join("instruction.md"))
            .map_err(|e| bad(format!("instruction.md: {e}")))?;
        if instruction.trim().is_empty() {
            return Err(bad("instruction.md is empty".into()));
        }
        if !dir.join("tests/test.sh").is_file() {
            return Err(bad("there is no tests/test.sh to score it".into()));
        }
        if config.environment.docker_image.is_none()
            && !dir.join("environment/Dockerfile").is_file()
        {
            return Err(bad(
                "there is neither environment/Dockerfile nor [environment] docker_image".into(),
            ));
        }
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "task".into());
        Ok(Task {
            name,
            dir: dir.to_path_buf(),
            instruction,
            config,
        })
    }

    /// The agent's limit.
    pub(super) fn agent_timeout(&self) -> std::time::Duration {
        secs(self.config.agent.timeout_sec, DEFAULT_AGENT_TIMEOUT)
    }

    /// The tests' limit.
    pub(super) fn verifier_timeout(&self) -> std::time::Duration {
        secs(self.config.verifier.timeout_sec, DEFAULT_VERIFIER_TIMEOUT)
    }

    /// The image build's limit.
    pub(super) fn build_timeout(&self) -> std::time::Duration {
        secs(
            self.config.environment.build_timeout_sec,
            DEFAULT_BUILD_TIMEOUT,
        )
    }
}

/// A limit in seconds: the task's when it is a sensible number (at most a week), else `default`.
fn secs(given: Option<f64>, default: f64) -> std::time::Duration {
    const WEEK: f64 = 7.0 * 24.0 * 3600.0;
    let chosen = given
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(default);
    std::time::Duration::from_secs_f64(chosen.min(WEEK))
}

/// The tasks of `dir`: itself when it holds a `task.toml`, else each folder in it that does,
/// by name.
pub(super) fn discover(dir: &Path) -> Result<Vec<Task>, EvalError> {
    if dir.join("task.toml").is_file() {
        return Ok(vec![Task::read(dir)?]);
    }
    let entries = std::fs::read_dir(dir).map_err(|e| EvalError::BadTask {
        task: dir.display().to_string(),
        why: e.to_string(),
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("task.toml").is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(EvalError::BadTask {
            task: dir.display().to_string(),
            why: "no task here: a task is a folder with task.toml, instruction.md, environment/ and tests/test.sh (Harbor's format)".into(),
        });
    }
    dirs.iter().map(|d| Task::read(d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    #[test]
    fn a_folder_of_tasks_is_read_in_order_with_harbors_defaults() {
        let root = tempfile::tempdir().unwrap();
        for name in ["b", "a"] {
            write(
                &root.path().join(name),
                &[
                    (
                        "task.toml",
                        "[agent]\ntimeout_sec = 20.0\n[environment]\nworkdir = \"/app\"\n",
                    ),
                    ("instruction.md", "Do it."),
                    ("environment/Dockerfile", "FROM x"),
                    ("tests/test.sh", "true"),
                ],
            );
        }
        std::fs::create_dir(root.path().join("not-a-task")).unwrap();
        let tasks = discover(root.path()).unwrap();
        let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(tasks[0].agent_timeout().as_secs(), 20);
        assert_eq!(tasks[0].verifier_timeout().as_secs(), 600);
        assert_eq!(tasks[0].config.environment.workdir.as_deref(), Some("/app"));
    }

    #[test]
    fn a_task_without_tests_or_environment_says_what_is_missing() {
        let root = tempfile::tempdir().unwrap();
        write(
            root.path(),
            &[("task.toml", ""), ("instruction.md", "Do it.")],
        );
        let e = discover(root.path()).unwrap_err().to_string();
        assert!(e.contains("tests/test.sh"), "{e}");
        write(root.path(), &[("tests/test.sh", "true")]);
        let e = discover(root.path()).unwrap_err().to_string();
        assert!(e.contains("environment/Dockerfile"), "{e}");
    }
}
