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
    fn an_address_without_v1_gets_a_hint() {
        assert!(try_v1("http://x:8080").contains("try http://x:8080/v1"));
        assert!(try_v1("http://x:8080/v1/").is_empty());
        assert!(try_v1("https://openrouter.ai/api/v1").is_empty());
    }
}
