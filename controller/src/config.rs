//! Configuration: `~/.config/cove/cove.toml`, then the environment, then flags; later wins.
//! Also where Cove keeps its data, and which model provider serves a `provider/model` name.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::llm::anthropic::Anthropic;
use crate::llm::openai::OpenAi;
use crate::llm::{ChatProvider, LlmError};

/// What `cove.toml` may set.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
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
    /// Sandboxes by name (`[sandboxes.NAME]`), for `--sandbox NAME`.
    #[serde(default)]
    pub sandboxes: std::collections::BTreeMap<String, NamedSandbox>,
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

fn home() -> Option<PathBuf> {
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

/// The provider families Cove speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    Anthropic,
    OpenRouter,
    Ollama,
}

impl Provider {
    /// The name used in `provider/model`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::OpenRouter => "openrouter",
            Provider::Ollama => "ollama",
        }
    }
}

/// A chosen model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    pub provider: Provider,
    /// The model's name at its provider.
    pub name: String,
}

impl ModelChoice {
    /// Reads `provider/model`; a bare name is OpenAI's unless it is a Claude model.
    pub fn parse(spec: &str) -> Result<ModelChoice, ConfigError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(ConfigError::Invalid("the model name is empty".into()));
        }
        let known = [
            Provider::OpenAi,
            Provider::Anthropic,
            Provider::OpenRouter,
            Provider::Ollama,
        ];
        if let Some((prefix, rest)) = spec.split_once('/')
            && let Some(provider) = known.iter().find(|p| p.as_str() == prefix)
        {
            if rest.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "{spec:?} names no model after the provider"
                )));
            }
            return Ok(ModelChoice {
                provider: *provider,
                name: rest.to_string(),
            });
        }
        let provider = if spec.starts_with("claude") {
            Provider::Anthropic
        } else {
            Provider::OpenAi
        };
        Ok(ModelChoice {
            provider,
            name: spec.to_string(),
        })
    }

    /// The model used when none is configured: Anthropic's when only its key is set.
    pub fn default_for_environment() -> ModelChoice {
        let has = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
        if has("ANTHROPIC_API_KEY") && !has("OPENAI_API_KEY") && !has("OPENAI_BASE_URL") {
            ModelChoice {
                provider: Provider::Anthropic,
                name: "claude-sonnet-4-5".into(),
            }
        } else {
            ModelChoice {
                provider: Provider::OpenAi,
                name: "gpt-4o".into(),
            }
        }
    }

    /// `provider/model`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.provider.as_str(), self.name)
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The provider for `choice`, configured from the environment.
pub fn provider(choice: &ModelChoice) -> Result<Arc<dyn ChatProvider>, LlmError> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        // A stream that goes silent this long is dead; the answer is retried.
        .read_timeout(Duration::from_secs(300))
        .build()
        .map_err(|e| LlmError::Transport {
            provider: choice.provider.as_str(),
            message: e.to_string(),
        })?;
    Ok(match choice.provider {
        Provider::OpenAi => {
            let base = env("OPENAI_BASE_URL");
            let key = env("OPENAI_API_KEY");
            if base.is_none() && key.is_none() {
                return Err(LlmError::MissingApiKey {
                    provider: "openai",
                    variable: "OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)",
                });
            }
            let base = base.unwrap_or_else(|| "https://api.openai.com/v1".into());
            Arc::new(OpenAi::new(http, &base, key, "openai"))
        }
        Provider::Anthropic => {
            let key = env("ANTHROPIC_API_KEY").ok_or(LlmError::MissingApiKey {
                provider: "anthropic",
                variable: "ANTHROPIC_API_KEY",
            })?;
            let base =
                env("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".into());
            Arc::new(Anthropic::new(http, &base, key))
        }
        Provider::OpenRouter => {
            let key = env("OPENROUTER_API_KEY").ok_or(LlmError::MissingApiKey {
                provider: "openrouter",
                variable: "OPENROUTER_API_KEY",
            })?;
            let base =
                env("OPENROUTER_BASE_URL").unwrap_or_else(|| "https://openrouter.ai/api/v1".into());
            Arc::new(OpenAi::new(http, &base, Some(key), "openrouter"))
        }
        Provider::Ollama => {
            let base = env("OLLAMA_BASE_URL").unwrap_or_else(|| "http://localhost:11434/v1".into());
            Arc::new(OpenAi::new(http, &base, None, "ollama"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_pick_their_provider() {
        let m = ModelChoice::parse("anthropic/claude-sonnet-4-5").unwrap();
        assert_eq!(
            (m.provider, m.name.as_str()),
            (Provider::Anthropic, "claude-sonnet-4-5")
        );
        let m = ModelChoice::parse("openrouter/anthropic/claude-3.5-sonnet").unwrap();
        assert_eq!(
            (m.provider, m.name.as_str()),
            (Provider::OpenRouter, "anthropic/claude-3.5-sonnet")
        );
        assert_eq!(
            ModelChoice::parse("claude-opus-4").unwrap().provider,
            Provider::Anthropic
        );
        assert_eq!(
            ModelChoice::parse("gpt-4o").unwrap().provider,
            Provider::OpenAi
        );
        assert_eq!(
            ModelChoice::parse("ollama/llama3.1:8b").unwrap().label(),
            "ollama/llama3.1:8b"
        );
        assert_eq!(
            ModelChoice::parse("meta-llama/Llama-3").unwrap().name,
            "meta-llama/Llama-3"
        );
        assert!(ModelChoice::parse("").is_err());
        assert!(ModelChoice::parse("openai/").is_err());
    }

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
