//! Cove in Harbor, the runner of Terminal-Bench: the real `harbor` from PyPI (pinned, in
//! the venv `harness/install-harbor.sh` makes) runs a folder of tasks in Harbor's format,
//! each built from its own Dockerfile by the real Docker engine (Compose V2 from Debian
//! trixie), with `cove_harbor:CoveAgent` as the agent against the scripted model playing a
//! competent agent. Harbor's verifier scores what the agent left in each container. The
//! tasks' images (Debian minbase) have no Python, Node or curl: coved needs none of them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cove_harness::Turn;
use cove_harness::llm::Received;
use serde_json::{Value, json};

use super::real_docker::one_at_a_time;
use super::{Cove, Wire};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The venv and Docker config `harness/install-harbor.sh` makes.
fn harbor_bin() -> PathBuf {
    let bin = repo().join("target/test-deps/harbor/bin/harbor");
    assert!(
        bin.exists(),
        "no Harbor at {}: run harness/install-harbor.sh (harness/install-test-deps.sh runs it)",
        bin.display()
    );
    bin
}

fn docker_config() -> PathBuf {
    let dir = repo().join("target/test-deps/docker-config");
    assert!(
        dir.join("cli-plugins/docker-compose").exists(),
        "no Docker Compose V2 in {}: run harness/install-harbor.sh",
        dir.display()
    );
    dir
}

/// Where build-test-image.sh leaves the statically linked coved (it runs in any image).
fn static_coved() -> PathBuf {
    let path = repo().join("target/x86_64-unknown-linux-gnu/debug/coved");
    assert!(
        path.exists(),
        "no static coved at {}: run sandbox-image/build-test-image.sh",
        path.display()
    );
    path
}

/// Where Harbor writes a job's trials, and the home it runs with (made), in `scratch`.
fn jobs_and_home(scratch: &Path) -> (PathBuf, PathBuf) {
    let home = scratch.join("home");
    std::fs::create_dir_all(&home).unwrap();
    (scratch.join("jobs"), home)
}

/// The tasks named, from the examples and the tests' own, in one folder as Harbor takes them.
fn task_folder(into: &Path, names: &[&str]) -> PathBuf {
    let tasks = into.join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    for name in names {
        let from = [
            repo().join("integrations/harbor/example-tasks"),
            repo().join("harness/fixtures/harbor"),
        ]
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|dir| dir.exists())
        .unwrap_or_else(|| panic!("no task {name}"));
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(&from)
            .arg(&tasks)
            .status()
            .unwrap();
        assert!(status.success());
    }
    tasks
}

fn tool_results(request: &Received) -> usize {
    request.body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").count())
        .unwrap_or(0)
}

