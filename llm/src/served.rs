//! What an OpenAI-compatible server says it serves (`GET {base}/models`): the model to use
//! when none is named, and, when the server cannot be used, why and what to change.

use serde_json::Value;

use super::LlmError;

/// Most model names listed in a message.
const NAMES_LISTED: usize = 12;

/// The ids of the models the server at `base` serves, in its order.
pub async fn served_models(
    http: &reqwest::Client,
    variable: &'static str,
    base: &str,
    key: Option<&str>,
) -> Result<Vec<String>, LlmError> {
    let base = base.trim_end_matches('/');
    let url = format!("{base}/models");
    let mut request = http.get(&url);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|e| super::transport_error("openai", &e))?;
    let status = response.status().as_u16();
    if status == 401 || status == 403 {
        return Err(LlmError::Unauthorized {
            provider: "openai",
            status,
            message: super::error_message(&response.text().await.unwrap_or_default()),
        });
    }
    if status != 200 {
        return Err(LlmError::BadBaseUrl {
            variable,
            url: base.to_string(),
            why: format!("it answered HTTP {status} at {url}{}", try_v1(base)),
        });
    }
    let body: Value = response.json().await.map_err(|_| LlmError::BadBaseUrl {
        variable,
        url: base.to_string(),
        why: format!("{url} did not answer with a model list{}", try_v1(base)),
    })?;
    Ok(body["data"]
        .as_array()
        .map(|models| {
            models
                .iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// How long each question about a server's window may take: it is asked before every run.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A model's context window as its server states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedWindow {
    pub tokens: u32,
    /// Where the server said it (`/props`, `/v1/models`, ...).
    pub source: String,
}

/// The context window the server at `base` (an OpenAI-compatible API, `…/v1`) runs `model`
/// with, asked where each kind of server says it: vLLM's model list (`max_model_len`),
/// llama.cpp's `/props` (`n_ctx`), Ollama's `/api/ps` and `/api/show` (`num_ctx`), LM
/// Studio's `/api/v0/models` (the loaded context). None when no answer says it.
pub async fn context_window(
    http: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    model: &str,
) -> Option<ServedWindow> {
    let base = base.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let get = |url: String| {
        let mut request = http.get(url).timeout(PROBE_TIMEOUT);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        request
    };
    let found = |tokens: Option<u64>, source: String| {
        tokens
            .and_then(|t| u32::try_from(t).ok())
            .filter(|t| *t >= 256)
            .map(|tokens| ServedWindow { tokens, source })
    };
    if let Some(list) = json_of(get(format!("{base}/models"))).await
        && let Some(entry) = list["data"]
            .as_array()
            .and_then(|d| d.iter().find(|m| m["id"] == model))
        && let Some(window) = found(
            [
                "max_model_len",
                "loaded_context_length",
                "context_length",
                "context_window",
            ]
            .iter()
            .find_map(|k| entry[k].as_u64()),
            format!("{base}/models"),
        )
    {
        return Some(window);
    }
    if let Some(props) = json_of(get(format!("{root}/props"))).await
        && let Some(window) = found(
            props["default_generation_settings"]["n_ctx"]
                .as_u64()
                .or_else(|| props["n_ctx"].as_u64()),
            format!("{root}/props"),
        )
    {
        return Some(window);
    }
    if let Some(window) = ollama_window(http, root, model).await {
        return Some(window);
    }
    let lm_studio = format!("{root}/api/v0/models/{model}");
    let entry = json_of(get(lm_studio.clone())).await?;
    found(
        entry["loaded_context_length"]
            .as_u64()
            .or_else(|| entry["max_context_length"].as_u64()),
        lm_studio,
    )
}

/// Ollama's window for `model`: the one it runs it with now (`/api/ps`), else the model's
/// own `num_ctx`. Ollama gives a model without one its default (4,096 tokens on most
/// machines), whatever the model could take, so that is not asked.
async fn ollama_window(http: &reqwest::Client, root: &str, model: &str) -> Option<ServedWindow> {
    let ps = format!("{root}/api/ps");
    if let Some(running) = json_of(http.get(&ps).timeout(PROBE_TIMEOUT)).await
        && let Some(tokens) = running["models"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["name"] == model || m["model"] == model))
            .and_then(|m| m["context_length"].as_u64())
            .and_then(|t| u32::try_from(t).ok())
    {
        return Some(ServedWindow { tokens, source: ps });
    }
    let show = format!("{root}/api/show");
    let shown = json_of(
        http.post(&show)
            .timeout(PROBE_TIMEOUT)
            .json(&serde_json::json!({ "model": model })),
    )
    .await?;
    let tokens = shown["parameters"].as_str()?.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse::<u32>().ok())
            .flatten()
    })?;
    Some(ServedWindow {
        tokens,
        source: show,
    })
}

