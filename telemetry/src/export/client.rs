//! The OTLP/HTTP exporter's client: the workspace's reqwest, run on the process's tokio
//! runtime. The SDK exports from its own thread, which has no runtime, so each request is
//! spawned onto the runtime the exporter was built in and awaited from there.

use std::time::Duration;

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError};

/// Collectors answer an export with a few bytes; more is not read.
const MAX_ANSWER: usize = 1 << 20;

/// reqwest on a runtime handle.
#[derive(Debug)]
pub(super) struct OnRuntime {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl OnRuntime {
    /// A client for the runtime this is called in, whose requests give up after `timeout`.
    pub(super) fn here(timeout: Duration) -> Result<OnRuntime, super::ExportError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| super::ExportError::NoRuntime)?;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| super::ExportError::Client(e.to_string()))?;
        Ok(OnRuntime { client, runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let (parts, body) = request.into_parts();
            let mut answer = client
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await?;
            let status = answer.status();
            let headers = std::mem::take(answer.headers_mut());
            let mut body = Vec::new();
            while let Some(chunk) = answer.chunk().await? {
                if body.len() + chunk.len() > MAX_ANSWER {
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            let mut response = http::Response::builder()
                .status(status)
                .body(Bytes::from(body))?;
            *response.headers_mut() = headers;
            Ok::<_, HttpError>(response)
        });
        sent.await?
    }
}
