//! A local OTLP collector for the tests: it takes traces over http/protobuf
//! (`POST /v1/traces`) or gRPC (`TraceService/Export`), decodes them with the official
//! protobuf types of `opentelemetry-proto`, and keeps every span with its service's name.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use serde_json::Value;

/// One span as the collector received it.
#[derive(Debug, Clone)]
pub struct Span {
    /// `service.name` of the resource that sent it.
    pub service: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a trace's root.
    pub parent_id: String,
    pub name: String,
    /// OTLP's `SpanKind` (1 internal, 2 server, 3 client).
    pub kind: i32,
    pub attributes: BTreeMap<String, Value>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// OTLP's status code (0 unset, 1 ok, 2 error).
    pub status: i32,
}

impl Span {
    /// Attribute `key` as text (numbers and booleans written out).
    pub fn attr(&self, key: &str) -> Option<String> {
        self.attributes.get(key).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// Attribute `key` as a whole number.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.attributes.get(key).and_then(Value::as_i64)
    }
}

/// The received spans, shared by the servers.
#[derive(Debug, Clone, Default)]
struct Received(Arc<Mutex<Vec<Span>>>);

impl Received {
    fn take(&self, request: ExportTraceServiceRequest) {
        let mut spans = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for resource in request.resource_spans {
            let service = resource
                .resource
                .as_ref()
                .and_then(|r| r.attributes.iter().find(|a| a.key == "service.name"))
                .and_then(|a| a.value.as_ref())
                .map(json)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            for scope in resource.scope_spans {
                for span in scope.spans {
                    spans.push(Span {
                        service: service.clone(),
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_id: hex(&span.parent_span_id),
                        name: span.name,
                        kind: span.kind,
                        attributes: attributes(&span.attributes),
                        start_ns: span.start_time_unix_nano,
                        end_ns: span.end_time_unix_nano,
                        status: span.status.map_or(0, |s| s.code),
                    });
                }
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, Value> {
    list.iter()
        .map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(Value::Null, json)))
        .collect()
}

fn json(value: &AnyValue) -> Value {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => Value::from(s.clone()),
        Some(any_value::Value::BoolValue(b)) => Value::from(*b),
        Some(any_value::Value::IntValue(i)) => Value::from(*i),
        Some(any_value::Value::DoubleValue(d)) => Value::from(*d),
        Some(any_value::Value::ArrayValue(a)) => Value::Array(a.values.iter().map(json).collect()),
        Some(any_value::Value::KvlistValue(kv)) => {
            Value::Object(attributes(&kv.values).into_iter().collect())
        }
        Some(any_value::Value::BytesValue(b)) => Value::from(hex(b)),
        _ => Value::Null,
    }
}

/// A collector listening on loopback until dropped.
pub struct Collector {
    base: String,
    received: Received,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Collector {
    /// A collector taking http/protobuf at `{base}/v1/traces`.
    pub async fn http() -> anyhow::Result<Collector> {
        let received = Received::default();
        let keep = received.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: Bytes| {
                let keep = keep.clone();
                async move {
                    match ExportTraceServiceRequest::decode(body) {
                        Ok(request) => {
                            keep.take(request);
                            let answer = ExportTraceServiceResponse::default().encode_to_vec();
                            (
                                axum::http::StatusCode::OK,
                                [("content-type", "application/x-protobuf")],
                                answer,
                            )
                        }
                        Err(_) => (
                            axum::http::StatusCode::BAD_REQUEST,
                            [("content-type", "text/plain")],
                            b"not an ExportTraceServiceRequest".to_vec(),
                        ),
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Collector {
            base,
            received,
            server,
        })
    }

    /// A collector taking OTLP over gRPC at `base`.
    pub async fn grpc() -> anyhow::Result<Collector> {
        let received = Received::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let service = TraceServiceServer::new(Grpc(received.clone()));
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let server = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        Ok(Collector {
            base,
            received,
            server,
        })
    }

    /// The collector's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` names it.
    pub fn endpoint(&self) -> &str {
        &self.base
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.received
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The spans once `done` holds for them, or an error saying what came within `limit`.
    pub async fn wait_for(
        &self,
        limit: Duration,
        done: impl Fn(&[Span]) -> bool,
    ) -> anyhow::Result<Vec<Span>> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return Ok(spans);
            }
            if tokio::time::Instant::now() >= deadline {
                let names: Vec<String> = spans
                    .iter()
                    .map(|s| format!("{}:{}", s.service, s.name))
                    .collect();
                anyhow::bail!("the collector did not get the spans awaited; it got {names:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The gRPC side.
struct Grpc(Received);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.take(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}
