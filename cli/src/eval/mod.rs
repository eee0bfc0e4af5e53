//! `cove eval DIR`: a folder of tasks in Harbor's format, run and scored without Harbor.
//! Each task's image is built by Docker, a container of it gets the static coved, Cove runs
//! the instruction against it, then the task's tests score what it left, as Harbor's
//! verifier does. Per task: the reward, the time, the tokens and the cost; then a summary.

mod agent;
mod container;
mod task;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use serde_json::json;

use super::{CliError, Invocation};
use agent::{AgentSettings, Usage};
use container::Sizes;
use task::Task;

/// `cove eval`'s arguments.
#[derive(Debug, Args)]
pub(super) struct EvalArgs {
    /// A task (a folder with task.toml, instruction.md, environment/ and tests/test.sh) or a
    /// folder of them.
    dir: PathBuf,
    /// `provider/model` the agent runs with (default: as for `cove run`).
    #[arg(long, env = "COVE_MODEL")]
    model: Option<String>,
    /// A statically linked coved for the tasks' containers (default: the coved beside cove).
    #[arg(long, env = "COVE_COVED_BIN")]
    coved: Option<PathBuf>,
    /// Where each task's events, logs, thread and test output go (default:
    /// ./cove-eval/TIME).
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Iteration cap of each task's run.
    #[arg(long)]
    max_iterations: Option<u32>,
    /// US dollars each task's run may spend.
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,
}

/// Why a task could not be run or scored.
#[derive(Debug, thiserror::Error)]
pub(super) enum EvalError {
    /// The task's files are not a task: fix them.
    #[error("{task}: {why}")]
    BadTask { task: String, why: String },
    /// Docker refused or failed; the message is its own.
    #[error("{0}")]
    Docker(String),
    /// A command ran past its limit.
    #[error("`docker {command}` took over {secs} s")]
    TimedOut { command: String, secs: u64 },
    /// coved or cove could not be started.
    #[error("{0}")]
    Setup(String),
}

/// One task's outcome, as printed and as JSON.
#[derive(Debug, Serialize)]
struct TaskResult {
    task: String,
    /// `passed` (reward 1), `failed` (a lower reward, or none written), or `error` (it could
    /// not be run or scored).
    verdict: &'static str,
    reward: Option<f64>,
    /// The agent was stopped at the task's limit.
    agent_timed_out: bool,
    /// Why the task could not be run, or why the agent's run failed.
    error: Option<String>,
    seconds: f64,
    #[serde(flatten)]
    usage: Usage,
    /// The task's events, logs, thread and test output.
    output: PathBuf,
    /// Ctrl-C stopped it (and the evaluation).
    #[serde(skip)]
    interrupted: bool,
}

