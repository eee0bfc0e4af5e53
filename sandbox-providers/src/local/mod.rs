//! The local sandbox: a `coved` this process starts over a workspace folder. By default it
//! runs walled in by bubblewrap ([`bwrap`]): namespaces of its own, the system read-only, the
//! controller's data, config and the user's credentials out of sight, an environment named
//! here and nothing inherited, and a network of its own that reaches the internet through
//! [`egress`] but not this machine's loopback services. `--sandbox host` runs it without
//! walls, as the user, and says so on every run.
//!
//! coved's listening socket is bound here, on this machine's loopback, and handed to it as a
//! descriptor: the controller (and a person's browser, for takeovers and previews) reach it
//! directly, with nothing relayed, though the sandbox has no route out.

mod config;
pub use config::local_settings;
pub mod bwrap;
pub mod egress;
pub mod env;
pub mod net_policy;
pub mod probe;

use std::ffi::OsString;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::SandboxError;
use bwrap::{Layout, Network};
use net_policy::NetPolicy;

/// How long coved has to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopping coved has to take its shells and browser down.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// How a local sandbox is walled in (`[local_sandbox]` of `cove.toml`).
#[derive(Debug, Clone, Default)]
pub struct LocalSettings {
    /// Its network: its own through the proxy (default), loopback only, or this machine's.
    pub network: Network,
    /// Destinations beyond the internet's public addresses.
    pub policy: NetPolicy,
    /// Ports of this machine's loopback the sandbox reaches at the same port of its own.
    pub host_ports: Vec<u16>,
    /// Variables given to the sandbox, by name and value.
    pub env: Vec<(String, String)>,
    /// More folders shown read-only, and writable.
    pub read_only: Vec<PathBuf>,
    pub writable: Vec<PathBuf>,
}

/// Whether the walls go up.
#[derive(Debug, Clone)]
pub enum Isolation {
    /// Namespaces, Landlock and seccomp, as these settings say.
    Walled(LocalSettings),
    /// None: coved runs as this user, on this machine (`--sandbox host`).
    Host,
}

/// The `coved` binary: `COVE_COVED_BIN`, beside this executable, or on `PATH`.
pub fn find_coved() -> Result<PathBuf, SandboxError> {
    if let Some(path) = std::env::var_os("COVE_COVED_BIN") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(SandboxError::DaemonMissing)
        };
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(beside) = exe.parent().map(|d| d.join("coved"))
        && beside.is_file()
    {
        return Ok(beside);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("coved"))
        .find(|p| p.is_file())
        .ok_or(SandboxError::DaemonMissing)
}

/// Makes the child die with this process, even when this process is killed outright (the
/// signal is tied to the forking thread: tokio forks on its long-lived worker threads), and
/// lets it inherit `keep`, the listening socket.
#[allow(unsafe_code)]
fn prepare_child(command: &mut Command, keep: RawFd) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec; it only makes the prctl(2),
    // getppid(2) and fcntl(2) system calls, which are async-signal-safe, and touches no
    // memory shared with the parent. `keep` is a descriptor the parent holds open for the
    // whole spawn.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::TERM))
                .map_err(std::io::Error::from)?;
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other(
                    "cove exited while coved was starting",
                ));
            }
            let fd = std::os::fd::BorrowedFd::borrow_raw(keep);
            rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())
                .map_err(std::io::Error::from)?;
            Ok(())
        });
    }
}

/// Where in the sandbox's home (kept with the workspace) coved keeps its checkpoints.
const CHECKPOINTS: &str = ".local/state/coved/checkpoints";

/// A coved this process started; stopped (SIGTERM) when dropped.
#[derive(Debug)]
pub struct LocalDaemon {
    child: Child,
    pid: i32,
    pub url: String,
    pub token: String,
    /// Whether walls are up around it.
    pub walled: bool,
    // What lives as long as the sandbox: the proxy, and the private folders (removed with
    // it; the home stays with the workspace).
    _egress: Option<egress::Egress>,
    _runtime: tempfile::TempDir,
    _tmp: Option<tempfile::TempDir>,
}

