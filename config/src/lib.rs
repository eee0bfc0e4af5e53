//! `cove.toml` as Cove reads it (`~/.config/cove/cove.toml`; the environment and flags win
//! over it), and where Cove keeps its files. Plain data every layer reads: the engine, the
//! sandbox providers and the front ends.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A rule as `cove.toml` writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// A glob on the tool's name (`execute_command`, `mcp:*`).
    pub tool: String,
    /// A glob on the tool's key argument (the command of `execute_command`, the path of a file tool, the URL of a browser tool); none matches every call.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

/// `[permissions]` in `cove.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// `auto` (default), `ask`, `read-only` or `yolo`.
    pub mode: Option<String>,
    #[serde(default)]
    pub deny: Vec<RuleConfig>,
    #[serde(default)]
    pub ask: Vec<RuleConfig>,
    #[serde(default)]
    pub allow: Vec<RuleConfig>,
}

/// What `cove.toml` may set.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `provider/model`.
    pub model: Option<String>,
    /// `native` or `xml`.
    pub tool_calls: Option<String>,
    pub max_iterations: Option<u32>,
    pub max_tokens: Option<u32>,
    pub context_window: Option<u32>,
    /// Whether the model accepts images (overrides what its name suggests).
    pub vision: Option<bool>,
    /// Run a batch of tool calls one after another instead of in parallel.
    pub sequential_tools: Option<bool>,
    /// `auto` (compact when the model's window is 16,384 tokens or less), `full` or
    /// `compact` (the core tools and a short method).
    pub tools: Option<String>,
    /// `truncate` (default), `summarize` or `off`.
    pub context: Option<String>,
    /// Tokens the knowledge section of the system prompt may take (default 4000).
    pub knowledge_budget: Option<usize>,
    /// `local` or a coved URL.
    pub sandbox: Option<String>,
    pub sandbox_token: Option<String>,
    /// Where local threads get their workspace folders.
    pub workspaces: Option<PathBuf>,
    /// The database file.
    pub db: Option<PathBuf>,
    /// Have the agent propose a plan for approval before it acts (as `cove run --plan`).
    pub plan: Option<bool>,
    /// Seconds the first model call waits for MCP servers still starting (default 0.2;
    /// those that come up later join from the next call on).
    pub mcp_first_call_wait: Option<f64>,
    /// `[permissions]`: the policy tool calls pass (mode and deny / ask / allow rules).
    pub permissions: Option<PermissionsConfig>,
    /// `[web]`: which search provider `web_search` uses and where the images API is.
    pub web: Option<WebConfig>,
    /// `[local_sandbox]`: what a local sandbox's walls let through.
    pub local_sandbox: Option<LocalSandboxConfig>,
    /// `[sandbox_limits]`: what a sandbox Cove makes may use, unless its flags say.
    pub sandbox_limits: Option<SandboxLimits>,
    /// `[serve]`: what `cove serve` lets its clients choose.
    pub serve: Option<ServeConfig>,
    /// `[telemetry]`: where OpenTelemetry traces go when the `OTEL_*` environment does not say.
    pub telemetry: Option<cove_telemetry::TelemetryFile>,
    /// Seconds a Docker sandbox Cove made may sit idle (no request, no command running, no
    /// run on it) before it is paused; its next use resumes it. None: never paused.
    pub idle_pause_secs: Option<u64>,
    /// Warm pools by name (`[pools.NAME]`): sandboxes made ahead of use, taken whole by
    /// `cove sandbox create NAME --pool POOL` and by served threads that name the pool.
    #[serde(default)]
    pub pools: std::collections::BTreeMap<String, PoolConfig>,
    /// Sandboxes by name (`[sandboxes.NAME]`), for `--sandbox NAME`.
    #[serde(default)]
    pub sandboxes: std::collections::BTreeMap<String, NamedSandbox>,
    /// US dollars a run may spend on model calls (as `--max-cost`).
    pub max_cost: Option<f64>,
    /// Prices by model name or family (`[prices."claude-sonnet-4-5"]`: input, output, and
    /// optionally cached_input and cache_write, in dollars per million tokens), before the
    /// built-in table.
    #[serde(default)]
    pub prices: std::collections::BTreeMap<String, cove_llm::price::PriceConfig>,
}

/// `[web]` of `cove.toml`. Keys never go here: they come from the environment.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// `auto` (a provider whose key the environment holds, else the sandbox's browser),
    /// `tavily`, `brave`, `searxng` or `browser`.
    pub search: Option<String>,
    /// The SearXNG instance (as `SEARXNG_URL`).
    pub searxng_url: Option<String>,
    /// The OpenAI-compatible images API (default https://api.openai.com/v1).
    pub images_base_url: Option<String>,
    /// The image model (default gpt-image-1).
    pub images_model: Option<String>,
}

