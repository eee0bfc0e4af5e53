//! Who may use `cove serve`: API clients with the bearer token, browsers with the session
//! cookie a one-time login link sets. A request from another origin is refused whatever it
//! carries (CSRF): a page elsewhere cannot act with the person's cookie.
//!
//! A browser sends a host's cookies to every port of it, where the agent's own servers may
//! listen (a sandbox on the machine's network). So the cookie is scoped to a path no one
//! else knows: `/k/<key>/`, a key drawn at each login, under which the page makes its
//! requests ([`strip_key`] takes the prefix off before routing). A server on another port
//! is never sent it unless opened at that secret path.

use std::collections::HashSet;
use std::sync::Mutex;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, HOST, ORIGIN};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ServeState;
use super::error::ApiError;
use cove_core::store::new_id;

/// The session cookie's name.
pub(super) const COOKIE_NAME: &str = "cove_session";
/// Where the page's requests go, followed by its key: `/k/<key>/v1/...`.
pub(super) const KEY_PREFIX: &str = "/k/";

/// The server's secrets.
pub(super) struct Auth {
    /// For API clients: `Authorization: Bearer`.
    pub(super) token: String,
    /// Login links not used yet (each works once).
    logins: Mutex<HashSet<String>>,
    /// Sessions the login links started (lost when the server restarts).
    sessions: Mutex<HashSet<String>>,
}

/// Equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Auth {
    /// Fresh secrets (`token` given, or drawn).
    pub(super) fn new(token: Option<String>) -> Auth {
        Auth {
            token: token.unwrap_or_else(|| new_id(32)),
            logins: Mutex::new(HashSet::new()),
            sessions: Mutex::new(HashSet::new()),
        }
    }

    /// A new one-time login secret.
    pub(super) fn login_secret(&self) -> String {
        let secret = new_id(32);
        self.logins
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(secret.clone());
        secret
    }

    /// Trades a login secret for a session, once.
    pub(super) fn log_in(&self, secret: &str) -> Option<String> {
        let mut logins = self.logins.lock().unwrap_or_else(|p| p.into_inner());
        let known = logins.iter().find(|s| same(s, secret)).cloned()?;
        logins.remove(&known);
        let session = new_id(32);
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.clone());
        Some(session)
    }

    /// Trades the API token, typed into the login page, for a session.
    pub(super) fn log_in_with_token(&self, token: &str) -> Option<String> {
        if !same(token.trim(), &self.token) {
            return None;
        }
        let session = new_id(32);
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.clone());
        Some(session)
    }

    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| same(t.trim(), &self.token))
    }

    fn cookie_ok(&self, headers: &HeaderMap) -> bool {
        let Some(session) = session_cookie(headers) else {
            return false;
        };
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|s| same(s, &session))
    }
}

/// The session cookie's value, if the request carries one.
fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.to_string())
}

/// The `Set-Cookie` of a new session, sent by browsers only under `/k/<key>/`.
pub(super) fn session_cookie_header(session: &str, key: &str) -> String {
    format!("{COOKIE_NAME}={session}; HttpOnly; SameSite=Strict; Path={KEY_PREFIX}{key}/")
}

/// `uri` with a leading `/k/<key>` taken off (the routes are the same under it), when it has
/// one.
fn without_key(uri: &Uri) -> Option<Uri> {
    let rest = uri.path().strip_prefix(KEY_PREFIX)?;
    let (_, path) = rest.split_once('/')?;
    let path_and_query = match uri.query() {
        Some(query) => format!("/{path}?{query}"),
        None => format!("/{path}"),
    };
    path_and_query.parse().ok()
}

/// Takes the page's key prefix off a request before it is routed.
pub(super) async fn strip_key(mut request: Request) -> Request {
    if let Some(uri) = without_key(request.uri()) {
        *request.uri_mut() = uri;
    }
    request
}

/// Whether the request's `Origin`, when it has one, is this server's own (the `Host` it was
/// sent to).
pub(super) fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let Some(host) = headers.get(HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| o.eq_ignore_ascii_case(host))
}

/// Refuses other origins, then requests with neither the token nor a session.
pub(super) async fn guard(
    State(state): State<std::sync::Arc<ServeState>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    if !same_origin(headers) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "cross_origin",
            "requests from another site's pages are refused; use the page this server serves",
        )
        .into_response();
    }
    if !state.auth.bearer_ok(headers) && !state.auth.cookie_ok(headers) {
        if !request.uri().path().starts_with("/v1/") {
            return super::page::login_help(
                "This page needs the login link cove serve printed when it started.",
            );
        }
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send Authorization: Bearer <token> (printed by cove serve), or open the login link cove serve printed (a new one each start)",
        )
        .into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_link_works_once_and_gives_a_session() {
        let auth = Auth::new(Some("t".repeat(64)));
        let secret = auth.login_secret();
        let session = auth.log_in(&secret).unwrap();
        assert!(auth.log_in(&secret).is_none());
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            format!("a=b; {COOKIE_NAME}={session}").parse().unwrap(),
        );
        assert!(auth.cookie_ok(&headers));
        headers.insert(COOKIE, format!("{COOKIE_NAME}=nope").parse().unwrap());
        assert!(!auth.cookie_ok(&headers));
    }

    #[test]
    fn the_cookie_is_scoped_to_the_pages_secret_path_which_routes_as_the_plain_one() {
        let cookie = session_cookie_header("s3ss10n", "k3y");
        assert!(
            cookie.ends_with("; HttpOnly; SameSite=Strict; Path=/k/k3y/"),
            "{cookie}"
        );
        let stripped = |uri: &str| without_key(&uri.parse().unwrap()).map(|u| u.to_string());
        assert_eq!(
            stripped("/k/k3y/v1/threads/x/events?after=3").as_deref(),
            Some("/v1/threads/x/events?after=3")
        );
        assert_eq!(stripped("/k/k3y/").as_deref(), Some("/"));
        assert_eq!(stripped("/v1/threads"), None);
        assert_eq!(stripped("/k/only-a-key"), None);
    }

    #[test]
    fn only_the_servers_own_origin_passes() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, "127.0.0.1:7800".parse().unwrap());
        assert!(same_origin(&headers));
        headers.insert(ORIGIN, "http://127.0.0.1:7800".parse().unwrap());
        assert!(same_origin(&headers));
        headers.insert(ORIGIN, "http://evil.example".parse().unwrap());
        assert!(!same_origin(&headers));
    }
}
