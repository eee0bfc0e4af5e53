//! `coved`: the Cove sandbox daemon.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use cove_protocol::browser::Viewport;
use coved::auth::{TokenSource, resolve_token};
use coved::preview::origins::PublicUrl;
use coved::{Daemon, DaemonConfig};
use tokio::signal::unix::{SignalKind, signal};
use tracing_subscriber::EnvFilter;

/// The Cove sandbox daemon: shell sessions, files, a browser, vision and browser takeover
/// over authenticated HTTP.
#[derive(Debug, Parser)]
#[command(name = "coved", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// Address to listen on. Port 0 picks a free port; the address is printed on stdout.
    #[arg(long, env = "COVED_LISTEN", default_value = "127.0.0.1:7700")]
    listen: SocketAddr,

    /// Serve on this inherited file descriptor, a TCP socket already listening (the local
    /// sandbox's controller binds it outside the sandbox's network), instead of --listen.
    #[arg(long)]
    listen_fd: Option<i32>,

    /// Restrict coved and everything it starts before serving: writes only under the
    /// workspace, the state folder, /tmp, $HOME, /dev and --writable (Landlock), and the
    /// system calls an agent has no use for refused (seccomp).
    #[arg(long)]
    confine: bool,

    /// Another folder writable under --confine.
    #[arg(long, requires = "confine")]
    writable: Vec<PathBuf>,

    /// The controller's unix socket the network is reached through, when the sandbox's own
    /// network is only loopback: coved relays --proxy-port and each --host-port to it.
    #[arg(long)]
    egress_socket: Option<PathBuf>,

    /// Port of 127.0.0.1 where the sandbox's HTTP proxy listens (with --egress-socket);
    /// the browser uses it.
    #[arg(long, requires = "egress_socket")]
    proxy_port: Option<u16>,

    /// A port of the host's loopback reached at the same port of the sandbox's (with
    /// --egress-socket).
    #[arg(long, requires = "egress_socket")]
    host_port: Vec<u16>,

    /// Workspace root: every file path is relative to it, shells start in it. Created if missing.
    #[arg(
        long,
        env = "COVED_WORKSPACE",
        default_value = "/workspace",
        global = true
    )]
    workspace: PathBuf,

    /// Bearer token clients must send (32 characters or more). Takes precedence over
    /// --token-file. Prefer COVE_TOKEN or a file: a flag is visible in the process list.
    #[arg(long, env = "COVE_TOKEN", hide_env_values = true)]
    token: Option<String>,

    /// File holding the token; if it does not exist, a token is generated into it (mode 0600).
    #[arg(long, env = "COVE_TOKEN_FILE")]
    token_file: Option<PathBuf>,

    /// Directory for the daemon's state; the generated token is stored here by default.
    #[arg(long, env = "COVED_STATE_DIR")]
    state_dir: Option<PathBuf>,

    /// The checkpoint store's folder, outside the workspace (default: in the state folder,
    /// one per workspace).
    #[arg(long, env = "COVED_CHECKPOINTS", global = true)]
    checkpoints: Option<PathBuf>,

    /// Bytes the checkpoint store may hold before its oldest checkpoints not kept are
    /// dropped (default: twice the workspace, at least 1 GiB).
    #[arg(long, env = "COVED_CHECKPOINT_CAP", global = true)]
    checkpoint_cap: Option<u64>,

    /// Shell for sessions: bash (default, /bin/bash), or any POSIX shell (where an image has
    /// no bash, /bin/sh is taken: busybox ash, dash).
    #[arg(long, env = "COVED_SHELL")]
    shell: Option<PathBuf>,

    /// Most shell sessions alive at once.
    #[arg(long, default_value_t = 64)]
    max_sessions: usize,

    /// Most output bytes one shell answer carries; beyond it head and tail are kept.
    #[arg(long, default_value_t = 1024 * 1024)]
    max_output_bytes: usize,

    /// Largest upload, in bytes.
    #[arg(long, default_value_t = 1024 * 1024 * 1024)]
    max_upload_bytes: u64,

    /// Largest JSON request body, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    max_request_bytes: usize,

    /// Largest file read as text, in bytes.
    #[arg(long, default_value_t = 32 * 1024 * 1024)]
    max_read_bytes: u64,

    /// Chromium executable for the browser endpoints (default: chromium on PATH).
    #[arg(long, env = "COVED_CHROMIUM", global = true)]
    chromium: Option<PathBuf>,

    /// The keyless engine web searches read with the browser (duckduckgo, mojeek).
    #[arg(
        long,
        env = "COVED_SEARCH_ENGINE",
        default_value = "duckduckgo",
        global = true
    )]
    search_engine: String,

    /// Another results page with the engine's markup (a mirror), `{query}` where the query goes.
    #[arg(long, env = "COVED_SEARCH_URL", global = true)]
    search_url: Option<String>,

    /// Seconds one web page's download may take (`/v1/web/fetch`).
    #[arg(
        long,
        env = "COVED_FETCH_TIMEOUT_SECS",
        default_value_t = 30,
        global = true
    )]
    fetch_timeout_secs: u64,

    /// Browser viewport, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_parser = parse_viewport)]
    browser_viewport: Viewport,

    /// Deadline of each browser action, in seconds.
    #[arg(long, default_value_t = 30)]
    browser_timeout_secs: u64,

    /// How long a page's JavaScript dialog (alert, confirm, prompt) waits for an answer
    /// before it is dismissed, in seconds.
    #[arg(long, default_value_t = 120)]
    dialog_timeout_secs: u64,

    /// Cap on the characters of the browser state's element list.
    #[arg(long, default_value_t = cove_protocol::browser::DEFAULT_ELEMENTS_CAP)]
    elements_cap: usize,

    /// How long a browser takeover (and its link) lasts unless the caller says, in seconds.
    #[arg(long, env = "COVED_TAKEOVER_TTL_SECS", default_value_t = cove_protocol::takeover::DEFAULT_TAKEOVER_TTL_SECS)]
    takeover_ttl_secs: u64,

    /// This daemon's address as people reach it (e.g. https://sandbox-7.example.com), for
    /// takeover and preview links; by default the address the controller used.
    #[arg(long, env = "COVED_PUBLIC_URL", value_parser = parse_public_url)]
    public_url: Option<PublicUrl>,

    /// Serve previews without a token (when something in front of the daemon already
    /// guards them).
    #[arg(long, env = "COVED_PREVIEW_PUBLIC")]
    preview_public: bool,

    /// Most connections open at once; past it new ones are closed at once.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,

    /// Seconds a connection may stay without sending a request head (a half-sent request, an
    /// idle kept-alive connection) before it is closed.
    #[arg(long, default_value_t = 30)]
    idle_timeout_secs: u64,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the sandbox's tools over MCP on stdin and stdout (for an MCP host that starts
    /// coved itself), instead of the HTTP API. Logs go to stderr.
    Mcp,
    /// Send one request to a coved listening on this machine's loopback and print its
    /// answer as one JSON line (bodies in base64): the API over any exec, for controllers
    /// that reach the sandbox only by running commands in it.
    Call(coved::relay::CallArgs),
    /// Read one page from stdin within this process's limits (the daemon runs this for each
    /// page it fetches; not for people).
    #[command(hide = true)]
    ReadPage(coved::web::reader::ReadArgs),
}