/// The commands a competent agent runs for each task, found by the task's own words; once
/// they have run it completes. For `reverse-lines` it writes a script that does not reverse.
fn competent_agent(request: &Received) -> Turn {
    let text = request.all_text();
    let commands: &[&str] = if text.contains("/app/server.conf") {
        &[
            "cat /app/server.conf",
            "sed -i 's/^port = eighty$/port = 8080/' /app/server.conf && cat /app/server.conf",
        ]
    } else if text.contains("/app/count_words.sh") {
        &[
            r#"printf '#!/bin/sh\nwc -w < "$1" | tr -d " "\n' > /app/count_words.sh && chmod +x /app/count_words.sh && /app/count_words.sh /app/count_words.sh"#,
        ]
    } else if text.contains("/app/test_math.sh") {
        &[
            "bash /app/test_math.sh; cat /app/math.sh",
            r"sed -i 's/\$(( \$1 - \$2 ))/$(( $1 + $2 ))/' /app/math.sh && bash /app/test_math.sh",
        ]
    } else if text.contains("/app/reverse.sh") {
        &[r#"printf '#!/bin/sh\ncat "$1"\n' > /app/reverse.sh && chmod +x /app/reverse.sh"#]
    } else if text.contains("/app/build.sh") {
        &["bash /app/build.sh"]
    } else {
        &[]
    };
    match commands.get(tool_results(request)) {
        Some(command) => Turn::text("").call(
            "execute_command",
            json!({"command": command, "timeout": 600}),
        ),
        None => Turn::text("").call("complete", json!({"text": "Done: checked and finished."})),
    }
}

/// `harbor run` of every task in `tasks` with Cove as the agent, 5 at once, with the model at
/// `model_url`; what it printed.
async fn run_harbor(
    cove: &Cove,
    tasks: &Path,
    jobs: &Path,
    home: &Path,
    model_url: &str,
) -> String {
    let agent = [
        "-e",
        "docker",
        "-a",
        "cove_harbor:CoveAgent",
        "-m",
        "openai/gpt-4o",
    ];
    run_harbor_with(cove, tasks, jobs, home, model_url, &agent).await
}

/// `harbor run ARGS` on `tasks`, 5 at once, on the machine's Docker engine, with Cove's
/// binaries and the model at `model_url` in its environment; what it printed.
async fn run_harbor_with(
    cove: &Cove,
    tasks: &Path,
    jobs: &Path,
    home: &Path,
    model_url: &str,
    args: &[&str],
) -> String {
    let mut harbor = tokio::process::Command::new(harbor_bin());
    harbor
        .args(["run", "-y", "-q", "-n", "5", "--job-name", "cove-e2e"])
        .args(args)
        .arg("-p")
        .arg(tasks)
        .arg("-o")
        .arg(jobs)
        .env("HOME", home)
        .env("COVE_DB", home.join("cove.db"))
        .env("DOCKER_CONFIG", docker_config())
        .env("COVE_BIN", &cove.bin)
        .env("COVE_COVED_BIN", static_coved())
        .env("OPENAI_BASE_URL", model_url)
        .env("OPENAI_API_KEY", "test-key")
        .env("COVE_LOG", "warn")
        // Harbor's price table is bundled; it would try GitHub first.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env_remove("DOCKER_HOST")
        .env_remove("COVE_MODEL")
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(900), harbor.output())
        .await
        .expect("harbor finished within 15 minutes")
        .unwrap();
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Each trial's `result.json`, by task name.
fn trial_results(jobs: &Path) -> Vec<(String, Value, PathBuf)> {
    let mut found = Vec::new();
    for job in std::fs::read_dir(jobs).unwrap().flatten() {
        for trial in std::fs::read_dir(job.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let result = trial.path().join("result.json");
            if trial.path().is_dir() && result.exists() {
                let value: Value =
                    serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
                let task = value["task_name"].as_str().unwrap_or_default().to_string();
                found.push((task, value, trial.path()));
            }
        }
    }
    found
}

fn find<'a>(
    results: &'a [(String, Value, PathBuf)],
    name: &str,
    said: &str,
) -> &'a (String, Value, PathBuf) {
    results
        .iter()
        .find(|(task, _, _)| task.ends_with(name))
        .unwrap_or_else(|| panic!("no trial of {name} in {results:#?}\n{said}"))
}

fn reward(result: &Value) -> Option<f64> {
    result["verifier_result"]["rewards"]["reward"].as_f64()
}

#[tokio::test]
async fn harbor_scores_coves_work_in_each_tasks_container_and_stops_a_hung_one() {
    let _engine = one_at_a_time().await;
    let cove = Cove::new(Wire::OpenAi).await;
    for _ in 0..40 {
        cove.llm.push_fn(competent_agent);
    }
    let scratch = tempfile::tempdir().unwrap();
    let tasks = task_folder(
        scratch.path(),
        &[
            "fix-config",
            "count-words",
            "fix-failing-test",
            "reverse-lines",
            "stuck-build",
        ],
    );
    let (jobs, home) = jobs_and_home(scratch.path());

    let said = run_harbor(&cove, &tasks, &jobs, &home, &cove.llm.openai_base_url()).await;

    let results = trial_results(&jobs);
    let by_task = |name: &str| find(&results, name, &said);
    for solved in ["fix-config", "count-words", "fix-failing-test"] {
        let (_, result, trial) = by_task(solved);
        assert_eq!(
            reward(result),
            Some(1.0),
            "{solved}: {result:#}\n{}",
            agent_logs(trial)
        );
        assert!(result["exception_info"].is_null(), "{solved}: {result:#}");
        check_agent_record(solved, result, trial);
    }
    let (_, wrong, trial) = by_task("reverse-lines");
    assert_eq!(reward(wrong), Some(0.0), "{wrong:#}\n{}", agent_logs(trial));
    assert!(wrong["exception_info"].is_null(), "{wrong:#}");

    let (_, hung, trial) = by_task("stuck-build");
    assert_eq!(
        hung["exception_info"]["exception_type"],
        "AgentTimeoutError",
        "{hung:#}\n{}",
        agent_logs(trial)
    );
    assert_ne!(reward(hung), Some(1.0), "{hung:#}");
    // Stopped at its timeout, not when the command it waits on would have ended.
    let ran = seconds_between(
        &hung["agent_execution"]["started_at"],
        &hung["agent_execution"]["finished_at"],
    );
    assert!(ran < 120.0, "the hung trial's agent ran {ran} s: {hung:#}");
    // The run it stopped is on record up to the command that hung.
    let events = std::fs::read_to_string(trial.join("agent/cove-events.jsonl")).unwrap();
    assert!(events.contains("bash /app/build.sh"), "{events}");
    let harbor_rewards: Vec<(String, Option<f64>)> = results
        .iter()
        .map(|(task, result, _)| (task.trim_start_matches("cove/").to_string(), reward(result)))
        .collect();
    same_verdicts_from_cove_eval(&cove, &tasks, scratch.path(), &harbor_rewards).await;

    // The cove the timeout interrupted is gone: no process has that trial's database.
    let trial_db = format!("COVE_DB={}", trial.join("agent/cove.db").display());
    let still: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|p| {
            std::fs::read(p.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == trial_db.as_bytes()))
        })
        .map(|p| p.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        still.is_empty(),
        "cove still runs after the timeout: pids {still:?}"
    );
    assert!(
        events.contains("\"thread_run_end\""),
        "the interrupted run's end is on record: {events}"
    );
}

