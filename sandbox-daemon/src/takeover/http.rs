//! HTTP handlers of the takeover family: the API under `/v1/browser/takeover` (bearer
//! token) and the page with its socket under `/takeover` (takeover token).

use std::time::Duration;

use axum::Json;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HOST, ORIGIN, SEC_WEBSOCKET_PROTOCOL};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cove_protocol::browser::StateQuery;
use cove_protocol::takeover::{
    MAX_TAKEOVER_WAIT_SECS, StartTakeover, TakeoverEnd, TakeoverGrant, TakeoverQuery,
    TakeoverReleased, TakeoverStatus,
};
use serde::Deserialize;

use super::viewer::{self, MAX_MESSAGE_BYTES};
use crate::AppState;
use crate::auth::{self, Verdict};
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery};
use crate::net::Authority;
use crate::server::ConnectInfoPeer;

const PAGE: &str = include_str!("page.html");
/// The subprotocol the page speaks; the token rides in a second one, `cove-token.<token>`,
/// so it stays out of URLs that proxies log.
const PROTOCOL: &str = "cove-takeover";
const TOKEN_PROTOCOL_PREFIX: &str = "cove-token.";
/// Pages open on one takeover at once, at most: a person and a few watchers.
const MAX_VIEWERS: u32 = 8;

/// `POST /v1/browser/takeover`
pub async fn start(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<StartTakeover>,
) -> Result<Json<TakeoverGrant>, ApiError> {
    // Only a host that parsed as one goes into the link (see `preview::origins`).
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(Authority::parse);
    let base = app.preview.origins.daemon_base(host.as_ref());
    Ok(Json(app.takeover.start(&app, &base, body).await?))
}

/// `GET /v1/browser/takeover`
pub async fn status(
    State(app): State<AppState>,
    ApiQuery(query): ApiQuery<TakeoverQuery>,
) -> Result<Json<TakeoverStatus>, ApiError> {
    let wait = match query.wait_secs {
        None | Some(0) => None,
        Some(secs) if secs <= MAX_TAKEOVER_WAIT_SECS => Some(Duration::from_secs(secs)),
        Some(_) => {
            return Err(ApiError::invalid_request(format!(
                "wait_secs must be at most {MAX_TAKEOVER_WAIT_SECS}"
            )));
        }
    };
    Ok(Json(app.takeover.status(wait).await))
}

/// `DELETE /v1/browser/takeover`
pub async fn end(State(app): State<AppState>) -> Result<Json<TakeoverReleased>, ApiError> {
    let ended = app.takeover.end(None, TakeoverEnd::Released, None);
    let state = app.browser.act(None, StateQuery::default()).await?;
    Ok(Json(TakeoverReleased { ended, state }))
}

/// The page's query string.
#[derive(Debug, Deserialize)]
pub struct TokenQuery {
    token: Option<String>,
}

fn refused(message: &str) -> Response {
    let body = format!(
        "<!doctype html><meta charset=utf-8><meta name=viewport content=\"width=device-width\"><title>Takeover unavailable</title><body style=\"font:16px system-ui,sans-serif;margin:2rem\"><h1>This takeover link does not work</h1><p>{message}</p><p>Ask the agent's operator for a new link.</p>"
    );
    let mut response = (StatusCode::UNAUTHORIZED, body).into_response();
    set_page_headers(&mut response, "text/html; charset=utf-8");
    response
}

fn set_page_headers(response: &mut Response, content_type: &'static str) {
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The token is in the page's URL: no Referer may carry it anywhere.
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src blob: data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
}

/// `GET /takeover?token=...`: the takeover page. Without a token it is the same page, which
/// finds the token its tab kept when the person reloads (the page drops it from the URL).
pub async fn page(
    State(app): State<AppState>,
    Query(query): Query<TokenQuery>,
    request: Request,
) -> Response {
    if let Some(token) = query.token.filter(|t| !t.is_empty())
        && app.takeover.authorize(&token).is_none()
    {
        let peer = crate::server::peer(request.extensions()).map(|a| a.ip());
        if let Verdict::TooMany { retry_after } = app.failures.record(peer, "the takeover page") {
            return auth::too_many(retry_after);
        }
        return refused("Its token is wrong, or the takeover has ended or expired.");
    }
    let mut response = PAGE.into_response();
    set_page_headers(&mut response, "text/html; charset=utf-8");
    response
}

/// The takeover token a socket request presents: in the `cove-token.` subprotocol, or the
/// `token` query parameter for clients that cannot set subprotocols.
fn presented_token(headers: &HeaderMap, query: TokenQuery) -> Option<String> {
    let from_protocol = headers
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .find_map(|p| p.strip_prefix(TOKEN_PROTOCOL_PREFIX))
        .map(str::to_string);
    from_protocol.or(query.token).filter(|t| !t.is_empty())
}

/// Whether a browser's socket comes from the takeover page itself: its `Origin` is the
/// daemon's own origin (as the request names it, or the public URL). Clients that are not
/// browsers send no `Origin` and cannot be tricked into using a person's credentials.
fn from_the_page(app: &AppState, headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(ORIGIN).and_then(|o| o.to_str().ok()) else {
        return true;
    };
    let origin = origin.trim_end_matches('/');
    if let Some(public) = app.preview.origins.public() {
        let scheme = if public.https { "https" } else { "http" };
        if origin.eq_ignore_ascii_case(&format!(
            "{scheme}://{}",
            public.authority.to_url_authority()
        )) {
            return true;
        }
    }
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(Authority::parse);
    let origin_authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .and_then(Authority::parse);
    matches!((host, origin_authority), (Some(h), Some(o)) if h == o)
}

/// `GET /takeover/ws`: the page's socket.
pub async fn socket(
    State(app): State<AppState>,
    ConnectInfoPeer(peer): ConnectInfoPeer,
    headers: HeaderMap,
    Query(query): Query<TokenQuery>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    if !from_the_page(&app, &headers) {
        return (
            StatusCode::FORBIDDEN,
            "the takeover socket only serves the takeover page of this daemon",
        )
            .into_response();
    }
    let presented = presented_token(&headers, query);
    let Some(live) = presented.as_ref().and_then(|t| app.takeover.authorize(t)) else {
        if presented.is_some()
            && let Verdict::TooMany { retry_after } =
                app.failures.record(peer, "the takeover socket")
        {
            return auth::too_many(retry_after);
        }
        return (
            StatusCode::UNAUTHORIZED,
            "the takeover token is missing, wrong or expired",
        )
            .into_response();
    };
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let Some(seat) = live.try_join(MAX_VIEWERS) else {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            "too many pages are open on this takeover; close one and reload",
        )
            .into_response();
    };
    upgrade
        .protocols([PROTOCOL])
        .max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| viewer::serve(socket, app, seat))
}
