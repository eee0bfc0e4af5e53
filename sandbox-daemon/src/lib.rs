//! coved, the Cove sandbox daemon: shell sessions, files, browser, vision and browser
//! takeover over authenticated HTTP. [`Daemon`] builds the [`axum::Router`] so tests can serve
//! it in-process; the `coved` binary wraps it with a CLI.

pub mod auth;
pub mod blocking;
pub mod body;
pub mod browser;
pub mod checkpoints;
pub mod confine;
pub mod egress;
pub mod error;
pub mod extract;
pub mod files;
pub mod forks;
pub mod idle;
pub mod info;
pub mod mcp;
pub mod metrics;
pub mod net;
pub mod preview;
pub mod procs;
pub mod random;
pub mod relay;
pub mod routes;
pub mod server;
pub mod shell;
pub mod takeover;
pub mod timestamp;
pub mod token;
pub mod traced;
pub mod vision;
pub mod watches;
pub mod web;

use std::future::Future;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use bytes::Bytes;
use cove_protocol::api::{API_VERSION, openapi_document};
use cove_protocol::info::InfoResponse;
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};

use auth::AuthToken;
use browser::{BrowserManager, BrowserSettings};
use checkpoints::{CheckpointSettings, Checkpoints};
use cove_protocol::browser::{DEFAULT_ELEMENTS_CAP, DEFAULT_VIEWPORT, Viewport};
use cove_protocol::takeover::DEFAULT_TAKEOVER_TTL_SECS;
use files::Workspace;
use preview::origins::PublicUrl;
use preview::{Preview, PreviewSettings};
use procs::ChildRegistry;
use server::ServerLimits;
use shell::session::SessionSettings;
use shell::{ShellConfig, ShellManager};
use takeover::{TakeoverManager, TakeoverSettings};

/// The daemon's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The workspace folder the browser saves downloads into.
pub const DOWNLOADS_DIR: &str = "downloads";

/// Everything a daemon needs to start.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Root of every file path; the shell's starting directory.
    pub workspace: PathBuf,
    /// Shared by the forks' daemons, so a new token reaches them too.
    pub token: token::ApiToken,
    /// The shell sessions run (bash).
    pub shell: PathBuf,
    pub max_sessions: usize,
    /// Most output bytes one answer carries (head and tail kept beyond it).
    pub output_cap: usize,
    /// Output bytes each session keeps for later reads.
    pub session_log_bytes: usize,
    /// Largest JSON request body.
    pub max_request_bytes: usize,
    /// Largest upload.
    pub max_upload_bytes: u64,
    /// Largest file read as text.
    pub max_read_bytes: u64,
    /// Chromium executable; searched on `PATH` when absent.
    pub chromium: Option<PathBuf>,
    /// The proxy the browser reaches the web through (`http://127.0.0.1:3128` in a local
    /// sandbox, whose network is its own); none goes direct.
    pub browser_proxy: Option<String>,
    pub browser_viewport: Viewport,
    /// Deadline of each browser action and CDP call.
    pub browser_timeout: Duration,
    /// Cap on the browser state's `elements` text.
    pub elements_cap: usize,
    /// How long a page's JavaScript dialog waits for an answer before it is dismissed.
    pub dialog_timeout: Duration,
    /// Lifetime of a takeover when the caller does not say.
    pub takeover_ttl: Duration,
    /// The daemon's address as people reach it, for takeover and preview links; previews
    /// are served under its subdomains.
    pub public_url: Option<PublicUrl>,
    /// `/preview/` and `/proxy/` need no token.
    pub preview_public: bool,
    /// Connections, timeouts and draining of the HTTP server.
    pub server: ServerLimits,
    /// How `/v1/web/fetch` downloads and which keyless engine `/v1/web/search` reads.
    pub web: web::WebSettings,
    /// Where checkpoints are kept (outside the workspace) and the store's cap; by default
    /// in the state folder, one store per workspace.
    pub checkpoints: Option<CheckpointSettings>,
    /// Whether forks of the workspace may be made (a fork's own daemon makes none).
    pub forks: bool,
}

impl DaemonConfig {
    /// Defaults for everything but the workspace and token.
    pub fn new(workspace: PathBuf, token: AuthToken) -> Self {
        DaemonConfig {
            workspace,
            token: token.into(),
            shell: PathBuf::from("/bin/bash"),
            max_sessions: 64,
            output_cap: 1024 * 1024,
            session_log_bytes: 4 * 1024 * 1024,
            max_request_bytes: 64 * 1024 * 1024,
            max_upload_bytes: 1024 * 1024 * 1024,
            max_read_bytes: 32 * 1024 * 1024,
            chromium: None,
            browser_proxy: None,
            browser_viewport: DEFAULT_VIEWPORT,
            browser_timeout: Duration::from_secs(30),
            elements_cap: DEFAULT_ELEMENTS_CAP,
            dialog_timeout: Duration::from_secs(120),
            takeover_ttl: Duration::from_secs(DEFAULT_TAKEOVER_TTL_SECS),
            public_url: None,
            preview_public: false,
            server: ServerLimits::default(),
            web: web::WebSettings::default(),
            checkpoints: None,
            forks: true,
        }
    }
}

