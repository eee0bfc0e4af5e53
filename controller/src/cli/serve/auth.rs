//! Who may use `cove serve`: API clients with the bearer token, browsers with the session
//! cookie a one-time login link sets. A request from another origin is refused whatever it
//! carries (CSRF): a page elsewhere cannot act with the person's cookie.

use std::collections::HashSet;
use std::sync::Mutex;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, HOST, ORIGIN};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ServeState;
use super::api::ApiError;
use crate::store::new_id;

/// The session cookie's name.
pub(super) const COOKIE_NAME: &str = "cove_session";

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
