//! Workspace preview: what the agent built, opened in a person's browser. The workspace's
//! files are served read-only at `files-<run>.<base>`; each server the agent started inside
//! the sandbox is reached at `p<port>-<run>.<base>`, over HTTP and WebSocket. See [`origins`] for why
//! each has an origin of its own, and [`ports`] for which servers qualify.
//!
//! A browser cannot send the API's bearer header, so these origins also take a preview token:
//! its own secret, good for nothing but previews. A link carries it once (`?cove_preview=`);
//! the daemon trades it for a cookie of that origin alone and sends the browser on to the same
//! URL without it, so the token leaves the address bar and never reaches the app.
//!
//! On the daemon's own origin, `/preview/...` and `/proxy/<port>/...` answer the API token
//! (for tools) and send browsers to the preview origins.

pub mod files;
pub mod http;
pub mod origins;
pub mod ports;
pub mod proxy;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::header::{
    AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::AppState;
use crate::auth::AuthToken;
use crate::random::random_hex;
use origins::{HostRefusal, Origins, PublicUrl, Site};
use ports::PortGuard;

/// The query parameter that carries the preview token in a link.
pub const TOKEN_PARAM: &str = "cove_preview";
/// Every preview cookie's name starts so (a daemon adds its own id): none reaches an app.
const COOKIE_STEM: &str = "cove_preview";
/// How long a preview cookie lives; the link works again after it expires.
const COOKIE_MAX_AGE_SECS: u64 = 12 * 60 * 60;
/// Proxied requests and sockets open at once, at most.
const MAX_PROXIED: usize = 256;

/// How the preview routes are guarded.
#[derive(Debug, Clone, Default)]
pub struct PreviewSettings {
    /// No token needed: the operator guards the daemon some other way.
    pub public: bool,
    /// How people reach the daemon, when the operator said.
    pub public_url: Option<PublicUrl>,
}

/// The preview tokens, cookie and origins of one daemon.
pub struct Preview {
    /// One token per preview origin, made when its first link is: an app that learns the
    /// token of its own origin (its service worker sees the link opened) gains nothing more.
    tokens: Mutex<HashMap<Site, AuthToken>>,
    pub public: bool,
    /// This daemon's cookie: a name of its own, so daemons on one host never overwrite each
    /// other's, and `__Host-` behind https so no other origin can set it.
    cookie_name: String,
    secure: bool,
    pub origins: Origins,
    pub ports: PortGuard,
    /// Permits for proxied requests and sockets.
    pub proxied: Arc<Semaphore>,
}

impl Preview {
    /// Fresh preview origins and tokens (links from before a restart stop working).
    pub fn new(settings: &PreviewSettings) -> Preview {
        let secure = settings.public_url.as_ref().is_some_and(|u| u.https);
        let id = random_hex(4);
        let cookie_name = if secure {
            format!("__Host-{COOKIE_STEM}_{id}")
        } else {
            format!("{COOKIE_STEM}_{id}")
        };
        Preview {
            tokens: Mutex::new(HashMap::new()),
            public: settings.public,
            cookie_name,
            secure,
            origins: Origins::new(settings.public_url.clone(), id),
            ports: PortGuard::default(),
            proxied: Arc::new(Semaphore::new(MAX_PROXIED)),
        }
    }

    /// The query string a link to `site` carries, empty when no token is needed.
    pub fn link_query(&self, site: Site) -> String {
        if self.public {
            return String::new();
        }
        let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        let token = tokens.entry(site).or_insert_with(AuthToken::generate);
        format!("?{TOKEN_PARAM}={}", token.expose())
    }

    /// Whether `presented` is the token of `site`.
    fn matches(&self, site: Site, presented: &str) -> bool {
        let tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        tokens.get(&site).is_some_and(|t| t.matches(presented))
    }

    fn set_cookie(&self, token: &str) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={COOKIE_MAX_AGE_SECS}{secure}",
            self.cookie_name,
        )
    }
}