/// The daemon's state folder when none is given: `$XDG_STATE_HOME/coved`,
/// `~/.local/state/coved`, else `/var/lib/coved`.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("coved");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home).join(".local/state/coved");
    }
    PathBuf::from("/var/lib/coved")
}

/// Why a daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the workspace {path}: {source}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the daemon's private runtime directory: {0}")]
    RuntimeDir(std::io::Error),
}

/// Request-size limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_request_bytes: usize,
    pub max_upload_bytes: u64,
}

/// State shared by every handler.
pub struct App {
    pub token: token::ApiToken,
    /// Wrong tokens per client address, for every token the daemon checks.
    pub failures: auth::Failures,
    pub shell: ShellManager,
    pub workspace: Arc<Workspace>,
    pub limits: Limits,
    pub browser: BrowserManager,
    pub takeover: TakeoverManager,
    pub preview: Preview,
    /// Turns for image decodes, which each may take a few hundred megabytes.
    pub decodes: Arc<tokio::sync::Semaphore>,
    /// Client for the preview proxy (no redirects followed, no proxy), built on first use.
    pub proxy_http: std::sync::OnceLock<reqwest::Client>,
    /// Client for fetching image URLs, built on first use (loading TLS roots costs startup
    /// time and memory most daemons never need).
    pub http: std::sync::OnceLock<reqwest::Client>,
    /// Page fetches and keyless searches.
    pub web: web::Web,
    pub info: InfoResponse,
    pub openapi: Bytes,
    pub registry: Arc<ChildRegistry>,
    /// Where the daemon itself is reached on this machine (its MCP server calls its API
    /// there); set once it listens.
    pub self_url: std::sync::OnceLock<String>,
    /// Ends the MCP server's sessions when the daemon stops.
    pub mcp_shutdown: tokio_util::sync::CancellationToken,
    /// Checkpoints of the workspace.
    pub checkpoints: Arc<Checkpoints>,
    /// What the agent waits for, and the events fired.
    pub watches: watches::Watches,
    /// Copies of the workspace for sub-agents.
    pub forks: forks::Forks,
    /// Its use, for how long it has been idle.
    pub activity: idle::Activity,
    /// What it has done, for `GET /metrics`.
    pub metrics: metrics::DaemonMetrics,
}

/// Cheap handle on the [`App`].
#[derive(Clone)]
pub struct AppState(Arc<App>);

impl App {
    /// The preview proxy's HTTP client.
    pub fn proxy_client(&self) -> Result<&reqwest::Client, reqwest::Error> {
        if let Some(client) = self.proxy_http.get() {
            return Ok(client);
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()?;
        Ok(self.proxy_http.get_or_init(|| client))
    }
}

impl Deref for AppState {
    type Target = App;