fn parse_viewport(raw: &str) -> Result<Viewport, String> {
    let (w, h) = raw
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{raw:?} is not WIDTHxHEIGHT"))?;
    let parse = |v: &str| v.trim().parse::<u32>().map_err(|e| format!("{v:?}: {e}"));
    let (width, height) = (parse(w)?, parse(h)?);
    if !(200..=7680).contains(&width) || !(200..=4320).contains(&height) {
        return Err(format!("{width}x{height} is not a sensible viewport"));
    }
    Ok(Viewport { width, height })
}

fn parse_public_url(raw: &str) -> Result<PublicUrl, String> {
    PublicUrl::parse(raw)
}

async fn shutdown_signal() {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM/SIGINT; stop coved with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
}

fn main() -> anyhow::Result<()> {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches)?;
    if let Some(Command::ReadPage(args)) = &cli.command {
        // Before any thread exists: the reader limits its own process.
        return Ok(coved::web::reader::child_main(args)?);
    }
    if let Some(Command::Call(args)) = &cli.command {
        // A client of the daemon, not the daemon: no confinement, telemetry or logs.
        std::process::exit(coved::relay::main(args));
    }
    // In a container too, where nothing else walls coved in from the agent's processes.
    coved::confine::undumpable().context("cannot close coved to its own user's processes")?;
    // Before the runtime starts its threads: Landlock binds only the calling thread.
    let confined = if cli.confine {
        Some(
            coved::confine::confine(&writable_roots(&cli))
                .context("cannot confine coved (--confine)")?,
        )
    } else {
        None
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The exporter sends from the runtime: installed inside it.
    let telemetry = runtime.block_on(async { install_telemetry() });
    if let Some(confined) = confined {
        tracing::info!(
            landlock = confined.landlock,
            syscalls_refused = confined.syscalls_refused,
            "confined"
        );
    }
    let served = runtime.block_on(run(cli, matches));
    telemetry.shutdown(std::time::Duration::from_secs(2));
    served
}