/// Whether a cookie name is a preview cookie (of any daemon).
pub(crate) fn is_preview_cookie(name: &str) -> bool {
    name.strip_prefix("__Host-")
        .unwrap_or(name)
        .starts_with(COOKIE_STEM)
}

/// The value of cookie `name` in a `Cookie` header.
fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

/// `path` followed by `query` without its `cove_preview` parameter.
pub(crate) fn path_without_token(path: &str, query: Option<&str>) -> String {
    let kept: Vec<&str> = query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some(TOKEN_PARAM))
        .collect();
    if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// `uri` without the `cove_preview` parameter.
fn without_token(uri: &Uri) -> String {
    path_without_token(uri.path(), uri.query())
}

/// Whether the request carries the API's bearer token.
pub(crate) fn has_api_token(app: &AppState, headers: &HeaderMap) -> bool {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .is_some_and(|t| app.token.matches(t))
}

/// Outermost middleware: sends each request to the site its `Host` names. The preview
/// origins never reach the API's routes; the API's origin never serves previewed content.
pub async fn by_host(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let host = request.headers().get(HOST).and_then(|h| h.to_str().ok());
    match app.preview.origins.site(host) {
        Err(refusal) => refuse_host(&refusal),
        Ok((Site::Daemon, _)) => next.run(request).await,
        Ok((Site::Stale, _)) => text(
            StatusCode::NOT_FOUND,
            "404: this preview address belongs to another sandbox, or to an earlier run of this one; ask the agent for a new link\n",
        ),
        Ok((site, _)) => {
            if let Some(refusal) = refuse(&app, site, &request) {
                return refusal;
            }
            match site {
                Site::Files => files::site(app, request).await,
                Site::App(port) => proxy::site(app, port, request).await,
                Site::Daemon | Site::Stale => unknown_site(),
            }
        }
    }
}

fn unknown_site() -> Response {
    text(StatusCode::NOT_FOUND, "404: no such site\n")
}

fn refuse_host(refusal: &HostRefusal) -> Response {
    let status = match refusal {
        HostRefusal::Malformed => StatusCode::BAD_REQUEST,
        HostRefusal::Misdirected { .. } => StatusCode::MISDIRECTED_REQUEST,
    };
    tracing::warn!(%refusal, "refused a request for another host");
    text(status, &format!("{}: {refusal}\n", status.as_u16()))
}

/// A plain-text answer for a browser.
pub(crate) fn text(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

/// The guard of the preview origins: the origin's cookie, a link's token (traded for the
/// cookie) or the API token; and nothing but a plain navigation from another origin. Answers
/// the refusal (or the token's trade), or nothing when the request may go on.
fn refuse(app: &AppState, site: Site, request: &Request) -> Option<Response> {
    if from_another_origin(app, request) {
        return Some(text(
            StatusCode::FORBIDDEN,
            "403: a page of another origin may only link to a preview, not send it requests\n",
        ));
    }
    let preview = &app.preview;
    if preview.public {
        return None;
    }
    let in_query = request.uri().query().and_then(|q| {
        q.split('&').find_map(|p| {
            let (k, v) = p.split_once('=')?;
            (k == TOKEN_PARAM).then_some(v)
        })
    });
    if let Some(token) = in_query {
        if !preview.matches(site, token) {
            let peer = crate::server::peer(request.extensions()).map(|a| a.ip());
            if let crate::auth::Verdict::TooMany { retry_after } =
                app.failures.record(peer, "a preview link")
            {
                return Some(crate::auth::too_many(retry_after));
            }
            return Some(refused(
                "the preview link's token is wrong (links stop working when the sandbox restarts)",
            ));
        }
        return Some(trade_token(preview, token, request));
    }
    let headers = request.headers();
    let by_cookie = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| cookie(v, &preview.cookie_name))
        .any(|t| preview.matches(site, t));
    if by_cookie || has_api_token(app, headers) {
        None
    } else {
        Some(refused(
            "open the link `expose_port` or `/v1/preview/expose` gave, or send the API token",
        ))
    }
}

