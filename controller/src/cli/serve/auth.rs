//! Who may use `cove serve`: API clients with the bearer token, the page with a session a
//! one-time login link starts. The page keeps its session in its origin's storage and sends
//! it itself (a header; a `session` parameter where a browser sends none: event streams,
//! pictures, downloads). No cookie: a browser sends a host's cookies to every port of it,
//! where the agent's own servers may listen. A request from another origin is refused
//! whatever it carries.

use std::collections::HashSet;
use std::sync::Mutex;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, HOST, ORIGIN};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ServeState;
use super::api::ApiError;
use crate::store::new_id;

/// The query parameter that carries a session where no header can.
const SESSION_PARAM: &str = "session";

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

    fn is_session(&self, secret: &str) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|s| same(s, secret))
    }

    /// Whether the request carries the API token or a session: as `Authorization: Bearer`,
    /// or, for a `GET`, as the `session` parameter.
    fn admits(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> bool {
        let bearer = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if let Some(bearer) = bearer
            && (same(bearer, &self.token) || self.is_session(bearer))
        {
            return true;
        }
        *method == Method::GET && session_param(uri).is_some_and(|s| self.is_session(&s))
    }
}

/// The `session` parameter of the request's query (sessions are letters and digits, which
/// no encoding changes).
fn session_param(uri: &Uri) -> Option<String> {
    uri.query()?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == SESSION_PARAM)
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
    mut request: Request,
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
    if !state.auth.admits(request.method(), request.uri(), headers) {
        if !request.uri().path().starts_with("/v1/") {
            return super::page::login_help(
                "This page needs the login link cove serve printed when it started.",
            );
        }
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send Authorization: Bearer <token> (printed by cove serve), or open the login link cove serve printed (a new one each start) and use its page",
        )
        .into_response();
    }
    // The routes' own parameters are read strictly; the session is the guard's alone.
    if let Some(uri) = without_session(request.uri()) {
        *request.uri_mut() = uri;
    }
    next.run(request).await
}

/// `uri` without its `session` parameter, when it has one.
fn without_session(uri: &Uri) -> Option<Uri> {
    let query = uri.query()?;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| pair.split_once('=').map_or(*pair, |(name, _)| name) != SESSION_PARAM)
        .collect();
    if kept.len() == query.split('&').count() {
        return None;
    }
    let path = uri.path();
    let rebuilt = if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    };
    rebuilt.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_link_works_once_and_its_session_is_sent_not_kept_in_a_cookie() {
        let auth = Auth::new(Some("t".repeat(64)));
        let secret = auth.login_secret();
        let session = auth.log_in(&secret).unwrap();
        assert!(auth.log_in(&secret).is_none());
        let uri: Uri = "/v1/threads".parse().unwrap();
        let mut headers = HeaderMap::new();
        assert!(!auth.admits(&Method::GET, &uri, &headers));
        headers.insert(AUTHORIZATION, format!("Bearer {session}").parse().unwrap());
        assert!(auth.admits(&Method::POST, &uri, &headers));
        headers.insert(AUTHORIZATION, "Bearer nope".parse().unwrap());
        assert!(!auth.admits(&Method::GET, &uri, &headers));
        // What a browser sends to every port of the host is not a way in.
        let mut cookie = HeaderMap::new();
        cookie.insert(
            axum::http::header::COOKIE,
            format!("cove_session={session}; session={session}")
                .parse()
                .unwrap(),
        );
        assert!(!auth.admits(&Method::GET, &uri, &cookie));
        // The parameter, for what a browser fetches by itself, only reads.
        let with_param: Uri = format!("/v1/threads/x/events?after=3&session={session}")
            .parse()
            .unwrap();
        assert!(auth.admits(&Method::GET, &with_param, &HeaderMap::new()));
        assert!(!auth.admits(&Method::POST, &with_param, &HeaderMap::new()));
        let wrong: Uri = "/v1/threads?session=nope".parse().unwrap();
        assert!(!auth.admits(&Method::GET, &wrong, &HeaderMap::new()));
        // The route reads its own parameters only.
        assert_eq!(
            without_session(&with_param).unwrap().to_string(),
            "/v1/threads/x/events?after=3"
        );
        assert_eq!(without_session(&wrong).unwrap().to_string(), "/v1/threads");
        assert!(without_session(&uri).is_none());
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
