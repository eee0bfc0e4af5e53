//! Which URLs the browser is told to open, and by whom.
//!
//! The agent (the API token's holder) may open any web page, its own servers on `localhost`
//! included. A person taking over is a weaker principal: what they type, and every document
//! their tabs load meanwhile (see `takeover::guard`), may only come from the web, never from
//! this machine's loopback (coved, the apps of the image) or its link and metadata services,
//! nor be a `file:`, `data:` or `javascript:` page that would read files or run its own
//! script in the agent's browser. The check resolves names itself; a name that resolves
//! elsewhere when the browser asks again (DNS rebinding) is beyond it: the sandbox's network
//! policy is the control there.

use std::time::Duration;

use url::{Host, Url};

use super::BrowserError;
use crate::net::{is_internal, is_localhost_name};

/// How long resolving a person's host name may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);

/// Set when names are resolved by the proxy the sandbox reaches the web through (a local
/// sandbox, whose network of its own has no resolver): that proxy refuses the machine's
/// loopback and private addresses itself, and here a name cannot be looked up.
static NAMES_RESOLVED_BY_PROXY: std::sync::OnceLock<()> = std::sync::OnceLock::new();

/// Says that the browser reaches the web through a proxy that resolves names and refuses
/// internal addresses (call once, at startup).
pub fn names_resolved_by_proxy() {
    let _ = NAMES_RESOLVED_BY_PROXY.set(());
}

/// A URL the browser can load: a scheme is added when missing (`http://` for local hosts,
/// `https://` otherwise). `file:` is refused: a page has no business reading the sandbox's
/// files, and the agent reads them with the file tools.
pub fn normalise_url(raw: &str) -> Result<String, BrowserError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(BrowserError::InvalidRequest("url is empty".into()));
    }
    let lower = raw.to_ascii_lowercase();
    let with_scheme =
        if lower.contains("://") || ["about:", "data:"].iter().any(|p| lower.starts_with(p)) {
            raw.to_string()
        } else if ["localhost", "127.", "0.0.0.0", "[::1]"]
            .iter()
            .any(|p| lower.starts_with(p))
        {
            format!("http://{raw}")
        } else {
            format!("https://{raw}")
        };
    let parsed = Url::parse(&with_scheme)
        .map_err(|e| BrowserError::InvalidRequest(format!("{raw:?} is not a URL: {e}")))?;
    match parsed.scheme() {
        "http" | "https" | "about" | "data" => Ok(parsed.to_string()),
        "file" => Err(BrowserError::InvalidRequest(
            "file: URLs are not opened; read files with the file tools, or serve the folder (python3 -m http.server 8000) and open http://localhost:8000/".into(),
        )),
        other => Err(BrowserError::InvalidRequest(format!(
            "the {other}: scheme is not supported; use http or https"
        ))),
    }
}

/// The URL a person taking over typed, if they may open it (see [`person_may_load`]).
pub async fn person_may_open(raw: &str) -> Result<String, BrowserError> {
    person_may_load(&normalise_url(raw)?).await
}

/// `raw` (a whole URL) if a person's tab may load it: http or https, on a host that is not
/// this machine, its link (cloud metadata) or a known metadata service, by name or by any
/// address the name resolves to now.
pub async fn person_may_load(raw: &str) -> Result<String, BrowserError> {
    let url = Url::parse(raw)
        .map_err(|e| BrowserError::InvalidRequest(format!("{raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(BrowserError::InvalidRequest(
            "only http and https pages can be opened from the takeover page".into(),
        ));
    }
    let refused = || {
        BrowserError::InvalidRequest(format!(
            "{} is on the sandbox itself; the takeover page only opens pages on the web",
            url.host_str().unwrap_or_default()
        ))
    };
    let port = url.port_or_known_default().unwrap_or(80);
    match url.host() {
        None => Err(BrowserError::InvalidRequest(format!("{raw:?} has no host"))),
        Some(Host::Ipv4(ip)) if is_internal(ip.into()) => Err(refused()),
        Some(Host::Ipv6(ip)) if is_internal(ip.into()) => Err(refused()),
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => Ok(url.to_string()),
        Some(Host::Domain(name)) => {
            if is_localhost_name(name) {
                return Err(refused());
            }
            if NAMES_RESOLVED_BY_PROXY.get().is_some() {
                return Ok(url.to_string());
            }
            let resolved = tokio::time::timeout(
                RESOLVE_TIMEOUT,
                tokio::net::lookup_host((name.to_string(), port)),
            )
            .await;
            let addresses: Vec<_> = match resolved {
                Ok(Ok(found)) => found.collect(),
                _ => {
                    return Err(BrowserError::NavigationFailed(format!(
                        "cannot find the host {name}"
                    )));
                }
            };
            if addresses.iter().any(|a| is_internal(a.ip())) {
                return Err(refused());
            }
            Ok(url.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_get_a_sensible_scheme() {
        assert_eq!(
            normalise_url("example.com").unwrap(),
            "https://example.com/"
        );
        assert_eq!(
            normalise_url("localhost:8080/x").unwrap(),
            "http://localhost:8080/x"
        );
        assert_eq!(
            normalise_url("127.0.0.1:3000").unwrap(),
            "http://127.0.0.1:3000/"
        );
        assert_eq!(normalise_url(" http://a.b/c ").unwrap(), "http://a.b/c");
        assert_eq!(normalise_url("about:blank").unwrap(), "about:blank");
        assert!(normalise_url("").is_err());
        assert!(normalise_url("javascript:alert(1)").is_err());
        assert!(normalise_url("http://").is_err());
        assert!(normalise_url("file:///etc/passwd").is_err());
        assert!(normalise_url("FILE:///etc/passwd").is_err());
    }

    #[tokio::test]
    async fn a_person_cannot_open_the_sandbox_itself() {
        for url in [
            "http://127.0.0.1:9222/json/version",
            "127.0.0.1:7700/v1/info",
            "http://localhost:7700/",
            "http://p8000.localhost:7700/",
            "http://[::1]:80/",
            "http://[::ffff:127.0.0.1]/",
            "http://0x7f.1/",
            "http://2130706433/",
            "http://0.0.0.0:7700/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "file:///etc/passwd",
            "data:text/html,<script>open('http://127.0.0.1')</script>",
            "javascript:alert(1)",
            "view-source:http://127.0.0.1/",
            "chrome://settings",
            "about:blank",
        ] {
            assert!(person_may_open(url).await.is_err(), "{url}");
        }
        assert_eq!(
            person_may_open("http://192.0.2.2:8000/x").await.unwrap(),
            "http://192.0.2.2:8000/x"
        );
    }
}
