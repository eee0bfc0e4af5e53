//! MCP servers for the tests, none written here except two small scripts: the official
//! reference servers (npm `@modelcontextprotocol/server-everything`, PyPI `mcp-server-time`)
//! and the official Python SDK, installed by `install-test-deps.sh` into `target/test-deps`.
//! Each helper fails, naming what to install, when they are missing.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::real_site::npm_modules;

/// The Python environment `install-test-deps.sh` makes (with `mcp` and `mcp-server-time`).
pub fn python() -> Result<PathBuf> {
    let python = std::env::var_os("COVE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-deps/py/bin/python")
        });
    if !python.is_file() {
        bail!(
            "the tests' Python environment is missing at {}: run harness/install-test-deps.sh",
            python.display()
        );
    }
    Ok(python)
}

/// The reference server's executable.
pub fn everything() -> Result<PathBuf> {
    let bin = npm_modules().join(".bin/mcp-server-everything");
    if !bin.exists() {
        bail!(
            "@modelcontextprotocol/server-everything is missing at {}: run harness/install-test-deps.sh",
            bin.display()
        );
    }
    Ok(bin)
}

/// A fixture script of `harness/fixtures/mcp`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/mcp")
        .join(name)
}

/// `server-everything` over stdio, as an `mcpServers` entry.
pub fn everything_stdio() -> Result<Value> {
    Ok(json!({"command": everything()?, "args": ["stdio"]}))
}

/// `mcp-server-time` over stdio, as an `mcpServers` entry.
pub fn time_stdio() -> Result<Value> {
    Ok(json!({"command": python()?, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}))
}

/// The SDK-built catalog server with `count` tools (and `crash`, `shout`).
pub fn catalog(count: usize) -> Result<Value> {
    Ok(json!({
        "command": python()?,
        "args": [fixture("catalog.py"), count.to_string()],
        "startup_timeout": 30,
    }))
}

/// The misbehaving raw server with `flags` (`--flood`, `--hang`, `--die`).
pub fn unruly(flags: &[&str]) -> Result<Value> {
    let mut args = vec![json!(fixture("unruly.py"))];
    args.extend(flags.iter().map(|f| json!(f)));
    Ok(json!({"command": python()?, "args": args}))
}

/// A free localhost port.
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `server-everything` over streamable HTTP on a free port; killed when dropped.
pub struct EverythingHttp {
    pub port: u16,
    _child: tokio::process::Child,
}

impl EverythingHttp {
    /// Starts it and waits until it listens.
    pub async fn start() -> Result<EverythingHttp> {
        let port = free_port()?;
        let child = tokio::process::Command::new(everything()?)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if tokio::time::Instant::now() > deadline {
                bail!("server-everything did not listen on port {port} within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(EverythingHttp {
            port,
            _child: child,
        })
    }

    /// Its endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}
