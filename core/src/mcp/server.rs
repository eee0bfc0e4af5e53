//! One MCP server as the controller runs it: started (a child process over stdio, or a
//! streamable-HTTP session), its tools listed, its calls bounded by the tool timeout, the
//! tail of its stderr kept for the one line that says why it failed, and restarted once if
//! it dies.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, ProcessGroup};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncReadExt;

use super::config::{ServerConfig, Transport};

/// Lines of a server's stderr kept to explain a failure.
const TAIL_LINES: usize = 12;
/// Longest stderr line kept.
const TAIL_LINE_CHARS: usize = 300;
/// Largest result body accepted from an HTTP server.
const MAX_HTTP_RESULT: usize = 64 * 1024 * 1024;

type Client = RunningService<RoleClient, ()>;

/// Why a server could not be started.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StartError {
    /// The command could not be run (not installed, not executable).
    #[error("cannot run `{command}`: {why}")]
    Spawn { command: String, why: String },
    /// It did not finish the MCP handshake in time.
    #[error("did not start within {}s (raise startup_timeout if it is only slow){}", .timeout.as_secs_f32(), tail_suffix(.stderr))]
    Timeout {
        timeout: Duration,
        stderr: Vec<String>,
    },
    /// It started but the handshake or the tool listing failed.
    #[error("{why}{}", tail_suffix(.stderr))]
    Handshake { why: String, stderr: Vec<String> },
}

fn tail_suffix(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with: {}", lines.join(" | "))
    }
}

/// Why a call failed; the text the model reads.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("the MCP server {server:?} did not answer within {}s; the call was cancelled", .timeout.as_secs_f32())]
    Timeout { server: String, timeout: Duration },
    #[error(
        "the MCP server {server:?} stopped during the call{}; {restarted}",
        tail_suffix(.stderr)
    )]
    Crashed {
        server: String,
        stderr: Vec<String>,
        /// What became of it: restarted, or not running any more.
        restarted: String,
    },
    #[error("the MCP server {server:?} is not running: {why}")]
    Down { server: String, why: String },
    #[error("the MCP server {server:?} refused the call: {why}")]
    Refused { server: String, why: String },
}

/// The last lines a server wrote to stderr, bounded however much it writes.
#[derive(Debug, Default)]
pub struct StderrTail {
    lines: VecDeque<String>,
    partial: String,
}

impl StderrTail {
    fn push(&mut self, bytes: &[u8]) {
        for piece in String::from_utf8_lossy(bytes).split_inclusive('\n') {
            if self.partial.chars().count() < TAIL_LINE_CHARS {
                self.partial.push_str(piece.trim_end_matches('\n'));
            }
            if piece.ends_with('\n') {
                self.finish_line();
            }
        }
    }

    fn finish_line(&mut self) {
        let line: String = self.partial.trim().chars().take(TAIL_LINE_CHARS).collect();
        self.partial.clear();
        if line.is_empty() {
            return;
        }
        tracing::debug!(target: "cove::mcp::stderr", "{line}");
        if self.lines.len() == TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The kept lines, the unfinished one included.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.lines.iter().cloned().collect();
        let partial: String = self.partial.trim().chars().take(TAIL_LINE_CHARS).collect();
        if !partial.is_empty() {
            out.push(partial);
        }
        out
    }
}

/// A running server: its connection (replaced when it is restarted) and what it offers.
pub struct Server {
    pub config: ServerConfig,
    client: tokio::sync::Mutex<Option<Arc<Client>>>,
    stderr: Arc<Mutex<StderrTail>>,
    restarted: AtomicBool,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts the server and lists its tools, within its startup timeout.
    pub async fn start(config: ServerConfig) -> Result<(Arc<Server>, Vec<Tool>), StartError> {
        let stderr = Arc::new(Mutex::new(StderrTail::default()));
        let (client, tools) = connect(&config, &stderr).await?;
        let server = Arc::new(Server {
            config,
            client: tokio::sync::Mutex::new(Some(Arc::new(client))),
            stderr,
            restarted: AtomicBool::new(false),
        });
        Ok((server, tools))
    }

