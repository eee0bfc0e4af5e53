//! Whether and where spans go: the standard OpenTelemetry environment first, then
//! `[telemetry]` in cove.toml. Off unless one of them names an endpoint.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Spans wait at most this many in memory for the exporter; more are dropped and counted.
pub const DEFAULT_QUEUE: usize = 2048;

/// `[telemetry]` in cove.toml: what the `OTEL_*` variables say, for when they are not set.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TelemetryFile {
    /// The collector's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` (`http://host:4318` for
    /// http/protobuf, `http://host:4317` for grpc).
    pub endpoint: Option<String>,
    /// `http/protobuf` (the default) or `grpc`.
    pub protocol: Option<String>,
    /// The `service.name` of the spans (default `cove`; coved's are `coved`).
    pub service_name: Option<String>,
    /// More resource attributes, as `OTEL_RESOURCE_ATTRIBUTES`.
    #[serde(default)]
    pub resource_attributes: BTreeMap<String, String>,
    /// Headers sent to the collector (an API key), as `OTEL_EXPORTER_OTLP_HEADERS`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Put prompts and completions into model-call spans, as
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
    pub capture_content: Option<bool>,
    /// How many ended spans may wait for the exporter, as `OTEL_BSP_MAX_QUEUE_SIZE`.
    pub max_queue_size: Option<usize>,
}

/// The wire the spans take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    HttpProtobuf,
    Grpc,
}

impl Protocol {
    fn parse(value: &str) -> Result<Protocol, SettingsError> {
        match value.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            other => Err(SettingsError::Protocol(other.to_string())),
        }
    }
}

/// Tracing as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Where traces go: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, or the base
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (or cove.toml's `endpoint`) with `/v1/traces` over HTTP.
    pub endpoint: String,
    pub protocol: Protocol,
    /// cove.toml's service name; `OTEL_SERVICE_NAME` wins over it.
    pub service_name: Option<String>,
    /// cove.toml's resource attributes; `OTEL_RESOURCE_ATTRIBUTES` adds to them.
    pub resource_attributes: BTreeMap<String, String>,
    /// cove.toml's headers; the exporter adds `OTEL_EXPORTER_OTLP_HEADERS`.
    pub headers: BTreeMap<String, String>,
    pub capture_content: bool,
    pub max_queue_size: usize,
}

/// Tracing configured wrongly.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SettingsError {
    #[error(
        "OTLP protocol {0:?} is not supported: set OTEL_EXPORTER_OTLP_PROTOCOL (or protocol in [telemetry]) to http/protobuf or grpc"
    )]
    Protocol(String),
    #[error("the telemetry endpoint {0:?} is not an http:// or https:// URL")]
    Endpoint(String),
    #[error("OTEL_BSP_MAX_QUEUE_SIZE {0:?} is not a count of spans above 0")]
    Queue(String),
}

impl Settings {
    /// Tracing as `env` (the process environment) and cove.toml's section say; none when
    /// neither names an endpoint, or `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`
    /// turns it off.
    pub fn resolve(
        env: impl Fn(&str) -> Option<String>,
        file: Option<&TelemetryFile>,
    ) -> Result<Option<Settings>, SettingsError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim() == "none")
        {
            return Ok(None);
        }
        let file = file.cloned().unwrap_or_default();
        let traces = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let base = var("OTEL_EXPORTER_OTLP_ENDPOINT")
            .or_else(|| file.endpoint.clone().filter(|e| !e.trim().is_empty()));
        if traces.is_none() && base.is_none() {
            return Ok(None);
        }
        let protocol = match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .or(file.protocol.clone())
        {
            Some(value) => Protocol::parse(&value)?,
            None => Protocol::HttpProtobuf,
        };
        let endpoint = match (traces, base) {
            (Some(traces), _) => checked(traces)?,
            (None, Some(base)) => traces_endpoint(&base, protocol)?,
            (None, None) => return Ok(None),
        };
        let capture_content = match var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
            Some(v) => v.trim().eq_ignore_ascii_case("true"),
            None => file.capture_content.unwrap_or(false),
        };
        let max_queue_size = match var("OTEL_BSP_MAX_QUEUE_SIZE") {
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(SettingsError::Queue(v))?,
            None => file.max_queue_size.unwrap_or(DEFAULT_QUEUE).max(1),
        };
        Ok(Some(Settings {
            endpoint,
            protocol,
            service_name: file.service_name,
            resource_attributes: file.resource_attributes,
            headers: file.headers,
            capture_content,
            max_queue_size,
        }))
    }
}

/// Where a collector at `base` takes traces: `/v1/traces` under it over HTTP, the base
/// itself over gRPC (as the specification reads `OTEL_EXPORTER_OTLP_ENDPOINT`).
fn traces_endpoint(base: &str, protocol: Protocol) -> Result<String, SettingsError> {
    let base = checked(base.to_string())?;
    Ok(match protocol {
        Protocol::HttpProtobuf => format!("{}/v1/traces", base.trim_end_matches('/')),
        Protocol::Grpc => base.to_string(),
    })
}

/// `url` when it is an http:// or https:// URL.
fn checked(url: String) -> Result<String, SettingsError> {
    let url = url.trim().to_string();
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url)
    } else {
        Err(SettingsError::Endpoint(url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn off_unless_an_endpoint_is_named() {
        assert_eq!(Settings::resolve(env(&[]), None), Ok(None));
        assert_eq!(
            Settings::resolve(env(&[("OTEL_SERVICE_NAME", "x")]), None),
            Ok(None)
        );
        let file = TelemetryFile {
            endpoint: Some("http://collector:4318".into()),
            ..TelemetryFile::default()
        };
        let on = Settings::resolve(env(&[]), Some(&file)).unwrap().unwrap();
        assert_eq!(on.endpoint, "http://collector:4318/v1/traces");
        assert_eq!(on.protocol, Protocol::HttpProtobuf);
        assert_eq!(on.max_queue_size, DEFAULT_QUEUE);
        assert!(!on.capture_content);
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(Settings::resolve(env(&[off]), Some(&file)), Ok(None));
        }
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let file = TelemetryFile {
            endpoint: Some("http://file:4318".into()),
            protocol: Some("http/protobuf".into()),
            capture_content: Some(true),
            ..TelemetryFile::default()
        };
        let on = Settings::resolve(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                (
                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                    "false",
                ),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "16"),
            ]),
            Some(&file),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            on.endpoint, "http://env:4317",
            "gRPC takes the base as it is"
        );
        assert_eq!(on.protocol, Protocol::Grpc);
        assert!(!on.capture_content);
        assert_eq!(on.max_queue_size, 16);
        let traces = Settings::resolve(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318/"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:9999/t"),
            ]),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(traces.endpoint, "http://traces:9999/t", "taken as it is");
        let base = Settings::resolve(
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318/")]),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(base.endpoint, "http://env:4318/v1/traces");
    }

    #[test]
    fn bad_settings_say_what_to_change() {
        let with = |protocol: &str| {
            Settings::resolve(
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
                ]),
                None,
            )
        };
        let refused = with("http/json").unwrap_err();
        assert!(refused.to_string().contains("http/protobuf or grpc"));
        let file = TelemetryFile {
            endpoint: Some("collector:4318".into()),
            ..TelemetryFile::default()
        };
        assert_eq!(
            Settings::resolve(env(&[]), Some(&file)),
            Err(SettingsError::Endpoint("collector:4318".into()))
        );
        assert!(matches!(
            Settings::resolve(
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_BSP_MAX_QUEUE_SIZE", "0")
                ]),
                None
            ),
            Err(SettingsError::Queue(_))
        ));
    }
}
