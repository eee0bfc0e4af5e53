//! Workspace preview: what the agent built, opened in a person's browser. `/preview/` serves
//! the workspace read-only; `/proxy/{port}/` forwards HTTP and WebSocket traffic to servers
//! the agent started inside the sandbox.
//!
//! A browser cannot send the API's bearer header, so these routes also take a preview token:
//! its own secret, good for nothing but these routes. A link carries it once
//! (`?cove_preview=`); the daemon trades it for a cookie and redirects to the same URL
//! without it, so the token leaves the address bar and never reaches the proxied app.

pub mod files;
pub mod http;
pub mod proxy;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE};
use axum::http::{HeaderValue, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::auth::AuthToken;

/// The query parameter and cookie that carry the preview token.
pub const TOKEN_PARAM: &str = "cove_preview";

/// How the preview routes are guarded.
#[derive(Debug, Clone)]
pub struct PreviewSettings {
    /// No token needed: the operator guards the daemon some other way.
    pub public: bool,
}

/// The preview token and policy of one daemon.
pub struct Preview {
    token: AuthToken,
    pub public: bool,
}

impl Preview {
    /// A fresh preview token (links from before a restart stop working).
    pub fn new(settings: &PreviewSettings) -> Preview {
        Preview {
            token: AuthToken::generate(),
            public: settings.public,
        }
    }

    /// The query string a link carries, empty when no token is needed.
    pub fn link_query(&self) -> String {
        if self.public {
            String::new()
        } else {
            format!("?{TOKEN_PARAM}={}", self.token.expose())
        }
    }

    fn matches(&self, presented: &str) -> bool {
        self.token.matches(presented)
    }
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

/// Middleware of `/preview/` and `/proxy/`: the API token, the preview cookie, or a link's
/// preview token (traded for the cookie).
pub async fn guard(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let preview = &app.preview;
    if preview.public {
        return next.run(request).await;
    }
    let in_query = request.uri().query().and_then(|q| {
        q.split('&').find_map(|p| {
            let (k, v) = p.split_once('=')?;
            (k == TOKEN_PARAM).then_some(v)
        })
    });
    if let Some(token) = in_query {
        if !preview.matches(token) {
            return refused(
                "the preview link's token is wrong (links stop working when the sandbox restarts)",
            );
        }
        let target = without_token(request.uri());
        let mut response = StatusCode::SEE_OTHER.into_response();
        let headers = response.headers_mut();
        if let Ok(location) = HeaderValue::from_str(&target) {
            headers.insert(LOCATION, location);
        }
        let cookie = format!(
            "{TOKEN_PARAM}={}; Path=/; HttpOnly; SameSite=Lax",
            preview.token.expose()
        );
        if let Ok(cookie) = HeaderValue::from_str(&cookie) {
            headers.insert(SET_COOKIE, cookie);
        }
        return response;
    }
    let headers = request.headers();
    let by_cookie = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| cookie(v, TOKEN_PARAM))
        .any(|t| preview.matches(t));
    let by_bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .is_some_and(|t| app.token.matches(t.trim()));
    if by_cookie || by_bearer {
        next.run(request).await
    } else {
        refused("open the link `expose_port` or `/v1/preview/expose` gave, or send the API token")
    }
}

fn refused(why: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; charset=utf-8",
        )],
        format!("401: {why}\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_name() {
        assert_eq!(
            cookie("a=1; cove_preview=xyz; b=2", TOKEN_PARAM),
            Some("xyz")
        );
        assert_eq!(cookie("cove_previewx=1", TOKEN_PARAM), None);
        assert_eq!(cookie("", TOKEN_PARAM), None);
    }

    #[test]
    fn the_token_leaves_the_url_and_the_rest_stays() {
        let uri: Uri = "/proxy/8000/a/b?x=1&cove_preview=t&y=2".parse().unwrap();
        assert_eq!(without_token(&uri), "/proxy/8000/a/b?x=1&y=2");
        let uri: Uri = "/preview/?cove_preview=t".parse().unwrap();
        assert_eq!(without_token(&uri), "/preview/");
    }
}