/// `cove eval DIR`.
pub(super) async fn eval(inv: &Invocation, args: EvalArgs) -> Result<ExitCode, CliError> {
    let tasks = task::discover(&args.dir).map_err(|e| CliError::Usage(e.to_string()))?;
    let cove = std::env::current_exe()
        .map_err(|e| CliError::Setup(format!("cannot find this cove's own path: {e}")))?;
    let coved = match &args.coved {
        Some(path) => path.clone(),
        None => cove_sandbox::find_coved().map_err(|e| CliError::Setup(e.to_string()))?,
    };
    if !coved.is_file() {
        return Err(CliError::Setup(format!(
            "no coved at {}: build the static one (docs/harbor.md) and name it with --coved",
            coved.display()
        )));
    }
    let output = args.output.clone().unwrap_or_else(default_output);
    std::fs::create_dir_all(&output)
        .map_err(|e| CliError::Failed(format!("{}: {e}", output.display())))?;
    let settings = AgentSettings {
        cove,
        model: args.model.clone(),
        max_iterations: args.max_iterations,
        max_cost: args.max_cost,
    };
    let started = Instant::now();
    let mut results = Vec::new();
    for task in &tasks {
        inv.printer.note(&format!("{}: running", task.name));
        let result = run_task(task, &settings, &coved, &output).await;
        inv.printer.result(&result, line);
        let interrupted = result.interrupted;
        results.push(result);
        if interrupted {
            return Ok(ExitCode::from(crate::error::exit::INTERRUPTED));
        }
    }
    let (summary, text) = summarize(&results, started.elapsed(), &output);
    inv.printer.result(&summary, |_| text);
    let all_passed = results.iter().all(|r| r.verdict == "passed");
    Ok(if all_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn default_output() -> PathBuf {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    PathBuf::from("cove-eval").join(now.trim_end_matches('Z').replace(':', "-"))
}

/// Builds, runs and scores one task; its container is removed however it ends.
async fn run_task(
    task: &Task,
    settings: &AgentSettings,
    coved: &std::path::Path,
    output: &std::path::Path,
) -> TaskResult {
    let started = Instant::now();
    let out = output.join(&task.name);
    let mut result = TaskResult {
        task: task.name.clone(),
        verdict: "error",
        reward: None,
        agent_timed_out: false,
        error: None,
        seconds: 0.0,
        usage: Usage::default(),
        output: out.clone(),
        interrupted: false,
    };
    if let Err(e) = std::fs::create_dir_all(&out) {
        result.error = Some(format!("{}: {e}", out.display()));
        return result;
    }
    let image = match prepare_image(task).await {
        Ok(image) => image,
        Err(e) => {
            result.error = Some(e.to_string());
            result.seconds = started.elapsed().as_secs_f64();
            return result;
        }
    };
    let token = cove_core::store::new_id(48);
    let name = format!(
        "cove-eval-{}-{}",
        docker_name(&task.name),
        cove_core::store::new_id(6)
    );
    let sizes = Sizes {
        cpus: task.config.environment.cpus,
        memory_mb: task.config.environment.memory_mb,
    };
    let workdir = task.config.environment.workdir.as_deref();
    match container::start(&image, &name, workdir, &sizes, coved, &token).await {
        Ok(running) => {
            // Ctrl-C ends the evaluation, never with a container left running.
            result.interrupted = tokio::select! {
                () = score(task, settings, &running, &token, &out, &mut result) => false,
                _ = tokio::signal::ctrl_c() => true,
            };
            if result.interrupted {
                result.error = Some("interrupted (Ctrl-C)".into());
            }
            container::remove(&running.id).await;
        }
        Err(e) => result.error = Some(e.to_string()),
    }
    result.seconds = started.elapsed().as_secs_f64();
    result
}

/// The agent's run, then the tests.
async fn score(
    task: &Task,
    settings: &AgentSettings,
    running: &container::Container,
    token: &str,
    out: &std::path::Path,
    result: &mut TaskResult,
) {
    match agent::run(
        settings,
        &task.instruction,
        &running.url,
        token,
        out,
        task.agent_timeout(),
    )
    .await
    {
        Ok(end) => {
            result.agent_timed_out = end.timed_out;
            result.usage = end.usage;
            result.error = end.error;
        }
        Err(e) => {
            result.error = Some(e.to_string());
            return;
        }
    }
    let tests = task.dir.join("tests");
    let env = &task.config.verifier.env;
    match container::verify(running, &tests, env, task.verifier_timeout()).await {
        Ok(verdict) => {
            let _ = std::fs::write(out.join("test-stdout.txt"), &verdict.output);
            result.reward = verdict.reward;
            result.verdict = if verdict.reward.is_some_and(|r| r >= 1.0) {
                "passed"
            } else {
                "failed"
            };
            if verdict.timed_out {
                result.error.get_or_insert_with(|| {
                    format!(
                        "the tests ran past their {} s",
                        task.verifier_timeout().as_secs()
                    )
                });
            }
        }
        Err(e) => result.error = Some(format!("the tests could not run: {e}")),
    }
}

/// The task's prebuilt image, or its `environment/` built.
async fn prepare_image(task: &Task) -> Result<String, EvalError> {
    if let Some(image) = &task.config.environment.docker_image {
        return Ok(image.clone());
    }
    let tag = format!("cove-eval/{}:latest", docker_name(&task.name));
    container::build(&task.dir.join("environment"), &tag, task.build_timeout()).await?;
    Ok(tag)
}

/// `name` as Docker takes it in image and container names.
fn docker_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn line(r: &TaskResult) -> String {
    let mark = match r.verdict {
        "passed" => "✓",
        "failed" => "✗",
        _ => "!",
    };
    let reward = r.reward.map_or("—".to_string(), |v| format!("{v:.2}"));
    let tokens = cove_core::format::thousands(r.usage.input_tokens + r.usage.output_tokens);
    let cost = r
        .usage
        .cost_usd
        .map_or("no price".to_string(), |c| format!("${c:.4}"));
    let mut text = format!(
        "{mark} {:<28} {reward:>5}  {:>7.1} s  {tokens:>9} tokens  {cost}",
        r.task, r.seconds
    );
    if r.agent_timed_out {
        text.push_str("  (the agent reached the task's time limit)");
    }
    if let Some(error) = &r.error {
        text.push_str(&format!("\n    {error}"));
    }
    text
}

/// The summary as JSON, and as the line a person reads.
fn summarize(
    results: &[TaskResult],
    took: Duration,
    output: &std::path::Path,
) -> (serde_json::Value, String) {
    let passed = results.iter().filter(|r| r.verdict == "passed").count();
    let errors = results.iter().filter(|r| r.verdict == "error").count();
    let mean =
        results.iter().map(|r| r.reward.unwrap_or(0.0)).sum::<f64>() / results.len().max(1) as f64;
    let tokens: u64 = results
        .iter()
        .map(|r| r.usage.input_tokens + r.usage.output_tokens)
        .sum();
    let priced: Vec<f64> = results.iter().filter_map(|r| r.usage.cost_usd).collect();
    let cost = (!priced.is_empty()).then(|| priced.iter().sum::<f64>());
    let text = format!(
        "{passed} of {} passed{} (mean reward {mean:.2}) in {}: {} tokens, {}. Results: {}",
        results.len(),
        if errors > 0 {
            format!(", {errors} could not be run")
        } else {
            String::new()
        },
        humantime::format_duration(Duration::from_secs(took.as_secs())),
        cove_core::format::thousands(tokens),
        cost.map_or("no price".to_string(), |c| format!("${c:.4}")),
        output.display()
    );
    let summary = json!({
        "summary": {
            "tasks": results.len(),
            "passed": passed,
            "errors": errors,
            "mean_reward": mean,
            "seconds": took.as_secs_f64(),
            "tokens": tokens,
            "cost_usd": cost,
            "output": output,
        },
    });
    (summary, text)
}