/// A request a page of another origin sent: anything but following a link (a form post, a
/// fetch, a WebSocket, an image). Each app and the files have an origin of their own, and
/// none may use the person's cookie of another (nor may a page elsewhere on the web).
fn from_another_origin(app: &AppState, request: &Request) -> bool {
    let headers = request.headers();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let safe = matches!(*request.method(), Method::GET | Method::HEAD);
    if let Some(site) = header("sec-fetch-site") {
        let navigation = safe && header("sec-fetch-mode") == Some("navigate");
        return !(site == "same-origin" || site == "none" || navigation);
    }
    // Browsers without Fetch Metadata still name the origin of a cross-origin request and
    // of every WebSocket; clients that are not browsers name none.
    let Some(origin) = header(ORIGIN.as_str()) else {
        return false;
    };
    let scheme = if app.preview.origins.public().is_some_and(|p| p.https) {
        "https"
    } else {
        "http"
    };
    let own = header(HOST.as_str()).map(|host| format!("{scheme}://{host}"));
    !own.is_some_and(|own| own.eq_ignore_ascii_case(origin.trim_end_matches('/')))
}

/// The answer to a link's valid token: the cookie, and the same URL without the token. A
/// browser's navigation gets a page that moves on by itself, so the next request starts
/// from this origin and carries the `SameSite=Strict` cookie even when the link was clicked
/// on another site; other clients get a plain redirect.
fn trade_token(preview: &Preview, token: &str, request: &Request) -> Response {
    // `//host/` would be another site's address to the browser.
    let target = without_token(request.uri());
    let target = format!("/{}", target.trim_start_matches('/'));
    let navigation = request
        .headers()
        .get("sec-fetch-mode")
        .is_some_and(|m| m == "navigate");
    let mut response = if navigation {
        let nonce = random_hex(16);
        let target_js = serde_json::to_string(&target).unwrap_or_else(|_| "\"/\"".into());
        let target_html = files::escape(&target);
        let page = format!(
            "<!doctype html><meta charset=utf-8><title>Opening the preview…</title><script nonce=\"{nonce}\">location.replace({target_js})</script><noscript><a href=\"{target_html}\">Continue to the preview</a></noscript>"
        );
        let mut response = (StatusCode::OK, page).into_response();
        let csp = format!("default-src 'none'; script-src 'nonce-{nonce}'; base-uri 'none'");
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        if let Ok(csp) = HeaderValue::from_str(&csp) {
            headers.insert("content-security-policy", csp);
        }
        response
    } else {
        let mut response = StatusCode::SEE_OTHER.into_response();
        if let Ok(location) = HeaderValue::from_str(&target) {
            response.headers_mut().insert(LOCATION, location);
        }
        response
    };
    let headers = response.headers_mut();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    if let Ok(cookie) = HeaderValue::from_str(&preview.set_cookie(token)) {
        headers.insert(SET_COOKIE, cookie);
    }
    response
}

fn refused(why: &str) -> Response {
    text(StatusCode::UNAUTHORIZED, &format!("401: {why}\n"))
}

