//! MCP (Model Context Protocol) servers as tools for the agent: the configured servers start
//! together in the background, the run waits for each at most its startup timeout, and their
//! tools join the agent's as `<server>__<tool>`. A server that fails is reported and left
//! out; the run goes on. When all their tools would take too much of the model's window,
//! they are deferred: the model finds and loads them with `mcp_search_tools`.

pub mod config;
pub mod names;
pub mod schema;
pub mod search;
pub mod server;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use std::time::Duration;

pub use config::{ConfigProblem, ServerConfig, Transport};
pub use server::{CallError, Server, StartError};

use crate::llm::ToolSpec;
use names::ToolNames;

/// Longest tool description passed on to the model.
const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// The configured servers and the problems found reading them: the user's files and
/// `extra` as written, then the folder's own when `project` (it is trusted), whose
/// `${VAR}`s never get Cove's own secrets.
pub fn configured(
    extra: &[PathBuf],
    project: bool,
) -> (Vec<config::ServerConfig>, Vec<config::ConfigProblem>) {
    let mut files = user_config_files();
    files.extend(extra.iter().cloned());
    let (mut servers, mut problems) = config::load(&files, &|name| std::env::var(name).ok());
    if project {
        let asked = std::cell::RefCell::new(Vec::new());
        let lookup = |name: &str| {
            if crate::trust::is_controller_secret(name) {
                asked.borrow_mut().push(name.to_string());
                return None;
            }
            std::env::var(name).ok()
        };
        let files = project_config_files(&crate::trust::project_dir());
        let (found, mut bad) = config::load(&files, &lookup);
        for secret in asked.into_inner() {
            bad.push(config::ConfigProblem {
                file: files[0].clone(),
                line: 1,
                column: 1,
                message: format!(
                    "${{{secret}}} is one of Cove's own secrets: a folder's settings never get it"
                ),
            });
        }
        for server in found {
            servers.retain(|s| s.name != server.name);
            servers.push(server);
        }
        problems.append(&mut bad);
    }
    (servers, problems)
}

/// The files `mcpServers` are read from, in order (a later file's server of the same name
/// wins): Claude Desktop's and WorkAny's when present, Cove's own, then the project's
/// `.mcp.json` (Claude Code's) and `.cove/mcp.json`.
pub fn config_files(project: &std::path::Path) -> Vec<PathBuf> {
    let mut files = user_config_files();
    files.extend(project_config_files(project));
    files
}

/// The user's own `mcpServers` files: Claude Desktop's, WorkAny's, Cove's.
pub fn user_config_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let cove = crate::config::config_dir();
    if let Some(config) = cove.parent() {
        files.push(config.join("Claude").join("claude_desktop_config.json"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        files.push(PathBuf::from(home).join(".workany").join("mcp.json"));
    }
    files.push(cove.join("mcp.json"));
    files
}

/// A folder's own `mcpServers` files, used once the user trusts it ([`crate::trust`]).
pub fn project_config_files(project: &std::path::Path) -> Vec<PathBuf> {
    crate::trust::PROJECT_MCP_FILES
        .iter()
        .map(|f| project.join(f))
        .collect()
}

/// How a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Its start has not ended yet.
    Starting,
    /// Started; this many of its tools are offered.
    Ready { tools: usize },
    /// It could not be started: why, in one line.
    Failed(String),
    /// `enabled: false` in its configuration.
    Disabled,
}

/// One server's status, for `cove mcp ls` and the `mcp_status` event.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
    /// The file that configures it.
    pub source: PathBuf,
}

/// An MCP tool as the agent offers it.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// The name the model calls it by.
    pub name: String,
    /// Its name on its server.
    pub raw: String,
    pub server: Arc<Server>,
    pub description: String,
    /// Its input schema, made acceptable to every provider.
    pub schema: Value,
}

impl McpTool {
    /// The name permission rules match: `mcp:SERVER:TOOL`.
    pub fn policy_name(&self) -> String {
        format!("mcp:{}:{}", self.server.name(), self.raw)
    }

    /// The native tool description.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: format!("(MCP server {}) {}", self.server.name(), self.description),
            parameters: self.schema.clone(),
        }
    }
}

