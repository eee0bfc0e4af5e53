//! `POST /v1/preview/expose`: the browser URL of a server inside the sandbox.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::HOST;
use cove_protocol::preview::{ExposeRequest, ExposeResponse};

use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiJson;

/// Whether something accepts connections on the port, on IPv4 or IPv6 loopback.
async fn listening(port: u16) -> bool {
    for addr in [format!("127.0.0.1:{port}"), format!("[::1]:{port}")] {
        if let Ok(Ok(_)) = tokio::time::timeout(
            Duration::from_secs(1),
            tokio::net::TcpStream::connect(&addr),
        )
        .await
        {
            return true;
        }
    }
    false
}

/// `POST /v1/preview/expose`
pub async fn expose(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ExposeRequest>,
) -> Result<Json<ExposeResponse>, ApiError> {
    if body.port == 0 {
        return Err(ApiError::invalid_request(
            "port must be between 1 and 65535",
        ));
    }
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let base = app
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{host}"));
    let base = base.trim_end_matches('/');
    let query = app.preview.link_query();
    Ok(Json(ExposeResponse {
        port: body.port,
        url: format!("{base}/proxy/{}/{query}", body.port),
        files_url: format!("{base}/preview/{query}"),
        listening: listening(body.port).await,
    }))
}