    /// A server that was never started, for tests of what sits around it.
    #[cfg(test)]
    pub(crate) fn detached(name: &str) -> Arc<Server> {
        Arc::new(Server {
            config: ServerConfig {
                name: name.into(),
                transport: Transport::Stdio {
                    command: "true".into(),
                    args: Vec::new(),
                    env: Default::default(),
                    cwd: None,
                },
                enabled: true,
                enabled_tools: None,
                disabled_tools: Vec::new(),
                startup_timeout: Duration::from_secs(1),
                tool_timeout: Duration::from_secs(1),
                source: Default::default(),
            },
            client: tokio::sync::Mutex::new(None),
            stderr: Arc::default(),
            restarted: AtomicBool::new(true),
        })
    }

    /// The server's name in the configuration.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    fn stderr_tail(&self) -> Vec<String> {
        last_words(&self.stderr)
    }

    /// The live connection, restarting a dead one (or `dead`, which a call found closed
    /// before the connection itself noticed) if it has not been restarted before.
    async fn connection(&self, dead: Option<&Arc<Client>>) -> Result<Arc<Client>, CallError> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref()
            && !client.is_closed()
            && !dead.is_some_and(|d| Arc::ptr_eq(d, client))
        {
            return Ok(client.clone());
        }
        *slot = None;
        if self.restarted.swap(true, Ordering::SeqCst) {
            return Err(CallError::Down {
                server: self.config.name.clone(),
                why: format!(
                    "it stopped again after being restarted once{}",
                    tail_suffix(&self.stderr_tail())
                ),
            });
        }
        tracing::info!(server = %self.config.name, "restarting the MCP server");
        match connect(&self.config, &self.stderr).await {
            Ok((client, _)) => {
                let client = Arc::new(client);
                *slot = Some(client.clone());
                Ok(client)
            }
            Err(e) => Err(CallError::Down {
                server: self.config.name.clone(),
                why: format!("restarting it failed: {e}"),
            }),
        }
    }

    /// Calls tool `tool` (its raw name) with `arguments`, within the tool timeout.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, CallError> {
        let client = self.connection(None).await?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let timeout = self.config.tool_timeout;
        // Dropping the call on timeout sends the server notifications/cancelled.
        match tokio::time::timeout(timeout, client.call_tool(params)).await {
            Err(_) => Err(CallError::Timeout {
                server: self.config.name.clone(),
                timeout,
            }),
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(e))) => Err(CallError::Refused {
                server: self.config.name.clone(),
                why: e.message.to_string(),
            }),
            Ok(Err(e)) if client.is_closed() || matches!(e, ServiceError::TransportClosed) => {
                // Give the child a moment to flush its last words to stderr.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let stderr = self.stderr_tail();
                let restarted = match self.connection(Some(&client)).await {
                    Ok(_) => "it was restarted; the call was not repeated, so check its effect before calling again".to_string(),
                    Err(e) => e.to_string(),
                };
                Err(CallError::Crashed {
                    server: self.config.name.clone(),
                    stderr,
                    restarted,
                })
            }
            Ok(Err(e)) => Err(CallError::Refused {
                server: self.config.name.clone(),
                why: e.to_string(),
            }),
        }
    }

    /// Ends the server (a child process is asked to exit, then killed).
    pub async fn shutdown(&self) {
        if let Some(client) = self.client.lock().await.take()
            && let Ok(mut client) = Arc::try_unwrap(client)
        {
            let _ = client.close_with_timeout(Duration::from_secs(2)).await;
        }
    }
}

/// The last three lines a server wrote to stderr: what a one-line failure quotes.
fn last_words(stderr: &Mutex<StderrTail>) -> Vec<String> {
    let lines = stderr.lock().map(|t| t.lines()).unwrap_or_default();
    lines[lines.len().saturating_sub(3)..].to_vec()
}

/// Installs the TLS crypto provider the HTTP transport's client needs (ring, which the rest
/// of Cove already builds), once.
fn install_tls_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means a provider is already installed, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Variables an MCP server gets from this process: how to find programs, where home and
/// temporary files are, how text is shown, and how this machine reaches the network
/// (proxies, certificate bundles).
fn inherited_env() -> impl Iterator<Item = (String, String)> {
    const NAMES: &[&str] = &[
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TMPDIR",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TERM",
        "TZ",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_RUNTIME_DIR",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "PIP_CERT",
        "ALL_PROXY",
        "all_proxy",
        // The user's desktop and agent, which servers that open windows or use keys reach.
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "DBUS_SESSION_BUS_ADDRESS",
        "SSH_AUTH_SOCK",
    ];
    NAMES
        .iter()
        .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
}