/// Logs to stderr (`COVED_LOG`, `info` by default) and, when the `OTEL_*` environment names
/// a collector, coved's spans to it; a setting that cannot work is logged and left off.
fn install_telemetry() -> cove_telemetry::export::Installed {
    let logs = EnvFilter::try_from_env("COVED_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let (installed, why) = cove_telemetry::export::install_configured(logs, None, "coved");
    if let Some(why) = why {
        tracing::warn!("traces are not exported: {why}");
    }
    installed
}

/// What coved and its children may write under --confine.
fn writable_roots(cli: &Cli) -> Vec<PathBuf> {
    let mut roots = vec![
        cli.workspace.clone(),
        cli.state_dir
            .clone()
            .unwrap_or_else(coved::default_state_dir),
        PathBuf::from("/tmp"),
        PathBuf::from("/dev"),
        PathBuf::from("/proc"),
    ];
    roots.extend(std::env::var_os("HOME").map(PathBuf::from));
    roots.extend(cli.checkpoints.iter().cloned());
    roots.extend(cli.writable.iter().cloned());
    roots
}

/// The listening socket the spawner handed over as descriptor `fd`.
#[allow(unsafe_code)]
fn inherited_listener(fd: i32) -> anyhow::Result<tokio::net::TcpListener> {
    use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};
    anyhow::ensure!(
        fd > 2,
        "--listen-fd {fd} is a standard stream, not a socket"
    );
    // SAFETY: only fcntl(2) and getsockname(2) are called on the borrowed number; on a
    // descriptor that is not open they fail with EBADF and nothing is taken.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    rustix::io::fcntl_getfd(borrowed)
        .with_context(|| format!("--listen-fd {fd} is not an open descriptor"))?;
    let addr = rustix::net::getsockname(borrowed)
        .with_context(|| format!("--listen-fd {fd} is not a socket"))?;
    anyhow::ensure!(
        std::net::SocketAddr::try_from(addr).is_ok(),
        "--listen-fd {fd} is not a TCP socket"
    );
    // SAFETY: the descriptor is open, a socket, and handed to this process to own: nothing
    // else in coved knows its number.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // The agent's shells must not inherit a socket of the network outside.
    rustix::io::fcntl_setfd(&owned, rustix::io::FdFlags::CLOEXEC)?;
    let listener = std::net::TcpListener::from(owned);
    listener.set_nonblocking(true)?;
    Ok(tokio::net::TcpListener::from_std(listener)?)
}

/// The daemon's settings from its flags, each held to its sane range.
fn daemon_config(cli: &Cli, token: coved::auth::AuthToken) -> anyhow::Result<DaemonConfig> {
    let mut config = DaemonConfig::new(cli.workspace.clone(), token);
    config.shell = cli.shell.clone().unwrap_or_else(|| {
        ["/bin/bash", "/usr/bin/bash", "/bin/sh"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from("/bin/sh"))
    });
    config.max_sessions = cli.max_sessions;
    config.output_cap = cli.max_output_bytes.max(1024);
    config.max_upload_bytes = cli.max_upload_bytes;
    config.max_request_bytes = cli.max_request_bytes;
    config.max_read_bytes = cli.max_read_bytes;
    config.chromium = cli.chromium.clone();
    config.browser_proxy = cli
        .proxy_port
        .map(|port| format!("http://127.0.0.1:{port}"));
    if config.browser_proxy.is_some() {
        coved::browser::reach::names_resolved_by_proxy();
    }
    config.browser_viewport = cli.browser_viewport;
    config.browser_timeout = std::time::Duration::from_secs(cli.browser_timeout_secs.max(1));
    config.elements_cap = cli.elements_cap.max(500);
    config.dialog_timeout = std::time::Duration::from_secs(cli.dialog_timeout_secs.max(1));
    config.takeover_ttl = std::time::Duration::from_secs(
        cli.takeover_ttl_secs
            .clamp(1, cove_protocol::takeover::MAX_TAKEOVER_TTL_SECS),
    );
    config.public_url = cli.public_url.clone();
    let state_dir = cli
        .state_dir
        .clone()
        .unwrap_or_else(coved::default_state_dir);
    // Keyed by the workspace's real path, the same at every start.
    let _ = std::fs::create_dir_all(&cli.workspace);
    let mut checkpoints = coved::checkpoints::CheckpointSettings::in_state_dir(
        &state_dir,
        &std::fs::canonicalize(&cli.workspace).unwrap_or_else(|_| cli.workspace.clone()),
    );
    if let Some(dir) = &cli.checkpoints {
        checkpoints.dir = dir.clone();
    }
    checkpoints.cap = cli.checkpoint_cap;
    config.checkpoints = Some(checkpoints);
    config.web = coved::web::WebSettings {
        engine: coved::web::engines::by_name(&cli.search_engine).ok_or_else(|| {
            anyhow::anyhow!(
                "--search-engine {:?} is not one coved knows; use one of: {}",
                cli.search_engine,
                coved::web::engines::names()
            )
        })?,
        search_url: cli.search_url.clone(),
        fetch_timeout: std::time::Duration::from_secs(cli.fetch_timeout_secs.max(1)),
    };
    if let Some(url) = &config.web.search_url
        && !url.contains("{query}")
    {
        anyhow::bail!("--search-url {url:?} has no {{query}} for the query to go in");
    }
    config.preview_public = cli.preview_public;
    let open_files = coved::server::raise_open_files_limit();
    // Keep half the descriptors for files, shells and the browser.
    let affordable =
        open_files.map_or(usize::MAX, |n| usize::try_from(n / 2).unwrap_or(usize::MAX));
    if cli.max_connections > affordable {
        tracing::warn!(
            max_connections = affordable,
            "the open files limit allows fewer connections than --max-connections; using half of it"
        );
    }
    config.server.max_connections = cli.max_connections.min(affordable).max(16);
    config.server.idle_timeout = std::time::Duration::from_secs(cli.idle_timeout_secs.max(1));
    Ok(config)
}