/// `/preview/...` and `/proxy/<port>/...` on the daemon's own origin: served to the API
/// token's holder, and a browser is sent on to the preview origin (the link's token kept).
pub async fn on_daemon_origin(State(app): State<AppState>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let (site, rest) = if let Some(rest) = path.strip_prefix("/preview") {
        (Site::Files, rest.to_string())
    } else if let Some(rest) = path.strip_prefix("/proxy/") {
        let (port, rest) = rest.split_once('/').unwrap_or((rest, ""));
        match crate::net::parse_port(port).filter(|p| *p != 0) {
            Some(port) => (Site::App(port), format!("/{rest}")),
            None => {
                return text(
                    StatusCode::BAD_REQUEST,
                    &format!("400: {port:?} is not a port (1-65535, digits only)\n"),
                );
            }
        }
    } else {
        return unknown_site();
    };
    if has_api_token(&app, request.headers()) {
        return match site {
            Site::Files => {
                let rest = rest.strip_prefix('/').unwrap_or(&rest).to_string();
                files::on_daemon_origin(app, rest, request).await
            }
            Site::App(port) => proxy::on_daemon_origin(app, port, request).await,
            Site::Daemon | Site::Stale => unknown_site(),
        };
    }
    let host = request
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(crate::net::Authority::parse);
    let base = match app.preview.origins.preview_base(host.as_ref()) {
        Ok(base) => base,
        Err(e) => return text(StatusCode::MISDIRECTED_REQUEST, &format!("421: {e}\n")),
    };
    let origin = match site {
        Site::App(port) => base.app(port),
        _ => base.files(),
    };
    let rest = if rest.is_empty() { "/" } else { rest.as_str() };
    let query = request
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let mut response = StatusCode::TEMPORARY_REDIRECT.into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("{origin}{rest}{query}")) {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_name() {
        assert_eq!(
            cookie("a=1; cove_preview_ab12=xyz; b=2", "cove_preview_ab12"),
            Some("xyz")
        );
        assert_eq!(cookie("cove_preview_ab12x=1", "cove_preview_ab12"), None);
        assert_eq!(cookie("", "cove_preview_ab12"), None);
    }

    #[test]
    fn every_daemons_cookie_is_recognised_as_a_preview_cookie() {
        for name in [
            "cove_preview",
            "cove_preview_1a2b3c4d",
            "__Host-cove_preview_9",
        ] {
            assert!(is_preview_cookie(name), "{name}");
        }
        for name in ["session", "__Host-session", "xcove_preview"] {
            assert!(!is_preview_cookie(name), "{name}");
        }
    }

    #[test]
    fn cookies_are_strict_private_and_expire() {
        let plain = Preview::new(&PreviewSettings::default());
        let cookie = plain.set_cookie("t");
        assert!(cookie.starts_with("cove_preview_"), "{cookie}");
        for part in ["=t;", "HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="] {
            assert!(cookie.contains(part), "{cookie}");
        }
        assert!(!cookie.contains("Secure"));
        let other = Preview::new(&PreviewSettings::default());
        assert_ne!(plain.cookie_name, other.cookie_name, "one name per daemon");
        let behind_tls = Preview::new(&PreviewSettings {
            public: false,
            public_url: Some(PublicUrl::parse("https://sb.example.com").unwrap()),
        });
        let cookie = behind_tls.set_cookie("t");
        assert!(
            cookie.starts_with("__Host-cove_preview_") && cookie.contains("; Secure"),
            "{cookie}"
        );
    }

    #[test]
    fn each_preview_origin_has_its_own_token() {
        let preview = Preview::new(&PreviewSettings::default());
        let token = |site| {
            preview
                .link_query(site)
                .trim_start_matches("?cove_preview=")
                .to_string()
        };
        let (files, app, other) = (
            token(Site::Files),
            token(Site::App(8000)),
            token(Site::App(9000)),
        );
        assert_eq!(token(Site::Files), files, "a link's token stays");
        assert!(files != app && app != other && files != other);
        assert!(preview.matches(Site::App(8000), &app));
        assert!(!preview.matches(Site::App(9000), &app));
        assert!(!preview.matches(Site::Files, &app));
        assert!(
            !preview.matches(Site::App(1), "anything"),
            "no link, no token"
        );
    }

    #[test]
    fn the_token_leaves_the_url_and_the_rest_stays() {
        let uri: Uri = "/a/b?x=1&cove_preview=t&y=2".parse().unwrap();
        assert_eq!(without_token(&uri), "/a/b?x=1&y=2");
        let uri: Uri = "/?cove_preview=t".parse().unwrap();
        assert_eq!(without_token(&uri), "/");
    }
}
