//! `/mcp`: the MCP server over streamable HTTP, behind the API token. Browsers send an
//! `Origin`; one that is not the daemon's own is refused with 403, as the MCP specification
//! requires (against DNS rebinding), before the MCP service sees the request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cove_protocol::client::CovedClient;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::SandboxTools;
use crate::AppState;

/// The MCP service of the daemon whose state is `state`.
pub fn service(state: &AppState) -> StreamableHttpService<SandboxTools, LocalSessionManager> {
    let factory_state = state.clone();
    let config = StreamableHttpServerConfig::default()
        // The daemon is reached by many names (a container's port, a Pod's address); the
        // token guards it, and the Origin check below keeps browsers out.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(state.limits.max_request_bytes)
        .with_cancellation_token(state.mcp_shutdown.child_token());
    StreamableHttpService::new(
        move || {
            let url = factory_state
                .self_url
                .get()
                .ok_or_else(|| std::io::Error::other("the daemon is not listening yet"))?;
            let client = CovedClient::new(url, factory_state.token.expose())
                .map_err(std::io::Error::other)?;
            Ok(SandboxTools::new(client))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// The origin a request came to: its scheme-less `host[:port]`.
fn own_host(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::HOST).and_then(|h| h.to_str().ok())
}

/// Whether `origin` is the daemon's own (the host the request was sent to, or its public
/// URL).
fn allowed_origin(state: &AppState, headers: &HeaderMap, origin: &str) -> bool {
    let Some((_, rest)) = origin.split_once("://") else {
        return false;
    };
    let origin_host = rest.trim_end_matches('/');
    if own_host(headers).is_some_and(|host| host.eq_ignore_ascii_case(origin_host)) {
        return true;
    }
    state.preview.origins.public().is_some_and(|public| {
        let own = format!(
            "{}://{}",
            if public.https { "https" } else { "http" },
            public.authority.to_url_authority()
        );
        own.eq_ignore_ascii_case(origin.trim_end_matches('/'))
    })
}

/// Refuses, with 403 and a JSON-RPC error without an id, a request whose `Origin` is not
/// the daemon's own; requests without one (every non-browser MCP client) pass.
pub async fn check_origin(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .is_ok_and(|o| allowed_origin(&state, request.headers(), o));
        if !ok {
            tracing::warn!(origin = ?origin, "refused an MCP request from another origin");
            let body = serde_json::json!({
                "jsonrpc": "2.0",
                "error": {"code": -32600, "message": "requests from another origin are refused"}
            });
            return (
                StatusCode::FORBIDDEN,
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response();
        }
    }
    next.run(request).await
}
