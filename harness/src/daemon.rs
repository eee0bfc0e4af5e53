//! Spawns real `coved` processes on a free port over a temporary workspace.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use cove_protocol::client::CovedClient;
use rustix::process::{Pid, Signal, kill_process};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

/// A fresh 256-bit token, as hex.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a daemon gets its token.
#[derive(Debug, Clone)]
enum TokenMode {
    Flag(String),
    Env(String),
    File(PathBuf),
    Generated,
}

/// Options for one daemon.
#[derive(Debug, Clone)]
pub struct DaemonBuilder {
    bin: PathBuf,
    workspace: Option<PathBuf>,
    token: TokenMode,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    /// `--listen`: a free port of loopback unless set.
    listen: String,
}

impl DaemonBuilder {
    /// A daemon from the binary at `bin`, with a random token passed by flag.
    pub fn new(bin: impl Into<PathBuf>) -> Self {
        DaemonBuilder {
            bin: bin.into(),
            workspace: None,
            token: TokenMode::Flag(random_token()),
            args: Vec::new(),
            env: Vec::new(),
            listen: "127.0.0.1:0".into(),
        }
    }

    /// Listen on `addr` (`127.0.0.1:PORT`) instead of a free port.
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.listen = addr.into();
        self
    }

    /// Serve this workspace instead of a fresh temporary one.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// Pass the token through `COVE_TOKEN` instead of `--token`.
    pub fn token_in_env(mut self, token: &str) -> Self {
        self.token = TokenMode::Env(token.to_string());
        self
    }

    /// Give no token but `--token-file`.
    pub fn token_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.token = TokenMode::File(file.into());
        self
    }

    /// Give no token at all: the daemon generates one into its state directory.
    pub fn generated_token(mut self) -> Self {
        self.token = TokenMode::Generated;
        self
    }

    /// An extra command-line argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// An extra environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Starts the daemon and waits until it listens.
    pub async fn spawn(self) -> Result<DaemonProcess> {
        let base = tempfile::Builder::new().prefix("cove-test-").tempdir()?;
        let workspace = match &self.workspace {
            Some(dir) => dir.clone(),
            None => base.path().join("workspace"),
        };
        let state_dir = base.path().join("state");
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--listen")
            .arg(&self.listen)
            .arg("--workspace")
            .arg(&workspace)
            .arg("--state-dir")
            .arg(&state_dir)
            .args(&self.args)
            .env_remove("COVE_TOKEN")
            .env_remove("COVE_TOKEN_FILE")
            .env("COVED_LOG", "coved=debug,info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match &self.token {
            TokenMode::Flag(t) => {
                cmd.arg("--token").arg(t);
            }
            TokenMode::Env(t) => {
                cmd.env("COVE_TOKEN", t);
            }
            TokenMode::File(f) => {
                cmd.arg("--token-file").arg(f);
            }
            TokenMode::Generated => {}
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;

        let stderr_log = Arc::new(Mutex::new(String::new()));
        if let Some(mut stderr) = child.stderr.take() {
            let log = stderr_log.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut log) = log.lock() {
                        log.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            });
        }
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .map_err(|_| anyhow!("coved printed no address within 20 s"))??;
        let Some(line) = first else {
            let status = child.wait().await?;
            let log = stderr_log.lock().map(|l| l.clone()).unwrap_or_default();
            bail!("coved exited ({status}) before listening:\n{log}");
        };
        let url = line
            .strip_prefix("coved listening on ")
            .ok_or_else(|| anyhow!("unexpected first line from coved: {line:?}"))?
            .to_string();
        // Keep draining stdout so the daemon never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

        let token = match &self.token {
            TokenMode::Flag(t) | TokenMode::Env(t) => t.clone(),
            TokenMode::File(f) => std::fs::read_to_string(f)?.trim().to_string(),
            TokenMode::Generated => std::fs::read_to_string(state_dir.join("token"))?
                .trim()
                .to_string(),
        };
        let client = CovedClient::new(&url, token.clone())?;
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| anyhow!("coved has no pid"))?;
        Ok(DaemonProcess {
            child,
            pid,
            url,
            token,
            workspace,
            state_dir,
            client,
            stderr: stderr_log,
            _base: base,
        })
    }
}

/// A running `coved`, killed when dropped.
#[derive(Debug)]
pub struct DaemonProcess {
    child: Child,
    pid: i32,
    pub url: String,
    pub token: String,
    pub workspace: PathBuf,
    pub state_dir: PathBuf,
    pub client: CovedClient,
    stderr: Arc<Mutex<String>>,
    _base: TempDir,
}

impl DaemonProcess {
    /// The daemon's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Absolute path of `rel` inside the workspace.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.workspace.join(rel)
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.workspace
    }

    /// Everything the daemon wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Waits up to 10 s for stderr to contain `needle` (it is captured asynchronously).
    pub async fn wait_for_stderr(&self, needle: &str) -> bool {
        for _ in 0..200 {
            if self.stderr().contains(needle) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// Sends SIGTERM and waits (up to 20 s) for the daemon to exit.
    pub async fn terminate(self) -> Result<ExitStatus> {
        self.stop_with(Signal::TERM).await
    }

    /// Sends `signal` and waits (up to 20 s) for the daemon to exit.
    pub async fn stop_with(mut self, signal: Signal) -> Result<ExitStatus> {
        let pid = Pid::from_raw(self.pid).ok_or_else(|| anyhow!("bad pid"))?;
        kill_process(pid, signal)?;
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .map_err(|_| anyhow!("coved still running 20 s after {signal:?}"))??;
        Ok(status)
    }

    /// Sends `signal` without waiting (SIGKILL, say, to see what survives the daemon).
    pub fn signal(&self, signal: Signal) -> Result<()> {
        let pid = Pid::from_raw(self.pid).ok_or_else(|| anyhow!("bad pid"))?;
        kill_process(pid, signal)?;
        Ok(())
    }
}

impl Drop for DaemonProcess {
    /// Stops the daemon the way an operator would (SIGTERM), so it can take its shells and
    /// browser down with it; SIGKILL (from `kill_on_drop`) only if it will not go.
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        if let Some(pid) = Pid::from_raw(self.pid) {
            let _ = kill_process(pid, Signal::TERM);
        }
        for _ in 0..250 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
