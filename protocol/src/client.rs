//! The typed async HTTP client for coved.

use std::time::Duration;

use bytes::Bytes;
use reqwest::{Method, RequestBuilder, Response, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::browser::{BrowserAction, BrowserState, StateQuery};
use crate::checkpoints::{
    CheckpointCreated, CheckpointDiff, CheckpointList, CreateCheckpoint, DiffQuery, ImportQuery,
    RestoreRequest, RestoreResponse,
};
use crate::error::{ErrorCode, ErrorEnvelope};
use crate::files::{
    ContentQuery, CreateRequest, DeleteQuery, DeleteResponse, ListQuery, ListResponse, ReadRequest,
    ReadResponse, RewriteRequest, StrReplaceRequest, StrReplaceResponse, WriteResponse,
};
use crate::forks::{ApplyResponse, CreateFork, FORK_HEADER, ForkInfo, ForkList};
use crate::info::{HealthResponse, InfoResponse};
use crate::preview::{ExposeRequest, ExposeResponse};
use crate::shell::{
    DeleteSessionResponse, ExecRequest, ExecResponse, InputRequest, InputResponse, OutputQuery,
    OutputResponse, SessionList, Signal, SignalRequest, SignalResponse,
};
use crate::takeover::{
    StartTakeover, TakeoverGrant, TakeoverQuery, TakeoverReleased, TakeoverStatus,
};
use crate::vision::{SeeImageRequest, SeeImageResponse};
use crate::watches::{
    CreateWatch, EventList, EventsQuery, MAX_EVENTS_WAIT_SECS, WatchInfo, WatchList,
};
use crate::web::{FetchRequest, FetchResponse, SearchRequest, SearchResponse};

/// How long a call that is not a blocking `exec` or a transfer may take.
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Checkpoints of a large workspace read or write all of it.
const CHECKPOINT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Slack on top of a blocking `exec`'s own timeout, so the daemon answers first.
const EXEC_SLACK: Duration = Duration::from_secs(30);

/// What went wrong talking to coved, sorted by what the caller does next.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The daemon answered with an error envelope: act on `code`.
    #[error("coved refused the request ({code}, HTTP {status}): {message}")]
    Api {
        status: u16,
        code: ErrorCode,
        message: String,
        /// Extra data some codes carry, such as the fresh browser state.
        details: Option<serde_json::Value>,
    },
    /// The daemon could not be reached or the connection broke: retry or check the URL.
    #[error("could not talk to coved at {url}: {source}")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The daemon answered with something that is not the expected JSON: a version mismatch.
    #[error("coved answered HTTP {status} with an unexpected body: {detail}")]
    Decode { status: u16, detail: String },
    /// The base URL or a path argument cannot form a request.
    #[error("invalid coved client input: {0}")]
    InvalidInput(String),
}

impl ClientError {
    /// The daemon's error code, when it answered with one.
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            ClientError::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The fresh browser state a browser error carries (`stale_element`, say).
    pub fn browser_state(&self) -> Option<BrowserState> {
        match self {
            ClientError::Api {
                details: Some(details),
                ..
            } => serde_json::from_value(details.get("state")?.clone()).ok(),
            _ => None,
        }
    }
}

/// A client for one coved daemon.
#[derive(Debug, Clone)]
pub struct CovedClient {
    http: reqwest::Client,
    base: Url,
    token: String,
}