/// `[serve]` of `cove.toml`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Sandboxes a client may name for its thread besides the server's own (`--sandbox`):
    /// names, `local`, `host`, `k8s:NAME`, with `*` for any run of characters (`box-*`).
    #[serde(default)]
    pub sandboxes: Vec<String>,
}

/// `[sandbox_limits]` of `cove.toml`: what a Docker or Kubernetes sandbox Cove makes may
/// use, unless `cove sandbox create`'s flags say otherwise.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SandboxLimits {
    /// Memory: `512m`, `4g`, `4Gi`.
    pub memory: Option<String>,
    /// CPUs: `2`, `0.5`.
    pub cpus: Option<f64>,
    /// Processes at once (Docker; default 4096).
    pub processes: Option<i64>,
    /// Its own filesystem: `10g` (Docker, where the engine's storage can limit it; the
    /// ephemeral storage of a Kubernetes Pod).
    pub disk: Option<String>,
}

/// `[pools.NAME]` of `cove.toml`: a warm pool, sized by `size`; its sandboxes use
/// `[sandbox_limits]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// Ready sandboxes it keeps.
    pub size: u32,
    /// The image its sandboxes are made from (default `cove-sandbox:latest`).
    pub image: Option<String>,
    /// Seconds a ready sandbox waits to be taken before it is replaced by a fresh one
    /// (none: it waits until taken).
    pub max_age_secs: Option<u64>,
    /// `docker` (the default) or `kubernetes`.
    pub provider: Option<String>,
    /// Kubernetes: the namespace (default: the kubeconfig context's).
    pub namespace: Option<String>,
    /// Kubernetes: a volume of this size (`10Gi`) holds each sandbox's workspace.
    pub storage: Option<String>,
}

/// `[local_sandbox]` of `cove.toml`: what a local sandbox's walls let through.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LocalSandboxConfig {
    /// `internet` (default: its own network, the internet through Cove's proxy, not this
    /// machine's loopback or local networks), `none` (loopback only), or `host` (this
    /// machine's network, loopback services included).
    pub network: Option<String>,
    /// Destinations reached beyond the internet: `db.internal:5432`, `10.0.0.0/8`.
    #[serde(default)]
    pub allow_net: Vec<String>,
    /// Ports of this machine's loopback the sandbox reaches at the same port of its own.
    #[serde(default)]
    pub host_ports: Vec<u16>,
    /// Variables given to the sandbox: `NAME` (its value here) or `NAME=value`.
    #[serde(default)]
    pub env: Vec<String>,
    /// Folders shown to the sandbox read-only (`~/` is the home folder).
    #[serde(default)]
    pub read_only: Vec<String>,
    /// Folders the sandbox may write besides its workspace.
    #[serde(default)]
    pub writable: Vec<String>,
}

/// `~/x` as a path in the home folder; anything else as it is.
pub fn expand_home(raw: &str) -> PathBuf {
    match (raw.strip_prefix("~/"), home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if raw == "~" => home().unwrap_or_else(|| PathBuf::from(raw)),
        _ => PathBuf::from(raw),
    }
}

/// A sandbox named in `cove.toml`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NamedSandbox {
    /// The coved URL.
    pub url: String,
    /// Its token.
    pub token: Option<String>,
}

impl FileConfig {
    /// The token configured for the sandbox at `url`: its named entry's, else `sandbox_token`.
    pub fn token_for(&self, url: &str) -> Option<String> {
        let url = url.trim_end_matches('/');
        self.sandboxes
            .values()
            .find(|s| s.url.trim_end_matches('/') == url)
            .and_then(|s| s.token.clone())
            .or_else(|| self.sandbox_token.clone())
    }
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {message}")]
    File { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

/// The home folder (`HOME`), when set.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `~/.config/cove` (or `$XDG_CONFIG_HOME/cove`).
pub fn config_dir() -> PathBuf {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| home().map(|h| h.join(".config")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("cove")
}

/// `~/.local/share/cove` (or `$XDG_DATA_HOME/cove`).
pub fn data_dir() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| home().map(|h| h.join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("cove")
}

/// Reads `cove.toml` from `COVE_CONFIG` or the config folder; none is no error.
pub fn load_file() -> Result<FileConfig, ConfigError> {
    let path = std::env::var_os("COVE_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| config_dir().join("cove.toml"));
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).map_err(|e| ConfigError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
        Err(e) => Err(ConfigError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_file_is_strict() {
        let ok: FileConfig =
            toml::from_str("model = \"openai/gpt-4o\"\nmax_iterations = 50").unwrap();
        assert_eq!(ok.max_iterations, Some(50));
        assert!(
            toml::from_str::<FileConfig>("modle = \"x\"").is_err(),
            "typos are reported"
        );
    }
}