/// Connects to the server and lists its tools, within its startup timeout.
async fn connect(
    config: &ServerConfig,
    stderr: &Arc<Mutex<StderrTail>>,
) -> Result<(Client, Vec<Tool>), StartError> {
    let timeout = config.startup_timeout;
    let tail = || last_words(stderr);
    let handshake = async {
        let client = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                // What any program needs to run and reach the network, then what its
                // configuration names: never the controller's keys and tokens.
                cmd.args(args).env_clear().envs(inherited_env()).envs(env);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let mut wrapped = CommandWrap::from(cmd);
                // Its own process group, so `npx`'s and `uvx`'s children go with it.
                wrapped.wrap(ProcessGroup::leader());
                let (process, err) = TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| StartError::Spawn {
                        command: command.clone(),
                        why: if e.kind() == std::io::ErrorKind::NotFound {
                            "no such command (is it installed and on PATH?)".to_string()
                        } else {
                            e.to_string()
                        },
                    })?;
                if let Some(mut err) = err {
                    let stderr = stderr.clone();
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 8192];
                        // Read it all, however much it writes, so the child never blocks on
                        // a full pipe; keep only the tail.
                        while let Ok(n) = err.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            if let Ok(mut tail) = stderr.lock() {
                                tail.push(&buf[..n]);
                            }
                        }
                    });
                }
                ().serve(process).await.map_err(|e| init_error(&e))?
            }
            Transport::Http {
                url,
                headers,
                bearer_token,
            } => {
                install_tls_provider();
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
                        handshake_error(&format!("header name {name:?} is not valid: {e}"))
                    })?;
                    let value = HeaderValue::from_str(value).map_err(|e| {
                        handshake_error(&format!("the value of header {name} is not valid: {e}"))
                    })?;
                    custom.insert(name, value);
                }
                let mut transport_config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(custom)
                        .max_json_response_size(MAX_HTTP_RESULT);
                if let Some(token) = bearer_token {
                    transport_config = transport_config.auth_header(token.clone());
                }
                ().serve(StreamableHttpClientTransport::from_config(transport_config))
                    .await
                    .map_err(|e| init_error(&e))?
            }
        };
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| handshake_error(&format!("listing its tools failed: {e}")))?;
        Ok::<_, StartError>((client, tools))
    };
    match tokio::time::timeout(timeout, handshake).await {
        Err(_) => Err(StartError::Timeout {
            timeout,
            stderr: tail(),
        }),
        Ok(Err(StartError::Handshake { why, .. })) => {
            // The child may still be writing why it quit.
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err(StartError::Handshake {
                why,
                stderr: tail(),
            })
        }
        Ok(other) => other,
    }
}

/// The handshake's failure in words: a child that quit is the usual cause.
fn init_error(error: &rmcp::service::ClientInitializeError) -> StartError {
    use rmcp::service::ClientInitializeError;
    match error {
        ClientInitializeError::ConnectionClosed(_) => {
            handshake_error("it exited (or closed its output) during the MCP handshake")
        }
        other => handshake_error(&format!("the MCP handshake failed: {other}")),
    }
}

fn handshake_error(why: &str) -> StartError {
    StartError::Handshake {
        why: why.to_string(),
        stderr: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stderr_tail_keeps_the_last_short_lines_of_a_flood() {
        let mut tail = StderrTail::default();
        for i in 0..10_000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        tail.push(&vec![b'x'; 1_000_000]);
        tail.push(b"yy\nlast words");
        let lines = tail.lines();
        assert_eq!(lines.len(), TAIL_LINES + 1);
        assert_eq!(lines[TAIL_LINES - 2], "line 9999");
        assert_eq!(lines[TAIL_LINES - 1].chars().count(), TAIL_LINE_CHARS);
        assert_eq!(lines[TAIL_LINES], "last words");
    }
}