    fn deref(&self) -> &App {
        &self.0
    }
}

/// A configured daemon, ready to serve.
pub struct Daemon {
    state: AppState,
    server: ServerLimits,
    // Session FIFOs and command files live here; removed when the daemon is dropped.
    _runtime_dir: tempfile::TempDir,
}

impl Daemon {
    /// Opens the workspace (creating it if missing) and prepares every endpoint family.
    pub fn new(config: DaemonConfig) -> Result<Daemon, StartError> {
        let workspace_error = |source| StartError::Workspace {
            path: config.workspace.clone(),
            source,
        };
        std::fs::create_dir_all(&config.workspace).map_err(workspace_error)?;
        let root = std::fs::canonicalize(&config.workspace).map_err(workspace_error)?;
        let workspace = Workspace::open(&root, config.max_read_bytes).map_err(workspace_error)?;
        let runtime_dir = tempfile::Builder::new()
            .prefix("coved-")
            .tempdir()
            .map_err(StartError::RuntimeDir)?;
        let registry = Arc::new(ChildRegistry::default());
        let shell = ShellManager::new(
            ShellConfig {
                settings: SessionSettings {
                    shell: config.shell.clone(),
                    workspace: root.clone(),
                    log_capacity: config.session_log_bytes.max(config.output_cap),
                    output_cap: config.output_cap,
                    cols: 200,
                    rows: 50,
                },
                runtime_dir: runtime_dir.path().to_path_buf(),
                max_sessions: config.max_sessions,
            },
            registry.clone(),
        );
        let browser = BrowserManager::new(
            BrowserSettings {
                chromium: config.chromium.clone(),
                proxy: config.browser_proxy.clone(),
                viewport: config.browser_viewport,
                timeout: config.browser_timeout,
                elements_cap: config.elements_cap,
                dialog_timeout: config.dialog_timeout,
                screenshot_quality: 70,
                downloads: root.join(DOWNLOADS_DIR),
            },
            registry.clone(),
        );
        let checkpoint_settings = config
            .checkpoints
            .clone()
            .unwrap_or_else(|| CheckpointSettings::in_state_dir(&default_state_dir(), &root));
        let checkpoints = Checkpoints::new(root.clone(), checkpoint_settings);
        // A restore a stopped daemon left under way ends before anything else sees the files.
        if let Err(e) = checkpoints.recover() {
            tracing::error!(error = %e, "a restore left under way could not be finished");
        }
        let forks = if config.forks {
            forks::Forks::new(&checkpoints, config.clone())
        } else {
            forks::Forks::none(config.clone())
        };
        let openapi = serde_json::to_vec_pretty(&openapi_document(VERSION))
            .map(Bytes::from)
            .unwrap_or_default();
        let app = App {
            token: config.token,
            failures: auth::Failures::default(),
            shell,
            workspace: Arc::new(workspace),
            limits: Limits {
                max_request_bytes: config.max_request_bytes,
                max_upload_bytes: config.max_upload_bytes,
            },
            info: InfoResponse {
                name: "coved".to_string(),
                version: VERSION.to_string(),
                api_version: API_VERSION.to_string(),
                capabilities: [
                    "shell",
                    "files",
                    "browser",
                    "vision",
                    "takeover",
                    "preview",
                    "web",
                    "checkpoints",
                    "watches",
                ]
                .map(String::from)
                .to_vec(),
                workspace: root.to_string_lossy().into_owned(),
            },
            browser,
            web: web::Web::new(config.web.clone(), registry.clone()),
            takeover: TakeoverManager::new(TakeoverSettings {
                ttl: config.takeover_ttl,
            }),
            decodes: Arc::new(tokio::sync::Semaphore::new(2)),
            preview: Preview::new(&PreviewSettings {
                public: config.preview_public,
                public_url: config.public_url.clone(),
            }),
            proxy_http: std::sync::OnceLock::new(),
            http: std::sync::OnceLock::new(),
            openapi,
            registry,
            self_url: std::sync::OnceLock::new(),
            mcp_shutdown: tokio_util::sync::CancellationToken::new(),
            checkpoints: Arc::new(checkpoints),
            watches: watches::Watches::new(root.clone()),
            forks,
            activity: idle::Activity::default(),
            metrics: metrics::DaemonMetrics::default(),
        };
        Ok(Daemon {
            state: AppState(Arc::new(app)),
            server: config.server,
            _runtime_dir: runtime_dir,
        })
    }

    /// The shared state.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The router over this daemon's state.
    pub fn router(&self) -> Router {
        routes::router(self.state.clone())
    }

    /// Serves until `shutdown` resolves, then kills every session and reaps what is left.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        if let Err(e) = procs::become_subreaper() {
            tracing::warn!(error = %e, "cannot become a child subreaper; orphans go to init");
        }
        let state = self.state.clone();
        if let Ok(addr) = listener.local_addr() {
            let _ = state.self_url.set(format!("http://{}", loopback_of(addr)));
        }
        let reaper = tokio::spawn(reap_orphans_forever(state.registry.clone()));
        // Sessions and the browser go first, so requests waiting on them end quickly.
        let stopping = {
            let state = state.clone();
            async move {
                shutdown.await;
                tracing::info!("shutting down: killing shell sessions and the browser");
                state.mcp_shutdown.cancel();
                state.forks.shutdown().await;
                state.shell.shutdown().await;
                state.browser.shutdown().await;
            }
        };
        server::serve(listener, self.router(), self.server, stopping).await;
        reaper.abort();
        state.shell.shutdown().await;
        state.browser.shutdown().await;
        state.registry.reap_orphans();
        Ok(())
    }
}

/// The address a process on this machine reaches a listener bound to `addr` at: loopback for
/// a wildcard bind.
fn loopback_of(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, addr.port()).into(),
        IpAddr::V6(ip) if ip.is_unspecified() => (Ipv6Addr::LOCALHOST, addr.port()).into(),
        _ => addr,
    }
}

async fn reap_orphans_forever(registry: Arc<ChildRegistry>) {
    let mut sigchld = signal(SignalKind::child()).ok();
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = async {
                match sigchld.as_mut() {
                    Some(s) => { s.recv().await; }
                    None => std::future::pending::<()>().await,
                }
            } => {}
            _ = tick.tick() => {}
        }
        let registry = registry.clone();
        let _ = blocking::blocking(move || registry.reap_orphans()).await;
    }
}
