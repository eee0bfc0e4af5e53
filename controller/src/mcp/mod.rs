//! MCP (Model Context Protocol) servers as tools for the agent: the configured servers start
//! together in the background, the run waits for each at most its startup timeout, and their
//! tools join the agent's as `<server>__<tool>`. A server that fails is reported and left
//! out; the run goes on. When all their tools would take too much of the model's window,
//! they are deferred: the model finds and loads them with `mcp_search_tools`.

pub mod config;
pub mod names;
pub mod result;
pub mod schema;
pub mod search;
pub mod server;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;

pub use config::{ConfigProblem, ServerConfig, Transport};
pub use server::{CallError, Server, StartError};

use crate::llm::ToolSpec;
use names::ToolNames;

/// Longest tool description passed on to the model.
const MAX_DESCRIPTION_CHARS: usize = 2_000;

/// The files `mcpServers` are read from, in order (a later file's server of the same name
/// wins): Claude Desktop's and WorkAny's when present, Cove's own, then the project's
/// `.mcp.json` (Claude Code's) and `.cove/mcp.json`.
pub fn config_files(project: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let cove = crate::config::config_dir();
    if let Some(config) = cove.parent() {
        files.push(config.join("Claude").join("claude_desktop_config.json"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        files.push(PathBuf::from(home).join(".workany").join("mcp.json"));
    }
    files.push(cove.join("mcp.json"));
    files.push(project.join(".mcp.json"));
    files.push(project.join(".cove").join("mcp.json"));
    files
}

/// How a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
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

/// The servers once every start has ended.
#[derive(Debug, Default)]
struct Table {
    servers: Vec<ServerStatus>,
    tools: Vec<McpTool>,
}

/// A started server and the tools it listed, or why it did not start.
type Started = Result<(Arc<Server>, Vec<rmcp::model::Tool>), StartError>;
type Start = JoinHandle<Started>;

/// The configured MCP servers of a controller process.
pub struct McpHub {
    configs: Vec<ServerConfig>,
    starts: Mutex<Option<Vec<Start>>>,
    table: OnceCell<Table>,
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
    /// Starts every enabled server in the background, all at once. Must be called within a
    /// Tokio runtime.
    pub fn start(configs: Vec<ServerConfig>) -> Arc<McpHub> {
        let starts = configs
            .iter()
            .filter(|c| c.enabled)
            .map(|c| tokio::spawn(Server::start(c.clone())))
            .collect();
        Arc::new(McpHub {
            configs,
            starts: Mutex::new(Some(starts)),
            table: OnceCell::new(),
            loaded: Mutex::new(HashSet::new()),
            deferred: AtomicBool::new(false),
            generation: AtomicU64::new(0),
        })
    }

    /// Whether any server is configured at all.
    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }

    /// Waits until every server has started or failed (each within its startup timeout).
    async fn table(&self) -> &Table {
        self.table
            .get_or_init(|| async {
                let starts = self
                    .starts
                    .lock()
                    .map(|mut s| s.take().unwrap_or_default())
                    .unwrap_or_default();
                let mut outcomes = Vec::new();
                for start in starts {
                    outcomes.push(match start.await {
                        Ok(outcome) => outcome,
                        Err(e) => Err(StartError::Handshake {
                            why: format!("its start crashed: {e}"),
                            stderr: Vec::new(),
                        }),
                    });
                }
                build_table(&self.configs, outcomes)
            })
            .await
    }

    /// Waits for every server's start, then says how each stands.
    pub async fn statuses(&self) -> Vec<ServerStatus> {
        self.table().await.servers.clone()
    }

    /// Every tool of every started server.
    pub async fn tools(&self) -> Vec<McpTool> {
        self.table().await.tools.clone()
    }

    /// Every tool of every started server; none before the servers have started.
    pub fn listed(&self) -> Vec<McpTool> {
        self.table
            .get()
            .map(|t| t.tools.clone())
            .unwrap_or_default()
    }

    /// The tool the model calls `name`, loaded or not. Only answers once the servers have
    /// started ([`McpHub::statuses`] or [`McpHub::tools`] waits for that).
    pub fn tool(&self, name: &str) -> Option<McpTool> {
        self.table
            .get()?
            .tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
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
        let Some(table) = self.table.get() else {
            return Vec::new();
        };
        if !self.is_deferred() {
            return table.tools.clone();
        }
        let loaded = self.loaded.lock().map(|l| l.clone()).unwrap_or_default();
        table
            .tools
            .iter()
            .filter(|t| loaded.contains(&t.name))
            .cloned()
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
        self.table
            .get()
            .map(|t| {
                t.servers
                    .iter()
                    .filter_map(|s| match s.state {
                        ServerState::Ready { tools } => Some((s.name.clone(), tools)),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Ends every started server.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<Server>> = match self.table.get() {
            Some(table) => {
                let mut seen: Vec<Arc<Server>> = Vec::new();
                for tool in &table.tools {
                    if !seen.iter().any(|s| Arc::ptr_eq(s, &tool.server)) {
                        seen.push(tool.server.clone());
                    }
                }
                seen
            }
            None => Vec::new(),
        };
        futures_util::future::join_all(servers.iter().map(|s| s.shutdown())).await;
    }
}

fn build_table(configs: &[ServerConfig], mut outcomes: Vec<Started>) -> Table {
    let mut names = ToolNames::default();
    let mut table = Table::default();
    outcomes.reverse();
    for config in configs {
        if !config.enabled {
            table.servers.push(ServerStatus {
                name: config.name.clone(),
                state: ServerState::Disabled,
                source: config.source.clone(),
            });
            continue;
        }
        let state = match outcomes.pop() {
            Some(Ok((server, tools))) => {
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
                    table.tools.push(McpTool {
                        name: names.assign(&config.name, &raw),
                        raw,
                        server: server.clone(),
                        description,
                        schema: schema::sanitize(&input),
                    });
                }
                ServerState::Ready { tools: count }
            }
            Some(Err(e)) => ServerState::Failed(e.to_string()),
            None => ServerState::Failed("it was never started".into()),
        };
        table.servers.push(ServerStatus {
            name: config.name.clone(),
            state,
            source: config.source.clone(),
        });
    }
    table
}
