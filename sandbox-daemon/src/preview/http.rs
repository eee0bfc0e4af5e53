//! `POST /v1/preview/expose`: the browser URL of a server inside the sandbox.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::HOST;
use cove_protocol::ErrorCode;
use cove_protocol::preview::{ExposeRequest, ExposeResponse};

use super::origins::Site;
use super::ports::PortCheck;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::net::Authority;

/// `POST /v1/preview/expose`
pub async fn expose(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ExposeRequest>,
) -> Result<Json<ExposeResponse>, ApiError> {
    let port = body.port;
    if port == 0 {
        return Err(ApiError::invalid_request(
            "port must be between 1 and 65535",
        ));
    }
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(Authority::parse);
    let base = app
        .preview
        .origins
        .preview_base(host.as_ref())
        .map_err(|e| ApiError::new(ErrorCode::NoPreviewOrigin, e.to_string()))?;
    let agent = app.shell.agent_processes();
    let check = {
        let app = app.clone();
        crate::blocking::blocking(move || app.preview.ports.check(port, &agent))
            .await
            .map_err(|e| ApiError::new(ErrorCode::Timeout, e.to_string()))?
    };
    let listening = match check {
        PortCheck::Agent(_) => true,
        PortCheck::NotListening => false,
        PortCheck::NotAgents => {
            return Err(ApiError::new(
                ErrorCode::PortNotAgents,
                format!(
                    "port {port} is held by a process the agent did not start (the daemon itself, the browser, or another service of the sandbox); start the server from a shell session and expose its port"
                ),
            ));
        }
    };
    Ok(Json(ExposeResponse {
        port,
        url: format!(
            "{}/{}",
            base.app(port),
            app.preview.link_query(Site::App(port))
        ),
        files_url: format!("{}/{}", base.files(), app.preview.link_query(Site::Files)),
        listening,
    }))
}
