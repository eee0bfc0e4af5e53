//! Web search through a provider the user configured: Tavily, Brave or a SearXNG instance,
//! each in its documented wire format. The keys stay with the controller; the sandbox never
//! sees them. Every failure says what to do about it (a bad key, a rate limit, SearXNG's
//! JSON output switched off).

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

/// Most results one search asks for.
pub const MAX_RESULTS: usize = 20;
/// How long a provider may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// A configured search provider.
#[derive(Clone, PartialEq, Eq)]
pub enum SearchProvider {
    /// `POST {base}/search` with a bearer key (`TAVILY_API_KEY`).
    Tavily { key: String, base: String },
    /// `GET {base}/res/v1/web/search` with `X-Subscription-Token` (`BRAVE_API_KEY`).
    Brave { key: String, base: String },
    /// `GET {base}/search?format=json` of a SearXNG instance (`SEARXNG_URL`).
    Searxng { base: String },
}

impl std::fmt::Debug for SearchProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        write!(f, "SearchProvider({})", self.name())
    }
}

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("the search query is empty: say what to look for")]
    EmptyQuery,
    #[error("{provider} refused the key ({status}): check {variable}")]
    Unauthorized {
        provider: &'static str,
        status: u16,
        variable: &'static str,
    },
    #[error("{provider} is rate limiting searches{}; wait, or search less often", retry_after.map(|s| format!(" (retry after {s} s)")).unwrap_or_default())]
    RateLimited {
        provider: &'static str,
        retry_after: Option<u64>,
    },
    #[error(
        "the SearXNG instance does not answer in JSON (403): enable `json` under search.formats in its settings.yml"
    )]
    JsonDisabled,
    #[error("{provider} answered {status}: {body}")]
    Refused {
        provider: &'static str,
        status: u16,
        body: String,
    },
    #[error("{provider} could not be reached: {why}")]
    Unreachable { provider: &'static str, why: String },
    #[error("{provider} answered something that is not its search result: {why}")]
    Malformed { provider: &'static str, why: String },
}

impl SearchProvider {
    /// The provider the environment configures (`lookup` reads a variable): Tavily, then
    /// Brave, then SearXNG; `TAVILY_BASE_URL` and `BRAVE_BASE_URL` point elsewhere (a proxy,
    /// a test server).
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Option<SearchProvider> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let base = |name: &str, default: &str| {
            get(name)
                .unwrap_or_else(|| default.to_string())
                .trim_end_matches('/')
                .to_string()
        };
        if let Some(key) = get("TAVILY_API_KEY") {
            return Some(SearchProvider::Tavily {
                key,
                base: base("TAVILY_BASE_URL", "https://api.tavily.com"),
            });
        }
        if let Some(key) = get("BRAVE_API_KEY") {
            return Some(SearchProvider::Brave {
                key,
                base: base("BRAVE_BASE_URL", "https://api.search.brave.com"),
            });
        }
        get("SEARXNG_URL").map(|url| SearchProvider::Searxng {
            base: url.trim_end_matches('/').to_string(),
        })
    }

    /// Its name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            SearchProvider::Tavily { .. } => "Tavily",
            SearchProvider::Brave { .. } => "Brave Search",
            SearchProvider::Searxng { .. } => "SearXNG",
        }
    }

    fn key_variable(&self) -> &'static str {
        match self {
            SearchProvider::Tavily { .. } => "TAVILY_API_KEY",
            SearchProvider::Brave { .. } => "BRAVE_API_KEY",
            SearchProvider::Searxng { .. } => "SEARXNG_URL and what guards the instance",
        }
    }

    /// Searches for `query`, at most `count` results (1 to [`MAX_RESULTS`]).
    pub async fn search(
        &self,
        http: &reqwest::Client,
        query: &str,
        count: usize,
    ) -> Result<Vec<SearchHit>, SearchError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(SearchError::EmptyQuery);
        }
        let count = count.clamp(1, MAX_RESULTS);
        let request = match self {
            SearchProvider::Tavily { key, base } => http
                .post(format!("{base}/search"))
                .bearer_auth(key)
                .json(&json!({"query": query, "max_results": count, "search_depth": "basic"})),
            SearchProvider::Brave { key, base } => http
                .get(format!("{base}/res/v1/web/search"))
                .header("X-Subscription-Token", key)
                .header("Accept", "application/json")
                .query(&[("q", query), ("count", &count.to_string())]),
            SearchProvider::Searxng { base } => http
                .get(format!("{base}/search"))
                .query(&[("q", query), ("format", "json")]),
        };
        let provider = self.name();
        let response =
            request
                .timeout(TIMEOUT)
                .send()
                .await
                .map_err(|e| SearchError::Unreachable {
                    provider,
                    why: e.to_string(),
                })?;
        let status = response.status().as_u16();
        let retry_after = super::retry_after(&response);
        let body = response
            .text()
            .await
            .map_err(|e| SearchError::Unreachable {
                provider,
                why: e.to_string(),
            })?;
        match status {
            200..=299 => {}
            403 if matches!(self, SearchProvider::Searxng { .. }) => {
                return Err(SearchError::JsonDisabled);
            }
            401 | 403 => {
                return Err(SearchError::Unauthorized {
                    provider,
                    status,
                    variable: self.key_variable(),
                });
            }
            429 => {
                return Err(SearchError::RateLimited {
                    provider,
                    retry_after,
                });
            }
            _ => {
                return Err(SearchError::Refused {
                    provider,
                    status,
                    body: body.chars().take(300).collect(),
                });
            }
        }
        let mut hits = self.parse(&body)?;
        hits.truncate(count);
        Ok(hits)
    }

    /// The hits of a successful answer's `body`.
    fn parse(&self, body: &str) -> Result<Vec<SearchHit>, SearchError> {
        #[derive(Deserialize)]
        struct Item {
            #[serde(default)]
            title: String,
            url: String,
            #[serde(default, alias = "description")]
            content: String,
        }
        #[derive(Deserialize)]
        struct Listing {
            #[serde(default)]
            results: Vec<Item>,
        }
        #[derive(Deserialize)]
        struct BraveAnswer {
            #[serde(default)]
            web: Option<Listing>,
        }
        let malformed = |e: serde_json::Error| SearchError::Malformed {
            provider: self.name(),
            why: e.to_string(),
        };
        let items = match self {
            SearchProvider::Brave { .. } => serde_json::from_str::<BraveAnswer>(body)
                .map_err(malformed)?
                .web
                .map(|w| w.results)
                .unwrap_or_default(),
            _ => {
                serde_json::from_str::<Listing>(body)
                    .map_err(malformed)?
                    .results
            }
        };
        Ok(items
            .into_iter()
            .filter(|i| i.url.starts_with("http://") || i.url.starts_with("https://"))
            .map(|i| SearchHit {
                title: plain(&i.title),
                url: i.url,
                snippet: plain(&i.content),
            })
            .collect())
    }
}