impl CovedClient {
    /// A client for the daemon at `base_url` (e.g. `http://127.0.0.1:8080`) using `token`.
    pub fn new(base_url: &str, token: impl Into<String>) -> Result<Self, ClientError> {
        let base = Url::parse(base_url)
            .map_err(|e| ClientError::InvalidInput(format!("base URL {base_url:?}: {e}")))?;
        if base.cannot_be_a_base() || !matches!(base.scheme(), "http" | "https") {
            return Err(ClientError::InvalidInput(format!(
                "base URL {base_url:?} must be http:// or https://"
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // coved closes a connection left quiet for 30 s; let go of it first.
            .pool_idle_timeout(Duration::from_secs(20))
            .build()
            .map_err(|source| ClientError::Transport {
                url: base_url.to_string(),
                source,
            })?;
        Ok(CovedClient {
            http,
            base,
            token: token.into(),
        })
    }

    /// The daemon's base URL.
    pub fn base_url(&self) -> &Url {
        &self.base
    }

    /// The bearer token this client sends.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The URL of an API path made of literal segments (each one percent-encoded).
    pub fn url(&self, segments: &[&str]) -> Result<Url, ClientError> {
        let mut url = self.base.clone();
        {
            let mut path = url.path_segments_mut().map_err(|()| {
                ClientError::InvalidInput(format!("base URL {} cannot take a path", self.base))
            })?;
            path.pop_if_empty();
            path.extend(segments);
        }
        Ok(url)
    }

    /// An authenticated request builder, for calls the typed methods do not cover. Under an
    /// exported span it carries the trace context, so coved's spans join the caller's trace.
    pub fn request(&self, method: Method, url: Url) -> RequestBuilder {
        let builder = self.http.request(method, url).bearer_auth(&self.token);
        match cove_telemetry::traceparent() {
            Some(traceparent) => builder.header("traceparent", traceparent),
            None => builder,
        }
    }

    async fn send(&self, builder: RequestBuilder, url: &Url) -> Result<Response, ClientError> {
        let response = builder.send().await.map_err(transport(url))?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(error_from(response, url).await)
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        segments: &[&str],
        configure: impl FnOnce(RequestBuilder) -> RequestBuilder,
    ) -> Result<T, ClientError> {
        let url = self.url(segments)?;
        let builder = configure(
            self.request(method, url.clone())
                .timeout(DEFAULT_CALL_TIMEOUT),
        );
        let response = self.send(builder, &url).await?;
        decode(response, &url).await
    }

    async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        segments: &[&str],
        body: &B,
    ) -> Result<T, ClientError> {
        self.call(Method::POST, segments, |b| b.json(body)).await
    }

    /// `GET /health` (sent without the token).
    pub async fn health(&self) -> Result<HealthResponse, ClientError> {
        let url = self.url(&["health"])?;
        let builder = self.http.get(url.clone()).timeout(DEFAULT_CALL_TIMEOUT);
        let response = self.send(builder, &url).await?;
        decode(response, &url).await
    }

    /// `GET /v1/info`.
    pub async fn info(&self) -> Result<InfoResponse, ClientError> {
        self.call(Method::GET, &["v1", "info"], |b| b).await
    }

    /// `GET /v1/idle`.
    pub async fn idle(&self) -> Result<crate::info::IdleResponse, ClientError> {
        self.call(Method::GET, &["v1", "idle"], |b| b).await
    }

    /// `POST /v1/token`: the daemon takes `token` from now on; this client keeps the old
    /// one, so make a new client with the new token.
    pub async fn rotate_token(&self, token: &str) -> Result<(), ClientError> {
        let _: crate::info::TokenRotated = self
            .post(
                &["v1", "token"],
                &crate::info::RotateToken {
                    token: token.to_string(),
                },
            )
            .await?;
        Ok(())
    }

    /// `GET /v1/openapi.json`.
    pub async fn openapi(&self) -> Result<serde_json::Value, ClientError> {
        self.call(Method::GET, &["v1", "openapi.json"], |b| b).await
    }

    /// `POST /v1/shell/exec`; waits as long as the request's own timeout, plus slack.
    pub async fn exec(&self, request: &ExecRequest) -> Result<ExecResponse, ClientError> {
        let wait = if request.blocking {
            Duration::from_secs(request.timeout_secs) + EXEC_SLACK
        } else {
            DEFAULT_CALL_TIMEOUT
        };
        self.call(Method::POST, &["v1", "shell", "exec"], |b| {
            b.json(request).timeout(wait)
        })
        .await
    }

    /// `GET /v1/shell/sessions`.
    pub async fn sessions(&self) -> Result<SessionList, ClientError> {
        self.call(Method::GET, &["v1", "shell", "sessions"], |b| b)
            .await
    }

    /// `GET /v1/shell/sessions/{name}/output?since=`.
    pub async fn output(&self, session: &str, since: u64) -> Result<OutputResponse, ClientError> {
        let query = OutputQuery { since: Some(since) };
        self.call(
            Method::GET,
            &["v1", "shell", "sessions", session, "output"],
            |b| b.query(&query),
        )
        .await
    }

    /// `GET /metrics`: the Prometheus text format.
    pub async fn metrics(&self) -> Result<String, ClientError> {
        let bytes = self.get_bytes(&["metrics"]).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `GET /v1/shell/sessions/{name}/recording`: asciicast v2.
    pub async fn recording(&self, session: &str) -> Result<String, ClientError> {
        let bytes = self
            .get_bytes(&["v1", "shell", "sessions", session, "recording"])
            .await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `POST /v1/shell/sessions/{name}/input`.
    pub async fn input(
        &self,
        session: &str,
        request: &InputRequest,
    ) -> Result<InputResponse, ClientError> {
        self.post(&["v1", "shell", "sessions", session, "input"], request)
            .await
    }

    /// `POST /v1/shell/sessions/{name}/signal`.
    pub async fn signal(
        &self,
        session: &str,
        signal: Signal,
    ) -> Result<SignalResponse, ClientError> {
        self.post(
            &["v1", "shell", "sessions", session, "signal"],
            &SignalRequest { signal },
        )
        .await
    }

    /// `DELETE /v1/shell/sessions/{name}`.
    pub async fn delete_session(
        &self,
        session: &str,
    ) -> Result<DeleteSessionResponse, ClientError> {
        self.call(Method::DELETE, &["v1", "shell", "sessions", session], |b| b)
            .await
    }

    /// `GET /v1/files/list`.
    pub async fn list(&self, query: &ListQuery) -> Result<ListResponse, ClientError> {
        self.call(Method::GET, &["v1", "files", "list"], |b| b.query(query))
            .await
    }

    /// `POST /v1/files/read`.
    pub async fn read(&self, request: &ReadRequest) -> Result<ReadResponse, ClientError> {
        self.post(&["v1", "files", "read"], request).await
    }

    /// `POST /v1/files/create`.
    pub async fn create(&self, request: &CreateRequest) -> Result<WriteResponse, ClientError> {
        self.post(&["v1", "files", "create"], request).await
    }

    /// `POST /v1/files/rewrite`.
    pub async fn rewrite(&self, request: &RewriteRequest) -> Result<WriteResponse, ClientError> {
        self.post(&["v1", "files", "rewrite"], request).await
    }

    /// `POST /v1/files/str_replace`.
    pub async fn str_replace(
        &self,
        request: &StrReplaceRequest,
    ) -> Result<StrReplaceResponse, ClientError> {
        self.post(&["v1", "files", "str_replace"], request).await
    }

    /// `DELETE /v1/files`.
    pub async fn delete(&self, query: &DeleteQuery) -> Result<DeleteResponse, ClientError> {
        self.call(Method::DELETE, &["v1", "files"], |b| b.query(query))
            .await
    }

    /// `GET /v1/files/content`: the whole file in memory. Use [`Self::download_response`] to stream.
    pub async fn download(&self, path: &str) -> Result<Bytes, ClientError> {
        let url = self.url(&["v1", "files", "content"])?;
        let response = self.download_response(path).await?;
        response.bytes().await.map_err(transport(&url))
    }

    /// `GET /v1/files/content` as a streaming response.
    pub async fn download_response(&self, path: &str) -> Result<Response, ClientError> {
        let url = self.url(&["v1", "files", "content"])?;
        let query = ContentQuery {
            path: path.to_string(),
        };
        let builder = self.request(Method::GET, url.clone()).query(&query);
        self.send(builder, &url).await
    }

    /// `POST /v1/browser/{action}`: performs a browser action, returns the state after it.
    pub async fn browser<A: BrowserAction>(
        &self,
        action: &A,
        query: StateQuery,
    ) -> Result<BrowserState, ClientError> {
        self.call(Method::POST, &["v1", "browser", A::NAME], |b| {
            b.query(&query).json(action)
        })
        .await
    }

    /// `GET /v1/browser/state`.
    pub async fn browser_state(&self, query: StateQuery) -> Result<BrowserState, ClientError> {
        self.call(Method::GET, &["v1", "browser", "state"], |b| {
            b.query(&query)
        })
        .await
    }

    /// `GET /v1/browser/screenshot`: JPEG bytes of the active tab's viewport.
    pub async fn screenshot(&self) -> Result<Bytes, ClientError> {
        self.get_bytes(&["v1", "browser", "screenshot"]).await
    }

    /// `GET` of a route that answers raw bytes (not JSON).
    async fn get_bytes(&self, segments: &[&str]) -> Result<Bytes, ClientError> {
        let url = self.url(segments)?;
        let builder = self
            .request(Method::GET, url.clone())
            .timeout(DEFAULT_CALL_TIMEOUT);
        let response = self.send(builder, &url).await?;
        response.bytes().await.map_err(transport(&url))
    }

    /// `POST /v1/browser/takeover`: hands the browser to a person.
    pub async fn takeover_start(
        &self,
        request: &StartTakeover,
    ) -> Result<TakeoverGrant, ClientError> {
        self.post(&["v1", "browser", "takeover"], request).await
    }

    /// `GET /v1/browser/takeover`, waiting up to `wait_secs` for a takeover to end.
    pub async fn takeover_status(&self, wait_secs: u64) -> Result<TakeoverStatus, ClientError> {
        let query = TakeoverQuery {
            wait_secs: (wait_secs > 0).then_some(wait_secs),
        };
        self.call(Method::GET, &["v1", "browser", "takeover"], |b| {
            b.query(&query)
        })
        .await
    }

    /// `DELETE /v1/browser/takeover`: takes the browser back; answers with the fresh state.
    pub async fn takeover_end(&self) -> Result<TakeoverReleased, ClientError> {
        self.call(Method::DELETE, &["v1", "browser", "takeover"], |b| b)
            .await
    }

    /// `POST /v1/preview/expose`: a browser URL for a server inside the sandbox.
    pub async fn expose(&self, port: u16) -> Result<ExposeResponse, ClientError> {
        self.post(&["v1", "preview", "expose"], &ExposeRequest { port })
            .await
    }

    /// `POST /v1/vision/see_image`.
    pub async fn see_image(
        &self,
        request: &SeeImageRequest,
    ) -> Result<SeeImageResponse, ClientError> {
        self.post(&["v1", "vision", "see_image"], request).await
    }

    /// `POST /v1/web/fetch`.
    pub async fn web_fetch(&self, request: &FetchRequest) -> Result<FetchResponse, ClientError> {
        self.post(&["v1", "web", "fetch"], request).await
    }

    /// `POST /v1/web/search`.
    pub async fn web_search(&self, request: &SearchRequest) -> Result<SearchResponse, ClientError> {
        self.post(&["v1", "web", "search"], request).await
    }

    /// `POST /v1/checkpoints`.
    pub async fn create_checkpoint(
        &self,
        request: &CreateCheckpoint,
    ) -> Result<CheckpointCreated, ClientError> {
        self.call(Method::POST, &["v1", "checkpoints"], |b| {
            b.json(request).timeout(CHECKPOINT_TIMEOUT)
        })
        .await
    }

    /// `GET /v1/checkpoints`.
    pub async fn checkpoints(&self) -> Result<CheckpointList, ClientError> {
        self.call(Method::GET, &["v1", "checkpoints"], |b| b).await
    }

    /// `GET /v1/checkpoints/{id}/diff`.
    pub async fn checkpoint_diff(
        &self,
        id: &str,
        query: &DiffQuery,
    ) -> Result<CheckpointDiff, ClientError> {
        self.call(Method::GET, &["v1", "checkpoints", id, "diff"], |b| {
            b.query(query).timeout(CHECKPOINT_TIMEOUT)
        })
        .await
    }

    /// `POST /v1/checkpoints/{id}/restore`.
    pub async fn restore_checkpoint(
        &self,
        id: &str,
        request: &RestoreRequest,
    ) -> Result<RestoreResponse, ClientError> {
        self.call(Method::POST, &["v1", "checkpoints", id, "restore"], |b| {
            b.json(request).timeout(CHECKPOINT_TIMEOUT)
        })
        .await
    }

    /// `GET /v1/checkpoints/{id}/archive`, as a streaming response (a tar).
    pub async fn checkpoint_archive(&self, id: &str) -> Result<Response, ClientError> {
        let url = self.url(&["v1", "checkpoints", id, "archive"])?;
        let builder = self.request(Method::GET, url.clone());
        self.send(builder, &url).await
    }

    /// `POST /v1/checkpoints/import`: streams a checkpoint's tar in.
    pub async fn import_checkpoint(
        &self,
        query: &ImportQuery,
        tar: impl Into<reqwest::Body>,
    ) -> Result<CheckpointCreated, ClientError> {
        let url = self.url(&["v1", "checkpoints", "import"])?;
        let builder = self
            .request(Method::POST, url.clone())
            .query(query)
            .timeout(CHECKPOINT_TIMEOUT)
            .body(tar);
        let response = self.send(builder, &url).await?;
        decode(response, &url).await
    }

    /// Streams checkpoint `id` of this daemon into `target` (`archive` here, `import`
    /// there), never whole in memory: how a workspace moves between sandboxes.
    pub async fn copy_checkpoint(
        &self,
        id: &str,
        target: &CovedClient,
        query: &ImportQuery,
    ) -> Result<CheckpointCreated, ClientError> {
        let archive = self.checkpoint_archive(id).await?;
        let body = reqwest::Body::wrap_stream(archive.bytes_stream());
        target.import_checkpoint(query, body).await
    }

    /// `POST /v1/forks`.
    pub async fn create_fork(&self, request: &CreateFork) -> Result<ForkInfo, ClientError> {
        self.call(Method::POST, &["v1", "forks"], |b| {
            b.json(request).timeout(CHECKPOINT_TIMEOUT)
        })
        .await
    }

    /// `GET /v1/forks`.
    pub async fn forks(&self) -> Result<ForkList, ClientError> {
        self.call(Method::GET, &["v1", "forks"], |b| b).await
    }

    /// `GET /v1/forks/{id}/changes`.
    pub async fn fork_changes(&self, id: &str) -> Result<CheckpointDiff, ClientError> {
        self.call(Method::GET, &["v1", "forks", id, "changes"], |b| {
            b.timeout(CHECKPOINT_TIMEOUT)
        })
        .await
    }

    /// `POST /v1/forks/{id}/apply`.
    pub async fn apply_fork(&self, id: &str) -> Result<ApplyResponse, ClientError> {
        self.call(Method::POST, &["v1", "forks", id, "apply"], |b| {
            b.timeout(CHECKPOINT_TIMEOUT)
        })
        .await
    }

    /// `DELETE /v1/forks/{id}`.
    pub async fn delete_fork(&self, id: &str) -> Result<ForkInfo, ClientError> {
        self.call(Method::DELETE, &["v1", "forks", id], |b| b).await
    }

    /// A client of fork `id` of this daemon: every call works on the fork's copy.
    pub fn for_fork(&self, id: &str) -> Result<CovedClient, ClientError> {
        let mut headers = reqwest::header::HeaderMap::new();
        let value = reqwest::header::HeaderValue::from_str(id)
            .map_err(|_| ClientError::InvalidInput(format!("fork id {id:?}")))?;
        headers.insert(FORK_HEADER, value);
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(20))
            .default_headers(headers)
            .build()
            .map_err(|source| ClientError::Transport {
                url: self.base.to_string(),
                source,
            })?;
        Ok(CovedClient {
            http,
            base: self.base.clone(),
            token: self.token.clone(),
        })
    }

    /// `POST /v1/watches`.
    pub async fn create_watch(&self, request: &CreateWatch) -> Result<WatchInfo, ClientError> {
        self.post(&["v1", "watches"], request).await
    }

    /// `GET /v1/watches`.
    pub async fn watches(&self) -> Result<WatchList, ClientError> {
        self.call(Method::GET, &["v1", "watches"], |b| b).await
    }

    /// `DELETE /v1/watches/{id}`.
    pub async fn delete_watch(&self, id: &str) -> Result<WatchInfo, ClientError> {
        self.call(Method::DELETE, &["v1", "watches", id], |b| b)
            .await
    }

    /// `GET /v1/events?after=&wait_secs=`: a long poll, waited for its whole length plus
    /// slack.
    pub async fn events(&self, after: u64, wait_secs: u64) -> Result<EventList, ClientError> {
        let wait_secs = wait_secs.min(MAX_EVENTS_WAIT_SECS);
        let query = EventsQuery {
            after: Some(after),
            wait_secs: Some(wait_secs),
        };
        self.call(Method::GET, &["v1", "events"], |b| {
            b.query(&query)
                .timeout(Duration::from_secs(wait_secs) + EXEC_SLACK)
        })
        .await
    }

    /// `PUT /v1/files/content`: streams `body` into the file.
    pub async fn upload(
        &self,
        path: &str,
        body: impl Into<reqwest::Body>,
    ) -> Result<WriteResponse, ClientError> {
        let url = self.url(&["v1", "files", "content"])?;
        let query = ContentQuery {
            path: path.to_string(),
        };
        let builder = self
            .request(Method::PUT, url.clone())
            .query(&query)
            .body(body);
        let response = self.send(builder, &url).await?;
        decode(response, &url).await
    }
}

/// Wraps a reqwest failure talking to `url`.
fn transport(url: &Url) -> impl FnOnce(reqwest::Error) -> ClientError + '_ {
    move |source| ClientError::Transport {
        url: url.to_string(),
        source,
    }
}

async fn decode<T: DeserializeOwned>(response: Response, url: &Url) -> Result<T, ClientError> {
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(transport(url))?;
    serde_json::from_slice(&body).map_err(|e| ClientError::Decode {
        status,
        detail: format!("{e}: {}", preview(&body)),
    })
}

async fn error_from(response: Response, url: &Url) -> ClientError {
    let status = response.status();
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(source) => {
            return ClientError::Transport {
                url: url.to_string(),
                source,
            };
        }
    };
    match serde_json::from_slice::<ErrorEnvelope>(&body) {
        Ok(envelope) => ClientError::Api {
            status: status.as_u16(),
            code: envelope.error.code,
            message: envelope.error.message,
            details: envelope.error.details,
        },
        Err(_) => ClientError::Api {
            status: status.as_u16(),
            code: fallback_code(status),
            message: preview(&body),
            details: None,
        },
    }
}

fn fallback_code(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::NOT_FOUND => ErrorCode::UnknownRoute,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        s if s.is_client_error() => ErrorCode::InvalidRequest,
        _ => ErrorCode::Internal,
    }
}

fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut cut = text.len().min(300);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_string()
}
