//! What the end-to-end tests share: a `cove` over a scratch data folder and the scripted
//! model, and readers of its output.

use super::*;

/// A 1x1 red PNG.
pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

pub(crate) struct Cove {
    pub(crate) bin: PathBuf,
    pub(crate) home: tempfile::TempDir,
    pub(crate) workspace: PathBuf,
    pub(crate) llm: ScriptedLlm,
    pub(crate) wire: Wire,
    /// Ports of this machine's loopback its local sandboxes reach (the fixture sites).
    pub(crate) host_ports: std::sync::Mutex<Vec<u16>>,
}

impl Cove {
    pub(crate) async fn new(wire: Wire) -> Cove {
        let home = tempfile::tempdir().unwrap();
        let workspace = home.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        Cove {
            bin: workspace_binary("cove").unwrap(),
            // The daemon is found beside cove; make sure it is built.
            workspace,
            home,
            llm: {
                workspace_binary("coved").unwrap();
                ScriptedLlm::start().await.unwrap()
            },
            wire,
            host_ports: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Lets its local sandboxes reach this machine's `port` (a fixture site), as a user
    /// shares a port with `COVE_HOST_PORTS`.
    pub(crate) fn share_port(&self, port: u16) {
        self.host_ports.lock().unwrap().push(port);
    }

    pub(crate) fn model(&self) -> &'static str {
        match self.wire {
            Wire::OpenAi => "openai/scripted",
            Wire::Anthropic => "anthropic/scripted",
        }
    }

    pub(crate) fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.bin);
        let home = self.home.path();
        cmd.args(args)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("COVE_DB", home.join("cove.db"))
            .env("OPENAI_BASE_URL", self.llm.openai_base_url())
            .env("OPENAI_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", self.llm.anthropic_base_url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("COVE_LOG", "warn")
            .env("COVE_VISION", "true")
            .env_remove("COVE_MODEL")
            .env_remove("COVE_SANDBOX_URL")
            .env_remove("COVE_SANDBOX_TOKEN")
            .env_remove("COVE_WORKSPACE")
            .env_remove("COVE_CONFIG")
            .env(
                "COVE_HOST_PORTS",
                self.host_ports
                    .lock()
                    .unwrap()
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// `cove ARGS` on the running coved `daemon` as its sandbox (which outlives cove).
    pub(crate) fn on_daemon(
        &self,
        daemon: &cove_harness::DaemonProcess,
        args: &[&str],
    ) -> tokio::process::Command {
        let mut args = args.to_vec();
        args.extend(["--sandbox", daemon.url.as_str()]);
        let mut cmd = self.command(&args);
        cmd.env("COVE_SANDBOX_TOKEN", &daemon.token);
        cmd
    }

    pub(crate) async fn run(&self, args: &[&str]) -> Output {
        tokio::time::timeout(Duration::from_secs(180), self.command(args).output())
            .await
            .expect("cove finished within 3 minutes")
            .unwrap()
    }

    pub(crate) async fn start_task(&self, task: &str, mode: &str) -> Output {
        self.start_task_with(task, mode, &[], &[]).await
    }

    /// `cove run TASK` with more flags and environment, as JSON events.
    pub(crate) async fn start_task_with(
        &self,
        task: &str,
        mode: &str,
        flags: &[&str],
        env: &[(&str, String)],
    ) -> Output {
        let ws = self.workspace.to_str().unwrap().to_string();
        let mut args = vec![
            "--json",
            "run",
            task,
            "--model",
            self.model(),
            "--tool-calls",
            mode,
            "--workspace",
            &ws,
            "--no-prompt",
        ];
        args.extend_from_slice(flags);
        let mut cmd = self.command(&args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        tokio::time::timeout(Duration::from_secs(180), cmd.output())
            .await
            .expect("cove finished within 3 minutes")
            .unwrap()
    }
}

pub(crate) fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

pub(crate) fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .filter(|t| t != "assistant_text")
        .collect()
}

pub(crate) fn thread_of(events: &[Value]) -> String {
    events[0]["thread_id"].as_str().unwrap().to_string()
}

pub(crate) fn explain(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The index of the element whose line contains `needle`, in the last message sent.
pub(crate) fn index_in_last_message(text: &str, needle: &str) -> u32 {
    cove_harness::browser_text::index_of(text, needle)
        .unwrap_or_else(|| panic!("no {needle:?} in the page state:\n{text}"))
}

pub(crate) fn stored(out: &Output) -> Vec<Value> {
    events(out)
}

pub(crate) fn llm_unused(llm: &ScriptedLlm) -> bool {
    llm.received().is_empty()
}

/// Reads a running cove's JSON events as they come.
pub(crate) struct EventReader {
    pub(crate) lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    pub(crate) seen: Vec<Value>,
}

impl EventReader {
    pub(crate) fn new(child: &mut tokio::process::Child) -> EventReader {
        use tokio::io::AsyncBufReadExt;
        let stdout = child.stdout.take().unwrap();
        EventReader {
            lines: tokio::io::BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }

    /// Reads until an event of `kind`; returns it.
    pub(crate) async fn until(&mut self, kind: &str) -> Value {
        let from = self.seen.len();
        self.until_seen(|seen| seen[from..].iter().any(|e| e["type"] == kind))
            .await;
        self.seen.last().cloned().unwrap_or_default()
    }

    /// Reads until what was seen satisfies `done`.
    pub(crate) async fn until_seen(&mut self, done: impl Fn(&[Value]) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while !done(&self.seen) {
            let line = tokio::time::timeout_at(deadline, self.lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("not seen in time; saw {:?}", kinds(&self.seen)))
                .unwrap()
                .unwrap_or_else(|| panic!("cove ended before it; saw {:?}", kinds(&self.seen)));
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
    }

    /// Reads to the end.
    pub(crate) async fn rest(&mut self) -> Vec<Value> {
        while let Ok(Some(line)) =
            tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
                .await
                .unwrap()
        {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        self.seen.clone()
    }
}

/// Follows a preview link as a browser would: the token traded for the cookie, then the page.
pub(crate) async fn reqwest_like_get(link: &str) -> String {
    let http = cove_harness::preview::client(&[link]);
    let (cookie, location) = cove_harness::preview::trade_link(&http, link)
        .await
        .unwrap();
    let origin = cove_harness::preview::origin(link);
    http.get(format!("{origin}{location}"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}