impl LocalDaemon {
    /// Starts coved over `workspace` (created if missing), listening on `listen`
    /// (`127.0.0.1:0` for a free port), walled in as `isolation` says.
    pub async fn start(
        workspace: &Path,
        isolation: &Isolation,
        listen: &str,
        log: Option<&Path>,
    ) -> Result<LocalDaemon, SandboxError> {
        let coved = find_coved()?;
        let startup =
            |what: &str, e: &dyn std::fmt::Display| SandboxError::Startup(format!("{what}: {e}"));
        let listener = TcpListener::bind(listen)
            .map_err(|e| startup(&format!("cannot listen on {listen}"), &e))?;
        let runtime = private_dir("cove-sandbox-")
            .map_err(|e| startup("cannot make a runtime folder", &e))?;
        let token = cove_store::new_id(24);
        let fd = listener.as_raw_fd();
        let mut coved_args: Vec<OsString> = vec![
            "--listen-fd".into(),
            fd.to_string().into(),
            "--workspace".into(),
            workspace.into(),
        ];
        let (mut command, vars, egress, tmp) = match isolation {
            Isolation::Host => {
                coved_args.extend(["--state-dir".into(), runtime.path().join("state").into()]);
                // Checkpoints outlive the sandbox: they stay with the workspace's home.
                let home = env::home_for(workspace)
                    .map_err(|e| startup("cannot make the sandbox's home", &e))?;
                coved_args.extend(["--checkpoints".into(), home.join(CHECKPOINTS).into()]);
                let mut command = Command::new(&coved);
                command.args(&coved_args);
                (command, env::host_env(&token), None, None)
            }
            Isolation::Walled(settings) => {
                let bwrap = probe::check()?;
                let mut guarded = vec![cove_config::data_dir(), cove_config::config_dir()];
                guarded.extend(std::env::var_os("HOME").map(PathBuf::from));
                for shared in settings.writable.iter().chain([&workspace.to_path_buf()]) {
                    if let Some(why) = bwrap::unfit_workspace(shared, &guarded) {
                        return Err(SandboxError::Startup(why));
                    }
                }
                let tmp = private_dir("cove-tmp-").map_err(|e| startup("cannot make /tmp", &e))?;
                let home = env::home_for(workspace)
                    .map_err(|e| startup("cannot make the sandbox's home", &e))?;
                let proxied = settings.network == Network::Proxied;
                let egress = if proxied {
                    let socket = runtime.path().join("egress.sock");
                    Some(
                        egress::Egress::start(&socket, settings.policy.clone())
                            .map_err(|e| startup("cannot open the sandbox's proxy", &e))?,
                    )
                } else {
                    None
                };
                coved_args.extend([
                    "--state-dir".into(),
                    format!("{}/state", bwrap::SANDBOX_RUN).into(),
                    "--checkpoints".into(),
                    format!("{}/{CHECKPOINTS}", bwrap::SANDBOX_HOME).into(),
                    "--confine".into(),
                ]);
                for path in &settings.writable {
                    coved_args.extend(["--writable".into(), path.into()]);
                }
                if proxied {
                    coved_args.extend([
                        "--egress-socket".into(),
                        format!("{}/egress.sock", bwrap::SANDBOX_RUN).into(),
                        "--proxy-port".into(),
                        bwrap::PROXY_PORT.to_string().into(),
                    ]);
                    for port in &settings.host_ports {
                        coved_args.extend(["--host-port".into(), port.to_string().into()]);
                    }
                }
                let layout = Layout {
                    coved: coved.clone(),
                    workspace: workspace.to_path_buf(),
                    home,
                    tmp: tmp.path().to_path_buf(),
                    runtime: runtime.path().to_path_buf(),
                    hidden: env::hidden_paths(),
                    read_only: settings.read_only.clone(),
                    writable: settings.writable.clone(),
                    network: settings.network,
                };
                let mut inside: Vec<OsString> = vec![bwrap::SANDBOX_COVED.into()];
                inside.extend(coved_args.iter().cloned());
                let mut command = Command::new(bwrap);
                command.args(layout.args(&inside));
                (
                    command,
                    env::sandbox_env(settings, &token),
                    egress,
                    Some(tmp),
                )
            }
        };
        prepare_child(&mut command, fd);
        let stderr = match log.and_then(open_log) {
            Some(file) => Stdio::from(file),
            None => Stdio::null(),
        };
        let walled = tmp.is_some();
        // Nothing of this process's environment goes in but what is named.
        let mut child = command
            .env_clear()
            .envs(vars)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| startup(&format!("cannot run {}", coved.display()), &e))?;
        // coved holds the socket now; this copy would only keep the port open after it died.
        drop(listener);
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| SandboxError::Startup("coved exited at once".into()))?;
        let url = read_address(&mut child, log).await?;
        Ok(LocalDaemon {
            child,
            pid,
            url,
            token,
            walled,
            _egress: egress,
            _runtime: runtime,
            _tmp: tmp,
        })
    }

    /// Stops coved and waits (up to 10 s) for it to take its shells and browser down.
    pub async fn stop(mut self) {
        // Inside walls, coved is bwrap's grandchild: it is the one to ask to stop, so it
        // stops its shells and browser itself; the walls fall when it exits.
        let target = if self.walled {
            probe::coved_inside(self.pid).unwrap_or(self.pid)
        } else {
            self.pid
        };
        if let Some(pid) = Pid::from_raw(target) {
            let _ = kill_process(pid, Signal::TERM);
        }
        if tokio::time::timeout(STOP_TIMEOUT, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
        }
    }

    /// Waits for coved to exit on its own.
    pub async fn wait(&mut self) {
        let _ = self.child.wait().await;
    }
}

impl Drop for LocalDaemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None))
            && let Some(pid) = Pid::from_raw(self.pid)
        {
            let _ = kill_process(pid, Signal::TERM);
        }
    }
}

/// A fresh folder only this user can enter.
fn private_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

fn open_log(path: &Path) -> Option<std::fs::File> {
    if let Some(parent) = path.parent() {
        let _ = cove_store::private_files::dir_all(parent);
    }
    cove_store::private_files::append(path).ok()
}

/// The address coved prints once it serves.
async fn read_address(child: &mut Child, log: Option<&Path>) -> Result<String, SandboxError> {
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| SandboxError::Startup("no output from coved".into()))?;
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(START_TIMEOUT, lines.next_line())
        .await
        .map_err(|_| {
            SandboxError::Startup(format!(
                "coved printed no address within {} s",
                START_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| SandboxError::Startup(e.to_string()))?;
    let url = first
        .and_then(|l| l.strip_prefix("coved listening on ").map(str::to_string))
        .ok_or_else(|| {
            SandboxError::Startup(match log {
                Some(log) => format!("coved did not start; see {}", log.display()),
                None => "coved did not start".to_string(),
            })
        })?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(url)
}
