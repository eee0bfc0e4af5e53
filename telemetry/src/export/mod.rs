//! Installing the process's subscriber: logs to stderr as the log filter says, and, when
//! tracing is configured, Cove's spans to an OTLP collector through the SDK's batch
//! processor behind a counted bound. A slow or absent collector costs the process a full
//! queue at worst, never a wait.

mod client;
mod gate;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::propagation;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::resource::EnvResourceDetector;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

use crate::settings::{Protocol, Settings};
use crate::{TARGET, set_capture_content};

/// Why spans cannot be exported (the process goes on without them).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("the exporter needs a tokio runtime to run in")]
    NoRuntime,
    #[error("cannot build the exporter's HTTP client: {0}")]
    Client(String),
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    #[error("a telemetry header is not valid: {0}")]
    Header(String),
}

/// The installed exporter, to be shut down before the process exits so the last spans
/// leave.
#[derive(Debug, Default)]
pub struct Installed {
    provider: Option<SdkTracerProvider>,
    /// Spans handed to the exporter and not yet sent or failed.
    waiting: Option<Arc<gate::Waiting>>,
}

impl Installed {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Sends what waits and stops the exporter, waiting at most `within`: an unreachable
    /// collector delays the exit by that much at worst. Returns how many spans were still
    /// unsent when it gave up (a collector that never answered).
    pub fn shutdown(self, within: Duration) -> u64 {
        let Some(provider) = self.provider else {
            return 0;
        };
        let (done, finished) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("otel-shutdown".into())
            .spawn(move || {
                let _ = provider.shutdown_with_timeout(within);
                let _ = done.send(());
            });
        if spawned.is_ok() {
            let _ = finished.recv_timeout(within + Duration::from_millis(200));
        }
        self.waiting.map_or(0, |w| w.count())
    }
}

/// Installs the global subscriber: logs to stderr filtered by `logs`, and Cove's spans to the
/// collector `settings` names (none: logs only). `service` is the default `service.name`.
/// Must be called inside the tokio runtime the exporter will use. When the exporter cannot
/// be built, logs are installed all the same and the error says why spans are not sent.
pub fn install(
    logs: EnvFilter,
    settings: Option<&Settings>,
    service: &str,
) -> (Installed, Option<ExportError>) {
    // Cove's spans are for the exporter: logs never show or make them.
    let logs = match format!("{TARGET}=off").parse() {
        Ok(directive) => logs.add_directive(directive),
        Err(_) => logs,
    };
    let fmt = fmt::layer().with_writer(std::io::stderr).with_filter(logs);
    let waiting = Arc::new(gate::Waiting::default());
    let provider = match settings.map(|s| provider(s, service, waiting.clone())) {
        Some(Ok(provider)) => Ok(Some(provider)),
        Some(Err(e)) => Err(e),
        None => Ok(None),
    };
    let (provider, error) = match provider {
        Ok(provider) => (provider, None),
        Err(e) => (None, Some(e)),
    };
    let spans = provider.as_ref().map(|provider| {
        opentelemetry::global::set_tracer_provider(provider.clone());
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("cove"))
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_target(false)
            .with_filter(Targets::new().with_target(TARGET, LevelFilter::TRACE))
    });
    if let Some(settings) = settings.filter(|_| provider.is_some()) {
        set_capture_content(settings.capture_content);
        crate::daemons::remember(settings, |name| std::env::var(name).ok());
    }
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(spans)
        .try_init();
    let waiting = provider.is_some().then_some(waiting);
    (Installed { provider, waiting }, error)
}

/// [`install`] as the process environment and cove.toml's `[telemetry]` (`file`) say. The
/// second value says why spans are not exported when they were asked for and cannot be.
pub fn install_configured(
    logs: EnvFilter,
    file: Option<&crate::TelemetryFile>,
    service: &str,
) -> (Installed, Option<String>) {
    match Settings::resolve(|name| std::env::var(name).ok(), file) {
        Ok(settings) => {
            let (installed, error) = install(logs, settings.as_ref(), service);
            (installed, error.map(|e| e.to_string()))
        }
        Err(e) => (install(logs, None, service).0, Some(e.to_string())),
    }
}

/// The tracer provider: the OTLP exporter, counted, behind the bounded batch processor.
fn provider(
    settings: &Settings,
    service: &str,
    waiting: Arc<gate::Waiting>,
) -> Result<SdkTracerProvider, ExportError> {
    let exporter = gate::Counted {
        inner: exporter(settings)?,
        waiting: waiting.clone(),
    };
    let batch = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(settings.max_queue_size)
                .build(),
        )
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(gate::Gate {
            inner: batch,
            waiting,
            cap: settings.max_queue_size,
        })
        .with_resource(resource(settings, service))
        .build())
}

/// The exporter for the configured wire and endpoint. The headers and the timeout the
/// exporter reads from the `OTEL_EXPORTER_OTLP_*` variables itself.
fn exporter(settings: &Settings) -> Result<opentelemetry_otlp::SpanExporter, ExportError> {
    let builder = opentelemetry_otlp::SpanExporter::builder();
    Ok(match settings.protocol {
        Protocol::HttpProtobuf => {
            let mut http = builder
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(client::OnRuntime::here(export_timeout())?)
                .with_endpoint(&settings.endpoint);
            if !settings.headers.is_empty() {
                let headers: HashMap<String, String> =
                    settings.headers.clone().into_iter().collect();
                http = http.with_headers(headers);
            }
            http.build()?
        }
        Protocol::Grpc => {
            if tokio::runtime::Handle::try_current().is_err() {
                return Err(ExportError::NoRuntime);
            }
            let mut grpc = builder.with_tonic().with_endpoint(&settings.endpoint);
            if !settings.headers.is_empty() {
                grpc = grpc.with_metadata(metadata(&settings.headers)?);
            }
            grpc.build()?
        }
    })
}

/// The headers as gRPC metadata.
fn metadata(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<tonic::metadata::MetadataMap, ExportError> {
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
            .map_err(|_| ExportError::Header(name.clone()))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| ExportError::Header(name.to_string()))?;
        map.insert(name, value);
    }
    Ok(tonic::metadata::MetadataMap::from_headers(map))
}

/// How long one export may take: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), 10 s by default as the specification says.
fn export_timeout() -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse::<u64>().ok())
    .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// `service.name` and the other resource attributes: the environment's
/// (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`) over cove.toml's over the defaults.
fn resource(settings: &Settings, service: &str) -> Resource {
    let mut builder = Resource::builder_empty()
        .with_service_name(
            settings
                .service_name
                .clone()
                .unwrap_or_else(|| service.to_string()),
        )
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .with_attributes(
            settings
                .resource_attributes
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        )
        .with_detector(Box::new(EnvResourceDetector::new()));
    if let Some(name) = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|n| !n.trim().is_empty())
    {
        builder = builder.with_service_name(name);
    }
    builder.build()
}

/// The trace context a request's `traceparent` (and `tracestate`) carries, when it is valid.
pub fn parent_from(headers: &http::HeaderMap) -> Option<Context> {
    use opentelemetry::propagation::TextMapPropagator;
    headers.get("traceparent")?;
    let context = TraceContextPropagator::new().extract(&HeaderMap(headers));
    context.span().span_context().is_valid().then_some(context)
}

/// Reads trace headers from an `http` header map.
struct HeaderMap<'a>(&'a http::HeaderMap);

impl propagation::Extractor for HeaderMap<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}
