//! The web tools' controller side: the search provider and images API a run uses, with the
//! keys the controller holds (the sandbox never sees them). With no search key, `web_search`
//! asks the sandbox, which searches a keyless engine in its browser; `web_fetch` always runs
//! in the sandbox.

pub mod images;
pub mod search;

use crate::config::WebConfig;
use images::ImagesApi;
use search::SearchProvider;

/// The seconds a `Retry-After` header asks for, when it gives a number.
pub(crate) fn retry_after(response: &reqwest::Response) -> Option<u64> {
    response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// What a run's web tools reach beyond the sandbox.
#[derive(Debug, Clone, Default)]
pub struct WebTools {
    /// The keyed search provider; none means the sandbox's keyless search.
    pub search: Option<SearchProvider>,
    /// The images API; none means no image tools.
    pub images: Option<ImagesApi>,
    pub http: reqwest::Client,
}

impl WebTools {
    /// The providers `cove.toml`'s `[web]` and the environment (`lookup`) configure:
    /// `COVE_SEARCH` overrides `search`; keys come only from the environment.
    pub fn configured(
        file: Option<&WebConfig>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<WebTools, String> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let file = file.cloned().unwrap_or_default();
        let searxng = get("SEARXNG_URL").or(file.searxng_url.clone());
        let with_searxng = |name: &str| {
            if name == "SEARXNG_URL" {
                searxng.clone()
            } else {
                get(name)
            }
        };
        let choice = get("COVE_SEARCH")
            .or(file.search.clone())
            .unwrap_or_else(|| "auto".into())
            .to_ascii_lowercase();
        let search = match choice.as_str() {
            "auto" => SearchProvider::from_env(&with_searxng),
            "browser" => None,
            "tavily" | "brave" | "searxng" => {
                let variable = match choice.as_str() {
                    "tavily" => "TAVILY_API_KEY",
                    "brave" => "BRAVE_API_KEY",
                    _ => "SEARXNG_URL",
                };
                // Only the chosen provider's settings count.
                let only = |name: &str| {
                    let ours = name == variable
                        || (choice != "searxng"
                            && name.ends_with("_BASE_URL")
                            && name.starts_with(&choice.to_ascii_uppercase()));
                    if ours { with_searxng(name) } else { None }
                };
                Some(SearchProvider::from_env(&only).ok_or_else(|| {
                    format!("web search is set to {choice}, but {variable} is not set")
                })?)
            }
            other => {
                return Err(format!(
                    "web search {other:?} is not one Cove knows: use auto, tavily, brave, searxng or browser"
                ));
            }
        };
        // The OpenAI key serves images only where it is OpenAI's: with a base URL of its
        // own (a local server), the images API must be named.
        let key = get("COVE_IMAGES_API_KEY").or_else(|| {
            (file.images_base_url.is_some()
                || get("COVE_IMAGES_BASE_URL").is_some()
                || get("OPENAI_BASE_URL").is_none())
            .then(|| get("OPENAI_API_KEY"))
            .flatten()
        });
        let images = key.map(|key| ImagesApi {
            base: get("COVE_IMAGES_BASE_URL")
                .or(file.images_base_url.clone())
                .unwrap_or_else(|| images::DEFAULT_BASE.into())
                .trim_end_matches('/')
                .to_string(),
            key,
            model: get("COVE_IMAGES_MODEL")
                .or(file.images_model.clone())
                .unwrap_or_else(|| images::DEFAULT_MODEL.into()),
        });
        Ok(WebTools {
            search,
            images,
            http: reqwest::Client::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn search_is_keyless_unless_a_key_is_there_or_a_provider_is_named() {
        let none = WebTools::configured(None, &with(&[])).unwrap();
        assert!(none.search.is_none() && none.images.is_none());
        let tavily = WebTools::configured(None, &with(&[("TAVILY_API_KEY", "k")])).unwrap();
        assert_eq!(tavily.search.unwrap().name(), "Tavily");
        let forced = WebTools::configured(
            None,
            &with(&[("TAVILY_API_KEY", "k"), ("COVE_SEARCH", "browser")]),
        )
        .unwrap();
        assert!(forced.search.is_none());
        let file = WebConfig {
            search: Some("searxng".into()),
            searxng_url: Some("http://searx.lan".into()),
            ..WebConfig::default()
        };
        let searx = WebTools::configured(Some(&file), &with(&[("TAVILY_API_KEY", "k")])).unwrap();
        assert_eq!(searx.search.unwrap().name(), "SearXNG");
        let missing = WebTools::configured(None, &with(&[("COVE_SEARCH", "brave")])).unwrap_err();
        assert!(missing.contains("BRAVE_API_KEY"), "{missing}");
        assert!(WebTools::configured(None, &with(&[("COVE_SEARCH", "bing")])).is_err());
    }

    #[test]
    fn the_openai_key_makes_images_only_where_it_is_openais() {
        let openai = WebTools::configured(None, &with(&[("OPENAI_API_KEY", "k")])).unwrap();
        let api = openai.images.unwrap();
        assert_eq!(
            (api.base.as_str(), api.model.as_str()),
            (images::DEFAULT_BASE, images::DEFAULT_MODEL)
        );
        let local = WebTools::configured(
            None,
            &with(&[
                ("OPENAI_API_KEY", "k"),
                ("OPENAI_BASE_URL", "http://localhost:8000/v1"),
            ]),
        )
        .unwrap();
        assert!(local.images.is_none());
        let named = WebTools::configured(
            None,
            &with(&[
                ("COVE_IMAGES_API_KEY", "k"),
                ("COVE_IMAGES_BASE_URL", "http://img.lan/v1/"),
            ]),
        )
        .unwrap();
        assert_eq!(named.images.unwrap().base, "http://img.lan/v1");
    }
}