/// The servers as far as their starts have gone, and the tools of those started.
#[derive(Debug, Default)]
struct Table {
    servers: Vec<ServerStatus>,
    /// Every server that started, offering tools or not: what shutdown ends.
    started: Vec<Arc<Server>>,
    tools: Vec<McpTool>,
    names: ToolNames,
}

/// A started server and the tools it listed, or why it did not start.
type Started = Result<(Arc<Server>, Vec<rmcp::model::Tool>), StartError>;

/// The configured MCP servers of a controller process.
pub struct McpHub {
    configs: Vec<ServerConfig>,
    table: Mutex<Table>,
    /// Servers still starting; sent 0 when every start has ended.
    starting: tokio::sync::watch::Receiver<usize>,
    /// Deferred tools the model loaded with `mcp_search_tools`, by name.
    loaded: Mutex<HashSet<String>>,
    deferred: AtomicBool,
    /// Bumped whenever the tools offered to the model change.
    generation: AtomicU64,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.configs.len())
            .finish_non_exhaustive()
    }
}

impl McpHub {
    /// Starts every enabled server in the background, all at once; each joins the table
    /// when its start ends. Must be called within a Tokio runtime.
    pub fn start(configs: Vec<ServerConfig>) -> Arc<McpHub> {
        let mut table = Table::default();
        for config in &configs {
            table.servers.push(ServerStatus {
                name: config.name.clone(),
                state: if config.enabled {
                    ServerState::Starting
                } else {
                    ServerState::Disabled
                },
                source: config.source.clone(),
            });
        }
        let enabled: Vec<ServerConfig> = configs.iter().filter(|c| c.enabled).cloned().collect();
        let (count, starting) = tokio::sync::watch::channel(enabled.len());
        let hub = Arc::new(McpHub {
            configs,
            table: Mutex::new(table),
            starting,
            loaded: Mutex::new(HashSet::new()),
            deferred: AtomicBool::new(false),
            generation: AtomicU64::new(0),
        });
        let count = Arc::new(count);
        for config in enabled {
            // The task holds the hub weakly: a hub dropped while a server starts ends it.
            let weak = Arc::downgrade(&hub);
            let count = count.clone();
            tokio::spawn(async move {
                let started = Server::start(config.clone()).await;
                if let Some(hub) = weak.upgrade() {
                    hub.settle(&config, started);
                }
                count.send_modify(|n| *n = n.saturating_sub(1));
            });
        }
        hub
    }

