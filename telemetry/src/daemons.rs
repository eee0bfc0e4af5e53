//! What the sandboxes' daemons are told of the controller's tracing, so their spans go to
//! the same collector: where it is and over which wire, never its headers (a collector's
//! key would reach the agent's commands through coved's environment) nor the service name
//! (coved's spans are `coved`'s).

use std::sync::OnceLock;

#[cfg(feature = "export")]
use crate::settings::{Protocol, Settings};

/// Set once tracing is installed and exporting.
static DAEMON_ENV: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// Variables passed through as the controller has them.
#[cfg(feature = "export")]
const PASSED: &[&str] = &[
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_SCHEDULE_DELAY",
];

/// Remembers what daemons are told, from `settings` and the environment.
#[cfg(feature = "export")]
pub(crate) fn remember(settings: &Settings, env: impl Fn(&str) -> Option<String>) {
    let mut vars: Vec<(String, String)> = PASSED
        .iter()
        .filter_map(|name| Some((name.to_string(), env(name).filter(|v| !v.is_empty())?)))
        .collect();
    vars.push((
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".into(),
        settings.endpoint.clone(),
    ));
    let protocol = match settings.protocol {
        Protocol::HttpProtobuf => "http/protobuf",
        Protocol::Grpc => "grpc",
    };
    vars.push(("OTEL_EXPORTER_OTLP_PROTOCOL".into(), protocol.into()));
    let _ = DAEMON_ENV.set(vars);
}

/// The variables a sandbox's coved is started with so its spans join the controller's
/// traces; empty when the controller exports none.
pub fn daemon_env() -> Vec<(String, String)> {
    DAEMON_ENV.get().cloned().unwrap_or_default()
}

/// The port of the collector when it listens on this machine's loopback: a local sandbox
/// with a network of its own is given that port, as `host_ports` gives others.
pub fn collector_loopback_port() -> Option<u16> {
    let env = DAEMON_ENV.get()?;
    let (_, endpoint) = env
        .iter()
        .find(|(name, _)| name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")?;
    loopback_port(endpoint)
}

fn loopback_port(url: &str) -> Option<u16> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?']).next()?;
    let (host, port) = authority.rsplit_once(':')?;
    // IPv4 only: a local sandbox's shared ports are its 127.0.0.1's.
    let loopback = host == "localhost" || host.starts_with("127.");
    loopback.then(|| port.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::loopback_port;

    #[test]
    fn a_collector_on_loopback_is_found_by_its_port() {
        assert_eq!(loopback_port("http://127.0.0.1:4318/v1/traces"), Some(4318));
        assert_eq!(loopback_port("http://localhost:4317"), Some(4317));
        assert_eq!(loopback_port("https://[::1]:9000/x"), None);
        assert_eq!(loopback_port("http://collector:4318"), None);
        assert_eq!(loopback_port("http://127.0.0.1/v1/traces"), None);
    }
}