async fn run(cli: Cli, matches: clap::ArgMatches) -> anyhow::Result<()> {
    if matches.value_source("token") == Some(ValueSource::CommandLine) {
        tracing::warn!(
            "--token puts the secret in the process list, readable by every local user; pass it in COVE_TOKEN or a file (--token-file) instead"
        );
    }

    let stdio_mcp = matches!(cli.command, Some(Command::Mcp));
    let token_file = cli.token_file.clone().unwrap_or_else(|| {
        cli.state_dir
            .clone()
            .unwrap_or_else(coved::default_state_dir)
            .join("token")
    });
    let (token, source) = if stdio_mcp {
        // Only this process calls its API: a fresh token, kept in memory.
        (coved::auth::AuthToken::generate(), TokenSource::Given)
    } else {
        resolve_token(cli.token.clone(), &token_file)?
    };
    match &source {
        TokenSource::Given if stdio_mcp => {}
        TokenSource::Given => tracing::info!("using the token given by --token / COVE_TOKEN"),
        TokenSource::File(path) => tracing::info!(file = %path.display(), "using the token in"),
        TokenSource::Generated(path) => tracing::info!(
            file = %path.display(),
            "no token given: generated one and stored it (mode 0600) in"
        ),
    }

    let daemon = Daemon::new(daemon_config(&cli, token)?)?;

    if stdio_mcp {
        return serve_mcp_on_stdio(daemon).await;
    }

    if let Some(socket) = &cli.egress_socket {
        let doors: Vec<(u16, coved::egress::Door)> = cli
            .proxy_port
            .map(|port| (port, coved::egress::Door::Proxy))
            .into_iter()
            .chain(
                cli.host_port
                    .iter()
                    .map(|&p| (p, coved::egress::Door::HostPort(p))),
            )
            .collect();
        coved::egress::open(socket, &doors).await?;
    }
    let listener = match cli.listen_fd {
        Some(fd) => inherited_listener(fd)?,
        None => tokio::net::TcpListener::bind(cli.listen)
            .await
            .with_context(|| format!("cannot listen on {}", cli.listen))?,
    };
    let addr = listener.local_addr()?;
    // Spawners (the controller, tests) read this line to learn the chosen port.
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "coved listening on http://{addr}")?;
    stdout.flush()?;
    drop(stdout);
    tracing::info!(%addr, workspace = %daemon.state().info.workspace, "coved {} ready", coved::VERSION);

    daemon.serve(listener, shutdown_signal()).await?;
    tracing::info!("coved stopped");
    Ok(())
}

/// `coved mcp`: the API on a loopback port only this process knows the token of, and the MCP
/// server on stdin and stdout calling it; when the host closes stdin, everything stops.
async fn serve_mcp_on_stdio(daemon: Daemon) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .context("cannot listen on a loopback port")?;
    let addr = listener.local_addr()?;
    let token = daemon.state().token.expose();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(daemon.serve(listener, async {
        let _ = stopped.await;
    }));
    let client = cove_protocol::client::CovedClient::new(&format!("http://{addr}"), token)?;
    tracing::info!(%addr, "coved {} serving MCP on stdio", coved::VERSION);
    let service = coved::mcp::SandboxTools::new(client)
        .serve(rmcp::transport::stdio())
        .await
        .context("the MCP handshake on stdio failed")?;
    let reason = service.waiting().await;
    tracing::info!(?reason, "the MCP host closed the connection");
    let _ = stop.send(());
    server.await??;
    Ok(())
}
