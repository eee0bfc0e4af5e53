//! Which model, at which provider, and the client that streams its answers: `provider/model`
//! read from the command line or `cove.toml`, keys and addresses from the environment.

use std::sync::Arc;
use std::time::Duration;

use super::anthropic::Anthropic;
use super::openai::OpenAi;
use super::{ChatProvider, LlmError};

/// A model name that names no model; give `provider/model` or a bare model name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChoiceError(String);

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
    pub fn parse(spec: &str) -> Result<ModelChoice, ChoiceError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(ChoiceError("the model name is empty".into()));
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
                return Err(ChoiceError(format!(
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
pub fn connect(choice: &ModelChoice) -> Result<Arc<dyn ChatProvider>, LlmError> {
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
}