    /// Records how `config`'s start ended.
    fn settle(&self, config: &ServerConfig, started: Started) {
        let Ok(mut table) = self.table.lock() else {
            return;
        };
        let state = match started {
            Ok((server, tools)) => {
                let mut count = 0;
                for tool in tools {
                    let raw = tool.name.to_string();
                    let wanted = config
                        .enabled_tools
                        .as_ref()
                        .is_none_or(|only| only.contains(&raw))
                        && !config.disabled_tools.contains(&raw);
                    if !wanted {
                        continue;
                    }
                    count += 1;
                    let description: String = tool
                        .description
                        .as_deref()
                        .unwrap_or("")
                        .chars()
                        .take(MAX_DESCRIPTION_CHARS)
                        .collect();
                    let input = Value::Object((*tool.input_schema).clone());
                    let name = table.names.assign(&config.name, &raw);
                    table.tools.push(McpTool {
                        name,
                        raw,
                        server: server.clone(),
                        description,
                        schema: schema::sanitize(&input),
                    });
                }
                table.started.push(server);
                ServerState::Ready { tools: count }
            }
            Err(e) => ServerState::Failed(e.to_string()),
        };
        if let Some(status) = table.servers.iter_mut().find(|s| s.name == config.name) {
            status.state = state;
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Waits until every server has started or failed (each within its startup timeout),
    /// or at most `limit`.
    pub async fn wait_started(&self, limit: Option<Duration>) {
        let mut starting = self.starting.clone();
        let all = starting.wait_for(|n| *n == 0);
        match limit {
            Some(limit) => {
                let _ = tokio::time::timeout(limit, all).await;
            }
            None => {
                let _ = all.await;
            }
        }
    }

    /// Whether some server is still starting.
    pub fn starting(&self) -> bool {
        *self.starting.borrow() > 0
    }

    /// How each server stands now.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.table
            .lock()
            .map(|t| t.servers.clone())
            .unwrap_or_default()
    }

    /// Every tool of every server started so far.
    pub fn listed(&self) -> Vec<McpTool> {
        self.table
            .lock()
            .map(|t| t.tools.clone())
            .unwrap_or_default()
    }

    /// Waits for every server's start, then gives every tool.
    pub async fn tools(&self) -> Vec<McpTool> {
        self.wait_started(None).await;
        self.listed()
    }

    /// The tool the model calls `name`, loaded or not, of a server started so far.
    pub fn tool(&self, name: &str) -> Option<McpTool> {
        let table = self.table.lock().ok()?;
        table.tools.iter().find(|t| t.name == name).cloned()
    }

    /// Defers the tools behind `mcp_search_tools` (or stops deferring them).
    pub fn set_deferred(&self, deferred: bool) {
        if self.deferred.swap(deferred, Ordering::SeqCst) != deferred {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Whether the tools are deferred behind `mcp_search_tools`.
    pub fn is_deferred(&self) -> bool {
        self.deferred.load(Ordering::SeqCst)
    }

    /// A number that changes whenever the tools offered to the model change.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The tools offered to the model now: all of them, or when deferred the loaded ones.
    pub fn offered(&self) -> Vec<McpTool> {
        let tools = self.listed();
        if !self.is_deferred() {
            return tools;
        }
        let loaded = self.loaded.lock().map(|l| l.clone()).unwrap_or_default();
        tools
            .into_iter()
            .filter(|t| loaded.contains(&t.name))
            .collect()
    }

    /// Offers `names` to the model from its next call on.
    pub fn load(&self, names: &[String]) {
        let Ok(mut loaded) = self.loaded.lock() else {
            return;
        };
        let before = loaded.len();
        loaded.extend(names.iter().cloned());
        if loaded.len() != before {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The servers with started tools and how many each has, for the prompt's note on
    /// deferred tools.
    pub fn summary(&self) -> Vec<(String, usize)> {
        self.statuses()
            .into_iter()
            .filter_map(|s| match s.state {
                ServerState::Ready { tools } => Some((s.name, tools)),
                _ => None,
            })
            .collect()
    }

    /// The servers still starting, by name.
    pub fn still_starting(&self) -> Vec<String> {
        self.statuses()
            .into_iter()
            .filter(|s| s.state == ServerState::Starting)
            .map(|s| s.name)
            .collect()
    }

    /// The server whose tools `name` would be among (`<server>__…`), and how it stands.
    fn owner_of(&self, name: &str) -> Option<ServerStatus> {
        self.statuses()
            .into_iter()
            .filter(|s| name.starts_with(&format!("{}__", names::clean(&s.name))))
            .max_by_key(|s| s.name.len())
    }

    /// Waits until the server a call of `name` is for has started or failed (within its
    /// start timeout), when it is still starting: a model may call a tool it saw in an
    /// earlier run before its server is back. Unknown names wait for nothing.
    pub async fn wait_for_owner(&self, name: &str) {
        let mut settled = self.starting.clone();
        loop {
            settled.borrow_and_update();
            match self.owner_of(name) {
                Some(status) if status.state == ServerState::Starting => {}
                _ => return,
            }
            if settled.changed().await.is_err() {
                return;
            }
        }
    }

    /// Why there is no MCP tool `name`, by the state of the server it would be from.
    pub fn why_missing(&self, name: &str) -> Option<String> {
        let status = self.owner_of(name)?;
        let server = &status.name;
        Some(match status.state {
            ServerState::Failed(why) => {
                format!("MCP server {server} could not start, so {name:?} cannot run: {why}")
            }
            ServerState::Disabled => {
                format!("MCP server {server} is disabled in its configuration")
            }
            ServerState::Starting => format!("MCP server {server} is still starting"),
            ServerState::Ready { .. } => {
                let tools: Vec<String> = self
                    .listed()
                    .into_iter()
                    .filter(|t| t.server.name() == server)
                    .map(|t| t.name)
                    .collect();
                format!(
                    "MCP server {server} has no tool named {name:?}; its tools: {}",
                    tools.join(", ")
                )
            }
        })
    }

    /// Ends every started server.
    pub async fn shutdown(&self) {
        let started = self
            .table
            .lock()
            .map(|t| t.started.clone())
            .unwrap_or_default();
        futures_util::future::join_all(started.iter().map(|s| s.shutdown())).await;
    }
}