/// Seconds from one of Harbor's RFC 3339 times to another.
fn seconds_between(start: &Value, end: &Value) -> f64 {
    let parse = |v: &Value| {
        let text = v.as_str().unwrap_or_else(|| panic!("not a time: {v}"));
        humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    };
    parse(end)
        .duration_since(parse(start))
        .map_or(0.0, |d| d.as_secs_f64())
}

fn agent_logs(trial: &Path) -> String {
    [
        "agent/cove.log",
        "agent/coved.log",
        "trial.log",
        "exception.txt",
    ]
    .iter()
    .map(|f| {
        let text = std::fs::read_to_string(trial.join(f)).unwrap_or_default();
        format!("--- {f}\n{}", tail(&text, 3000))
    })
    .collect::<Vec<_>>()
    .join("\n")
}

fn tail(text: &str, n: usize) -> &str {
    let start = text.len().saturating_sub(n);
    let start = (start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    &text[start..]
}

/// What Harbor keeps of a solved trial: Cove's events, an ATIF trajectory with the calls
/// and their results, the thread as a page, and the run's tokens and cost in its context.
fn check_agent_record(task: &str, result: &Value, trial: &Path) {
    let agent = trial.join("agent");
    let events = std::fs::read_to_string(agent.join("cove-events.jsonl")).unwrap();
    let ends: Vec<Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "thread_run_end")
        .collect();
    assert_eq!(ends.len(), 1, "{task}: {events}");
    let input = ends[0]["usage"]["input_tokens"].as_u64().unwrap();
    let context = &result["agent_result"];
    assert_eq!(
        context["n_input_tokens"].as_u64(),
        Some(input),
        "{task}: {result:#}"
    );
    assert!(input > 0);
    assert_eq!(
        context["n_output_tokens"].as_u64(),
        ends[0]["usage"]["output_tokens"].as_u64()
    );
    let cost = context["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - ends[0]["cost"].as_f64().unwrap()).abs() < 1e-9 && cost > 0.0,
        "{task}: {result:#}"
    );
    assert!(context["metadata"]["relay_requests"].as_u64().unwrap() > 0);
    assert_eq!(context["metadata"]["relay_failures"].as_u64(), Some(0));

    let atif: Value =
        serde_json::from_str(&std::fs::read_to_string(agent.join("trajectory.json")).unwrap())
            .unwrap();
    assert_eq!(atif["schema_version"], "ATIF-v1.8", "{atif:#}");
    assert_eq!(atif["agent"]["name"], "cove");
    let steps = atif["steps"].as_array().unwrap();
    assert_eq!(steps[0]["source"], "user");
    let calls: Vec<&Value> = steps
        .iter()
        .flat_map(|s| s["tool_calls"].as_array().into_iter().flatten())
        .collect();
    assert!(
        calls
            .iter()
            .any(|c| c["function_name"] == "execute_command"),
        "{atif:#}"
    );
    let observed: usize = steps
        .iter()
        .map(|s| s["observation"]["results"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(observed, calls.len(), "every call has its result: {atif:#}");
    assert_eq!(
        atif["final_metrics"]["total_prompt_tokens"].as_u64(),
        Some(input)
    );
    let page = std::fs::read_to_string(agent.join("thread.html")).unwrap();
    assert!(
        page.contains("execute_command"),
        "{task}: the thread's page"
    );
}

/// A container without bash (Harbor's Docker environment runs every command with `bash -c`)
/// and a model that cannot be reached: each trial ends with its reason, at once.
#[tokio::test]
async fn a_trial_that_cannot_work_ends_with_the_reason() {
    let _engine = one_at_a_time().await;
    let cove = Cove::new(Wire::OpenAi).await;
    let scratch = tempfile::tempdir().unwrap();
    let tasks = task_folder(scratch.path(), &["no-bash", "fix-config"]);
    let (jobs, home) = jobs_and_home(scratch.path());
    let closed = cove_harness::closed_port::ClosedPort::new().unwrap();
    let said = run_harbor(
        &cove,
        &tasks,
        &jobs,
        &home,
        &format!("http://{}/v1", closed.addr()),
    )
    .await;
    let results = trial_results(&jobs);

    let (_, no_bash, trial) = find(&results, "no-bash", &said);
    let exception = &no_bash["exception_info"];
    let message = exception["exception_message"].as_str().unwrap_or_default();
    assert!(
        message.contains("bash"),
        "the reason names bash: {no_bash:#}\n{}",
        agent_logs(trial)
    );

    let (_, down, trial) = find(&results, "fix-config", &said);
    let exception = &down["exception_info"];
    assert_eq!(
        exception["exception_type"],
        "CoveRunError",
        "{down:#}\n{}",
        agent_logs(trial)
    );
    let message = exception["exception_message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cove exited with 7")
            && message.contains(&closed.addr().port().to_string()),
        "the reason is cove's, with the model's address: {message}"
    );
    assert_eq!(cove.llm.request_count(), 0);
}

/// `cove eval` on the same folder, without Harbor: the same reward for each task, the hung
/// one stopped at its limit, and the tokens of each run.
async fn same_verdicts_from_cove_eval(
    cove: &Cove,
    tasks: &Path,
    scratch: &Path,
    harbor: &[(String, Option<f64>)],
) {
    for _ in 0..40 {
        cove.llm.push_fn(competent_agent);
    }
    let out = scratch.join("eval");
    let coved = static_coved();
    let mut cmd = cove.command(&[
        "--json",
        "eval",
        tasks.to_str().unwrap(),
        "--model",
        "openai/gpt-4o",
        "--coved",
        coved.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    cmd.env_remove("DOCKER_HOST");
    let output = tokio::time::timeout(Duration::from_secs(600), cmd.output())
        .await
        .expect("cove eval finished within 10 minutes")
        .unwrap();
    let said = super::explain(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "not every task passed: {said}"
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (summary, per_task) = lines.split_last().unwrap();
    assert_eq!(per_task.len(), harbor.len(), "{said}");
    for (task, reward) in harbor {
        let ours = per_task
            .iter()
            .find(|r| r["task"] == task.as_str())
            .unwrap_or_else(|| panic!("no line for {task}: {said}"));
        let hung = task == "stuck-build";
        assert_eq!(
            ours["reward"].as_f64(),
            reward.or(Some(0.0)),
            "{task}: Harbor said {reward:?}, cove eval {ours:#}"
        );
        assert_eq!(ours["agent_timed_out"], hung, "{ours:#}");
        assert_eq!(
            ours["verdict"],
            if *reward == Some(1.0) {
                "passed"
            } else {
                "failed"
            }
        );
        if !hung {
            assert!(ours["input_tokens"].as_u64().unwrap() > 0, "{ours:#}");
            assert!(ours["cost_usd"].as_f64().unwrap() > 0.0, "{ours:#}");
        }
        let kept = PathBuf::from(ours["output"].as_str().unwrap());
        assert!(kept.join("events.jsonl").exists() && kept.join("test-stdout.txt").exists());
    }
    assert_eq!(summary["summary"]["passed"], 3, "{summary:#}");
    assert_eq!(summary["summary"]["errors"], 0, "{summary:#}");
    let left = super::real_docker::docker(&["ps", "-aq", "--filter", "name=cove-eval-"]);
    assert!(
        left.stdout.is_empty(),
        "containers left behind: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

/// The relay's own tests (integrations/harbor/tests), in Harbor's Python, against a real
/// coved: a request too large for a command line, an answer too large for one, a request
/// abandoned when the trial ends, no coved to reach.
#[tokio::test]
async fn the_relay_carries_what_a_command_line_cannot() {
    let coved = cove_harness::workspace_binary("coved").unwrap();
    let daemon = cove_harness::DaemonBuilder::new(&coved)
        .spawn()
        .await
        .unwrap();
    let python = harbor_bin().with_file_name("python");
    let port = daemon
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let out = tokio::process::Command::new(python)
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(repo().join("integrations/harbor/tests"))
        .current_dir(repo().join("integrations/harbor"))
        .env("COVED_BIN", &coved)
        .env("COVED_PORT", port)
        .env("COVED_TOKEN", &daemon.token)
        .env("COVED_WORKSPACE", daemon.root())
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("Ran 3 tests"), "{said}");
}

/// Another agent's trials on Cove's sandboxes: Harbor's oracle solves the example tasks in
/// `cove_harbor:CoveEnvironment` (each task's image with the static coved added, made by
/// `cove sandbox create` on the Docker provider; commands and files through coved), a task
/// that needs root's powers over others' files included (the engine's capabilities), which
/// fails with Cove's hardening kept; Cove as the agent there uses the sandbox's own coved;
/// nothing is left behind.
#[tokio::test]
async fn harbors_oracle_solves_the_tasks_in_coves_sandboxes() {
    let _engine = one_at_a_time().await;
    let cove = Cove::new(Wire::OpenAi).await;
    let scratch = tempfile::tempdir().unwrap();
    let tasks = task_folder(
        scratch.path(),
        &[
            "fix-config",
            "count-words",
            "fix-failing-test",
            "needs-root",
        ],
    );
    let (jobs, home) = jobs_and_home(scratch.path());
    let args = ["-e", "cove_harbor:CoveEnvironment", "-a", "oracle"];
    let said = run_harbor_with(
        &cove,
        &tasks,
        &jobs,
        &home,
        &cove.llm.openai_base_url(),
        &args,
    )
    .await;
    let results = trial_results(&jobs);
    for task in [
        "fix-config",
        "count-words",
        "fix-failing-test",
        "needs-root",
    ] {
        let (_, result, trial) = find(&results, task, &said);
        assert_eq!(
            reward(result),
            Some(1.0),
            "{task}: {result:#}\n{}",
            agent_logs(trial)
        );
        // The solution's output came back from the sandbox as Harbor's own environments bring it.
        assert!(trial.join("agent/oracle.txt").exists(), "{task}");
        assert!(trial.join("verifier/test-stdout.txt").exists(), "{task}");
    }
    // With Cove's hardening kept, root holds no power over others' files.
    let hardened = task_folder(&scratch.path().join("hardened"), &["needs-root"]);
    let jobs3 = scratch.path().join("jobs3");
    let args = [
        "-e",
        "cove_harbor:CoveEnvironment",
        "--ek",
        "engine_capabilities=false",
        "-a",
        "oracle",
    ];
    let said = run_harbor_with(
        &cove,
        &hardened,
        &jobs3,
        &home,
        &cove.llm.openai_base_url(),
        &args,
    )
    .await;
    let results3 = trial_results(&jobs3);
    let (_, result, _) = find(&results3, "needs-root", &said);
    assert_eq!(reward(result), Some(0.0), "{result:#}");

    // Cove as the agent there takes the sandbox's own coved: nothing relayed.
    for _ in 0..10 {
        cove.llm.push_fn(competent_agent);
    }
    let one = task_folder(&scratch.path().join("one"), &["fix-config"]);
    let jobs2 = scratch.path().join("jobs2");
    let args = [
        "-e",
        "cove_harbor:CoveEnvironment",
        "-a",
        "cove_harbor:CoveAgent",
        "-m",
        "openai/gpt-4o",
    ];
    let said = run_harbor_with(
        &cove,
        &one,
        &jobs2,
        &home,
        &cove.llm.openai_base_url(),
        &args,
    )
    .await;
    let results2 = trial_results(&jobs2);
    let (_, result, trial) = find(&results2, "fix-config", &said);
    assert_eq!(
        reward(result),
        Some(1.0),
        "{result:#}\n{}",
        agent_logs(trial)
    );
    assert_eq!(
        result["agent_result"]["metadata"]["relay_requests"], 0,
        "{result:#}"
    );
    assert!(result["agent_result"]["n_input_tokens"].as_u64().unwrap() > 0);

    let listed = cove
        .command(&["--json", "sandbox", "ls"])
        .env("COVE_DB", home.join("cove.db"))
        .output()
        .await
        .unwrap();
    assert!(listed.status.success(), "{}", super::explain(&listed));

    let listed = String::from_utf8_lossy(&listed.stdout);
    let made: Vec<Value> = listed
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|row| row["kind"] == "docker")
        .collect();
    assert!(made.is_empty(), "sandboxes left: {listed}");
    for task in [
        "fix-config",
        "count-words",
        "fix-failing-test",
        "needs-root",
    ] {
        let image = format!("ancestor=hb-cove__{task}-cove");
        let left = super::real_docker::docker(&["ps", "-aq", "--filter", &image]);
        assert!(left.stdout.is_empty(), "{task}'s container left behind");
    }
}
