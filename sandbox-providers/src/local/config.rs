//! `[local_sandbox]` of `cove.toml`, with `COVE_ALLOW_NET` and `COVE_HOST_PORTS`, as the
//! settings of a local sandbox's walls.

use cove_config::{ConfigError, FileConfig, LocalSandboxConfig, expand_home};

use super::LocalSettings;

impl LocalSettings {
    /// The settings `[local_sandbox]` names, checked.
    pub fn from_config(config: &LocalSandboxConfig) -> Result<LocalSettings, ConfigError> {
        use super::bwrap::Network;
        use super::net_policy::{NetPolicy, NetRule};
        let bad = |m: String| ConfigError::Invalid(format!("[local_sandbox] in cove.toml: {m}"));
        let network = match config.network.as_deref() {
            None | Some("internet") => Network::Proxied,
            Some("none") => Network::None,
            Some("host") => Network::Host,
            Some(other) => {
                return Err(bad(format!(
                    "network = {other:?} is not internet, none or host"
                )));
            }
        };
        let mut rules = config
            .allow_net
            .iter()
            .map(|r| NetRule::parse(r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        if !config.host_ports.is_empty() && network != Network::Proxied {
            return Err(bad(
                "host_ports shares ports through the sandbox's own network: it needs network = \"internet\" (with \"host\" the ports are there already)".into(),
            ));
        }
        for &port in &config.host_ports {
            if port == super::bwrap::PROXY_PORT || port == 0 {
                return Err(bad(format!("host_ports cannot hold {port}")));
            }
            rules.push(NetRule::parse(&format!("127.0.0.1:{port}")).map_err(bad)?);
        }
        let env = config
            .env
            .iter()
            .filter_map(|entry| match entry.split_once('=') {
                Some((name, value)) => Some(Ok((name.to_string(), value.to_string()))),
                None if entry.is_empty() => Some(Err(bad("env holds an empty name".into()))),
                None => std::env::var(entry).ok().map(|v| Ok((entry.clone(), v))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let paths = |list: &[String], what: &str| {
            list.iter()
                .map(|raw| {
                    let path = expand_home(raw);
                    if path.is_absolute() && path.exists() {
                        Ok(path)
                    } else {
                        Err(bad(format!(
                            "{what} {raw:?} is not an existing absolute path"
                        )))
                    }
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(LocalSettings {
            network,
            policy: NetPolicy::new(rules),
            host_ports: config.host_ports.clone(),
            env,
            read_only: paths(&config.read_only, "read_only")?,
            writable: paths(&config.writable, "writable")?,
        })
    }
}

/// The local sandbox's settings: `[local_sandbox]`, with the host ports `COVE_HOST_PORTS`
/// and the destinations `COVE_ALLOW_NET` name (comma-separated) added.
pub fn local_settings(file: &FileConfig) -> Result<LocalSettings, ConfigError> {
    let mut config = file.local_sandbox.clone().unwrap_or_default();
    if let Ok(allow) = std::env::var("COVE_ALLOW_NET") {
        config.allow_net.extend(
            allow
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_string),
        );
    }
    if let Ok(ports) = std::env::var("COVE_HOST_PORTS") {
        for port in ports.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            config.host_ports.push(port.parse().map_err(|_| {
                ConfigError::Invalid(format!("COVE_HOST_PORTS: {port:?} is not a port"))
            })?);
        }
    }
    // A collector on this machine's loopback is reached as a shared host port (unless it
    // sits on the sandbox's own proxy port: then its spans are lost, the sandbox is not).
    let own_network = config.network.as_deref().is_none_or(|n| n == "internet");
    if let Some(port) = cove_telemetry::collector_loopback_port()
        && own_network
        && port != super::bwrap::PROXY_PORT
        && !config.host_ports.contains(&port)
    {
        config.host_ports.push(port);
    }
    LocalSettings::from_config(&config)
}
