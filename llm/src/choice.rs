//! Which model, at which provider, and the client that streams its answers: `provider/model`
//! read from the command line or `cove.toml`, keys and addresses from the environment.

use std::sync::Arc;
use std::time::Duration;

use super::anthropic::Anthropic;
use super::openai::OpenAi;
use super::{ChatProvider, LlmError, served};

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

    /// The model used when none is named: the one an OpenAI-compatible server at
    /// `OPENAI_BASE_URL` serves (it is asked), Anthropic's when only its key is set, else
    /// OpenAI's.
    pub async fn default_for_environment() -> Result<ModelChoice, DefaultModelError> {
        let has = |v: &str| env(v).is_some();
        if has("ANTHROPIC_API_KEY") && !has("OPENAI_API_KEY") && !has("OPENAI_BASE_URL") {
            return Ok(ModelChoice {
                provider: Provider::Anthropic,
                name: "claude-sonnet-4-5".into(),
            });
        }
        if let Some(base) = env("OPENAI_BASE_URL")
            && !base.contains("api.openai.com")
        {
            served::check_base_url("OPENAI_BASE_URL", &base)?;
            let http = client(Provider::OpenAi)?;
            let key = env("OPENAI_API_KEY");
            let models =
                served::served_models(&http, "OPENAI_BASE_URL", &base, key.as_deref()).await?;
            let name = served::the_one_served("OPENAI_BASE_URL", &base, &models)
                .map_err(DefaultModelError::Choose)?;
            return Ok(ModelChoice {
                provider: Provider::OpenAi,
                name,
            });
        }
        Ok(ModelChoice {
            provider: Provider::OpenAi,
            name: "gpt-4o".into(),
        })
    }

    /// `provider/model`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.provider.as_str(), self.name)
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The context window the server of `choice` states for it: a local OpenAI-compatible
/// server (`OPENAI_BASE_URL` other than OpenAI's) or Ollama. None for hosted APIs, whose
/// models Cove knows by name, and when the server does not say.
pub async fn served_window(choice: &ModelChoice) -> Option<served::ServedWindow> {
    let (base, key) = match choice.provider {
        Provider::OpenAi => (
            env("OPENAI_BASE_URL").filter(|b| !b.contains("api.openai.com"))?,
            env("OPENAI_API_KEY"),
        ),
        Provider::Ollama => (
            env("OLLAMA_BASE_URL").unwrap_or_else(|| "http://localhost:11434/v1".into()),
            None,
        ),
        Provider::Anthropic | Provider::OpenRouter => return None,
    };
    let http = client(choice.provider).ok()?;
    served::context_window(&http, &base, key.as_deref(), &choice.name).await
}

/// Why no model could be chosen when none was named.
#[derive(Debug, thiserror::Error)]
pub enum DefaultModelError {
    /// The server could not be asked, or its address is wrong: the message says what to do.
    #[error(transparent)]
    Server(#[from] LlmError),
    /// The server serves no model, or several: name one.
    #[error("{0}")]
    Choose(String),
}

/// The HTTP client of a provider's calls.
fn client(provider: Provider) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        // A stream that goes silent this long is dead; the answer is retried.
        .read_timeout(Duration::from_secs(300))
        .build()
        .map_err(|e| LlmError::Transport {
            provider: provider.as_str(),
            message: e.to_string(),
        })
}

/// The value of the address variable `variable`, checked to be an http(s) address.
fn base_url(variable: &'static str) -> Result<Option<String>, LlmError> {
    let Some(value) = env(variable) else {
        return Ok(None);
    };
    served::check_base_url(variable, value.trim())?;
    Ok(Some(value.trim().to_string()))
}

/// The provider for `choice`, configured from the environment.
pub fn connect(choice: &ModelChoice) -> Result<Arc<dyn ChatProvider>, LlmError> {
    let http = client(choice.provider)?;
    Ok(match choice.provider {
        Provider::OpenAi => {
            let base = base_url("OPENAI_BASE_URL")?;
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
            let base = base_url("ANTHROPIC_BASE_URL")?
                .unwrap_or_else(|| "https://api.anthropic.com".into());
            Arc::new(Anthropic::new(http, &base, key))
        }
        Provider::OpenRouter => {
            let key = env("OPENROUTER_API_KEY").ok_or(LlmError::MissingApiKey {
                provider: "openrouter",
                variable: "OPENROUTER_API_KEY",
            })?;
            let base = base_url("OPENROUTER_BASE_URL")?
                .unwrap_or_else(|| "https://openrouter.ai/api/v1".into());
            Arc::new(OpenAi::new(http, &base, Some(key), "openrouter"))
        }
        Provider::Ollama => {
            let base =
                base_url("OLLAMA_BASE_URL")?.unwrap_or_else(|| "http://localhost:11434/v1".into());
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
