//! Finding and starting Chromium: the daemon's own flags, a fresh profile, its own process
//! group (so the whole browser tree can be killed at once), and DevTools over a pipe (see
//! [`super::pipe`]): no debugging port.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::oneshot;

use super::BrowserError;
use super::pipe::DevtoolsPipes;
use crate::procs::ChildRegistry;

/// Executables tried, in order, when none is configured.
const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
];
/// How long the CDP client may take to connect to the pipe's bridge.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Lines of Chromium's stderr kept to explain a failed start.
const STDERR_LINES_KEPT: usize = 20;

/// The Chromium executable: the configured one, or the first candidate on `PATH`.
pub fn find(configured: Option<&Path>) -> Result<PathBuf, BrowserError> {
    if let Some(path) = configured {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(BrowserError::Unavailable(format!(
                "the configured Chromium {} does not exist",
                path.display()
            )))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in CANDIDATES {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(BrowserError::Unavailable(
        "Chromium is not installed: install it (Debian: apt-get install chromium) or pass --chromium PATH"
            .into(),
    ))
}

/// Forks Chromium from one thread that lives as long as the browser manager.
///
/// Chromium runs in its own process group (so its whole tree can be killed at once), which
/// also means it would outlive a coved killed with SIGKILL. The kernel's parent-death
/// signal prevents that, but it fires when the *thread* that forked the child ends, so the
/// fork must happen on a thread that does not come and go like the runtime's helpers.
pub struct Launcher {
    requests: std::sync::mpsc::Sender<(
        std::process::Command,
        oneshot::Sender<std::io::Result<std::process::Child>>,
    )>,
}

impl Launcher {
    /// Starts the launcher thread.
    pub fn new() -> std::io::Result<Launcher> {
        let (requests, incoming) = std::sync::mpsc::channel::<(
            std::process::Command,
            oneshot::Sender<std::io::Result<std::process::Child>>,
        )>();
        std::thread::Builder::new()
            .name("chromium-launcher".into())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })?;
        Ok(Launcher { requests })
    }

    async fn spawn(&self, command: std::process::Command) -> std::io::Result<std::process::Child> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send((command, reply))
            .map_err(|_| std::io::Error::other("the Chromium launcher thread is gone"))?;
        answer
            .await
            .map_err(|_| std::io::Error::other("the Chromium launcher thread is gone"))?
    }
}

/// Makes the child die with coved, even when coved is killed outright.
#[allow(unsafe_code)]
fn die_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec; it only makes the prctl(2)
    // and getppid(2) system calls, which are async-signal-safe, and touches no memory
    // shared with the parent.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
                .map_err(std::io::Error::from)?;
            // The parent may have died between fork and prctl; then nobody would kill us.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other(
                    "coved exited while Chromium was starting",
                ));
            }
            Ok(())
        });
    }
}

/// A running Chromium process tree.
#[derive(Debug)]
pub struct Chromium {
    pub pid: i32,
    /// The one-shot WebSocket in front of the DevTools pipe.
    pub ws_url: String,
    /// Cleared when the process exits.
    pub alive: Arc<AtomicBool>,
    /// The first lines Chromium wrote to stderr.
    stderr_head: Arc<std::sync::Mutex<Vec<String>>>,
    // The profile lives as long as the browser; removed on drop.
    _profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts Chromium headless with a fresh profile, DevTools on a pipe.
    pub async fn launch(
        launcher: &Launcher,
        executable: &Path,
        settings: &super::BrowserSettings,
        registry: &Arc<ChildRegistry>,
    ) -> Result<Chromium, BrowserError> {
        let super::Viewport { width, height } = settings.viewport;
        let profile = tempfile::Builder::new()
            .prefix("coved-chromium-")
            .tempdir()
            .map_err(|e| {
                BrowserError::Unavailable(format!("cannot create a profile directory: {e}"))
            })?;
        let mut cmd = std::process::Command::new(executable);
        cmd.args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            // No back/forward cache: a page Back brings back is requested again, so a
            // takeover's guard sees it (a cached one would come back live, unchecked).
            "--disable-features=Translate,MediaRouter,OptimizationHints,BackForwardCache",
            // A page of the web opens no connection to the sandbox's loopback or private
            // addresses (WebSockets included, which no request interception sees).
            "--enable-features=LocalNetworkAccessChecks",
            "--password-store=basic",
            "--use-mock-keychain",
            "--hide-scrollbars",
            "--mute-audio",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(settings.proxy.iter().map(|p| format!("--proxy-server={p}")))
        .arg("about:blank")
        .env_remove("COVE_TOKEN")
        .env_remove("COVE_TOKEN_FILE")
        .env_remove(cove_telemetry::SECRET_VARS[0])
        .env_remove(cove_telemetry::SECRET_VARS[1])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        // Its own process group: the browser and every helper it forks die together.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        die_with_parent(&mut cmd);
        let pipes = DevtoolsPipes::new().map_err(|e| {
            BrowserError::Unavailable(format!("cannot create the DevTools pipes: {e}"))
        })?;
        pipes.install(&mut cmd);
        let mut child = launcher.spawn(cmd).await.map_err(|e| {
            BrowserError::Unavailable(format!("cannot start {}: {e}", executable.display()))
        })?;
        let pid = i32::try_from(child.id())
            .map_err(|_| BrowserError::Unavailable("Chromium has no usable pid".into()))?;
        registry.register(pid);

        let stderr = child
            .stderr
            .take()
            .and_then(|e| tokio::process::ChildStderr::from_std(e).ok())
            .ok_or_else(|| BrowserError::Unavailable("no stderr from Chromium".into()))?;
        let alive = Arc::new(AtomicBool::new(true));
        {
            let alive = alive.clone();
            let registry = registry.clone();
            std::thread::Builder::new()
                .name("chromium-wait".into())
                .spawn(move || {
                    let status = child.wait();
                    alive.store(false, Ordering::SeqCst);
                    registry.unregister(pid);
                    tracing::info!(?status, "Chromium exited");
                    // Helpers that outlived the main process.
                    kill_group(pid);
                })
                .map_err(|e| BrowserError::Unavailable(format!("cannot watch Chromium: {e}")))?;
        }
        let stderr_head = Arc::new(std::sync::Mutex::new(Vec::new()));
        {
            let head = stderr_head.clone();
            // Keep draining stderr so Chromium never blocks on a full pipe.
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut head) = head.lock()
                        && head.len() < STDERR_LINES_KEPT
                    {
                        head.push(line.clone());
                    }
                    tracing::trace!(target: "chromium", "{line}");
                }
            });
        }
        let ws_url = match pipes.bridge(CONNECT_TIMEOUT).await {
            Ok(url) => url,
            Err(e) => {
                kill_group(pid);
                return Err(BrowserError::Unavailable(format!(
                    "cannot bridge Chromium's DevTools pipe: {e}"
                )));
            }
        };
        Ok(Chromium {
            pid,
            ws_url,
            alive,
            stderr_head,
            _profile: profile,
        })
    }

    /// Whether the main process is still running.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// What Chromium said on stderr as it started, for an error message.
    pub fn said(&self) -> String {
        self.stderr_head
            .lock()
            .map(|head| head.join(" | "))
            .unwrap_or_default()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        kill_group(self.pid);
    }
}

/// SIGKILLs Chromium's whole process group.
pub fn kill_group(pgid: i32) {
    if let Some(pgid) = Pid::from_raw(pgid) {
        let _ = kill_process_group(pgid, Signal::KILL);
    }
}