/// Text without the markup some providers put in snippets (Brave's `<strong>`), entities
/// decoded, whitespace folded.
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The hits as the model reads them: a numbered list of title, URL and snippet.
pub fn numbered(hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return "No results.".to_string();
    }
    hits.iter()
        .enumerate()
        .map(|(i, h)| {
            let snippet = if h.snippet.is_empty() {
                String::new()
            } else {
                format!("\n   {}", h.snippet)
            };
            format!("{}. {}\n   {}{snippet}", i + 1, h.title, h.url)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn the_environment_chooses_the_provider_and_its_address() {
        let tavily = SearchProvider::from_env(&env(&[
            ("TAVILY_API_KEY", "tvly-1"),
            ("BRAVE_API_KEY", "b"),
        ]));
        assert_eq!(
            tavily,
            Some(SearchProvider::Tavily {
                key: "tvly-1".into(),
                base: "https://api.tavily.com".into()
            })
        );
        let brave = SearchProvider::from_env(&env(&[
            ("TAVILY_API_KEY", " "),
            ("BRAVE_API_KEY", "b"),
            ("BRAVE_BASE_URL", "http://127.0.0.1:9/"),
        ]));
        assert_eq!(
            brave,
            Some(SearchProvider::Brave {
                key: "b".into(),
                base: "http://127.0.0.1:9".into()
            })
        );
        assert_eq!(
            format!("{brave:?}"),
            "Some(SearchProvider(Brave Search))",
            "no key in logs"
        );
        let searx = SearchProvider::from_env(&env(&[("SEARXNG_URL", "https://searx.example/")]));
        assert_eq!(
            searx,
            Some(SearchProvider::Searxng {
                base: "https://searx.example".into()
            })
        );
        assert_eq!(SearchProvider::from_env(&env(&[])), None);
    }

    #[test]
    fn each_wire_format_is_read_and_markup_dropped() {
        let tavily = SearchProvider::Tavily {
            key: String::new(),
            base: String::new(),
        };
        let hits = tavily
            .parse(r#"{"query":"q","answer":null,"images":[],"results":[{"title":"Rust","url":"https://www.rust-lang.org/","content":"A language  empowering everyone","score":0.98,"raw_content":null}],"response_time":1.2}"#)
            .unwrap();
        assert_eq!(
            hits,
            vec![SearchHit {
                title: "Rust".into(),
                url: "https://www.rust-lang.org/".into(),
                snippet: "A language empowering everyone".into()
            }]
        );
        let brave = SearchProvider::Brave {
            key: String::new(),
            base: String::new(),
        };
        let hits = brave
            .parse(r#"{"type":"search","query":{"original":"q"},"web":{"type":"search","results":[{"title":"The <strong>Rust</strong> Book","url":"https://doc.rust-lang.org/book/","description":"Learn <strong>Rust</strong> &amp; more","age":"2 days"}]}}"#)
            .unwrap();
        assert_eq!(hits[0].title, "The Rust Book");
        assert_eq!(hits[0].snippet, "Learn Rust & more");
        assert!(brave.parse(r#"{"type":"search"}"#).unwrap().is_empty());
        let searx = SearchProvider::Searxng {
            base: String::new(),
        };
        let hits = searx
            .parse(r#"{"query":"q","number_of_results":0,"results":[{"url":"https://a.example/","title":"A","content":"about a","engine":"duckduckgo","score":1.0},{"url":"javascript:alert(1)","title":"bad"}],"answers":[],"suggestions":[],"unresponsive_engines":[]}"#)
            .unwrap();
        assert_eq!(hits.len(), 1, "only http(s) results");
        assert!(matches!(
            searx.parse("<html>"),
            Err(SearchError::Malformed { .. })
        ));
        assert_eq!(numbered(&hits), "1. A\n   https://a.example/\n   about a");
        assert_eq!(numbered(&[]), "No results.");
    }
}