/// The JSON a request answers with, when it answers 200 with JSON.
async fn json_of(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

/// The window a server's refusal of a too-long prompt states: OpenAI's and vLLM's
/// "maximum context length is N tokens", llama.cpp's `n_ctx` (in its error object, or
/// `n_ctx: N` in its text).
pub fn window_from_refusal(message: &str) -> Option<u32> {
    let lower = message.to_ascii_lowercase();
    for marker in [
        "maximum context length is ",
        "\"n_ctx\":",
        "n_ctx: ",
        "n_ctx = ",
        "context window of ",
        "context length of ",
    ] {
        if let Some(at) = lower.find(marker) {
            let digits: String = lower[at + marker.len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == ',')
                .filter(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse::<u32>()
                && n >= 256
            {
                return Some(n);
            }
        }
    }
    None
}

/// The one model a server serves, or why there is no one to pick.
pub fn the_one_served(variable: &str, base: &str, models: &[String]) -> Result<String, String> {
    match models {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "the server at {variable}={base} serves no model: load one there, or name it with --model openai/NAME"
        )),
        several => {
            let mut names = several
                .iter()
                .take(NAMES_LISTED)
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ");
            if several.len() > NAMES_LISTED {
                names.push_str(&format!(" and {} more", several.len() - NAMES_LISTED));
            }
            Err(format!(
                "the server at {variable}={base} serves {} models ({names}): choose one with --model openai/NAME or COVE_MODEL",
                several.len()
            ))
        }
    }
}

/// A hint for an address that lacks the `/v1` most OpenAI-compatible servers serve under.
pub(crate) fn try_v1(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") || base.contains("/v1/") {
        String::new()
    } else {
        format!("; OpenAI-compatible servers usually answer under /v1: try {base}/v1")
    }
}

/// Checks that `value` of `variable` is an http(s) address, as a person might mistype it.
pub fn check_base_url(variable: &'static str, value: &str) -> Result<(), LlmError> {
    let bad = |why: String| LlmError::BadBaseUrl {
        variable,
        url: value.to_string(),
        why,
    };
    match reqwest::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(()),
        Ok(url) if url.cannot_be_a_base() || url.host().is_none() => Err(bad(format!(
            "it is not an http(s) address: write http://{value}"
        ))),
        Ok(url) => Err(bad(format!(
            "Cove speaks http and https, not {}:",
            url.scheme()
        ))),
        Err(_) => Err(bad(format!(
            "it is not an http(s) address: write http://{value}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_must_be_http() {
        assert!(check_base_url("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1").is_ok());
        assert!(check_base_url("OPENAI_BASE_URL", "https://api.example.com/v1").is_ok());
        for bad in [
            "localhost:8080/v1",
            "127.0.0.1:8080",
            "ftp://x/v1",
            "nonsense",
        ] {
            let e = check_base_url("OPENAI_BASE_URL", bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains("OPENAI_BASE_URL") && e.contains(bad), "{e}");
        }
        let e = check_base_url("OPENAI_BASE_URL", "localhost:8080/v1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("write http://localhost:8080/v1"), "{e}");
    }

    #[test]
    fn one_model_is_picked_several_are_listed() {
        let one = vec!["SmolLM2".to_string()];
        assert_eq!(the_one_served("V", "http://x/v1", &one).unwrap(), "SmolLM2");
        let e = the_one_served("V", "http://x/v1", &[]).unwrap_err();
        assert!(e.contains("serves no model"), "{e}");
        let many: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
        let e = the_one_served("V", "http://x/v1", &many).unwrap_err();
        assert!(
            e.contains("serves 20 models") && e.contains("m11") && e.contains("and 8 more"),
            "{e}"
        );
    }

    #[test]
    fn windows_are_read_from_refusals_as_servers_word_them() {
        // vLLM and OpenAI.
        assert_eq!(
            window_from_refusal(
                "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens (8873 in the messages, 127 in the completion)."
            ),
            Some(4096)
        );
        // llama.cpp's error object.
        assert_eq!(
            window_from_refusal(
                r#"{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8873,"n_ctx":2048}"#
            ),
            Some(2048)
        );
        assert_eq!(
            window_from_refusal("prompt is too long: 210,000 tokens > 200,000 maximum"),
            None
        );
        assert_eq!(
            window_from_refusal("context window of 32,768 tokens"),
            Some(32_768)
        );
    }

    #[test]
    fn an_address_without_v1_gets_a_hint() {
        assert!(try_v1("http://x:8080").contains("try http://x:8080/v1"));
        assert!(try_v1("http://x:8080/v1/").is_empty());
        assert!(try_v1("https://openrouter.ai/api/v1").is_empty());
    }
}
