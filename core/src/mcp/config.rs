//! MCP server configuration as the ecosystem writes it: an `mcpServers` JSON object (wrapped
//! as `{"mcpServers": {...}}` or bare), each server a command to run over stdio or a
//! streamable-HTTP URL. Strings may use `${VAR}` and `${VAR:-default}`. Fields other hosts
//! add (`autoApprove`, `alwaysAllow`, …) are ignored, so their files work as they are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// How long a server may take to start before the run goes on without it.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take before it becomes a tool error.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// Sent as `Authorization: Bearer …`.
        bearer_token: Option<String>,
    },
}

/// One configured server, with its strings expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    /// Only these tools, when given.
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// The file it came from.
    pub source: PathBuf,
}

/// A configuration problem, where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {message}", file.display())]
pub struct ConfigProblem {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(alias = "bearer_token")]
    bearer_token: Option<String>,
    enabled: Option<bool>,
    /// Cursor's and Cline's way of saying `enabled = false`.
    disabled: Option<bool>,
    #[serde(alias = "enabled_tools")]
    enabled_tools: Option<Vec<String>>,
    #[serde(default, alias = "disabled_tools")]
    disabled_tools: Vec<String>,
    #[serde(rename = "startup_timeout", alias = "startupTimeout")]
    startup_timeout: Option<f64>,
    #[serde(rename = "tool_timeout", alias = "toolTimeout")]
    tool_timeout: Option<f64>,
}

/// Where `needle` (a JSON object key) first appears in `text`, as 1-based line and column.
pub fn position_of_key(text: &str, key: &str) -> (usize, usize) {
    let quoted = format!("\"{key}\"");
    let at = text.find(&quoted).unwrap_or(0);
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Expands `${VAR}` and `${VAR:-default}` in `s` with `lookup`; an unset variable without
/// a default is an error naming it.
pub fn expand(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("an unclosed ${{ in {s:?}"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("${{{inner}}} is not a variable name"));
        }
        match (lookup(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "${{{name}}} is not set (give it a default with ${{{name}:-…}})"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn seconds(value: Option<f64>, default: Duration, what: &str) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(format!(
            "{what} must be a number of seconds above 0, not {s}"
        )),
    }
}

fn server(
    name: &str,
    raw: RawServer,
    source: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    if name.trim().is_empty() {
        return Err("a server has an empty name".into());
    }
    let x = |s: &str| expand(s, lookup);
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    let transport = match (raw.command, raw.url, kind.as_deref()) {
        (_, _, Some("sse")) => {
            return Err(format!(
                "server {name:?} uses the SSE transport, which Cove does not speak: use its streamable-HTTP endpoint"
            ));
        }
        (Some(_), Some(_), _) => {
            return Err(format!(
                "server {name:?} has both a command and a url: keep one"
            ));
        }
        (None, None, _) => {
            return Err(format!(
                "server {name:?} has neither a command (stdio) nor a url (streamable HTTP)"
            ));
        }
        (Some(command), None, _) => Transport::Stdio {
            command: x(&command)?,
            args: raw.args.iter().map(|a| x(a)).collect::<Result<_, _>>()?,
            env: raw
                .env
                .iter()
                .map(|(k, v)| Ok((k.clone(), x(v)?)))
                .collect::<Result<_, String>>()?,
            cwd: raw.cwd.as_deref().map(x).transpose()?.map(PathBuf::from),
        },
        (None, Some(url), _) => {
            let url = x(&url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("server {name:?}: url must be http(s), not {url:?}"));
            }
            Transport::Http {
                url,
                headers: raw
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), x(v)?)))
                    .collect::<Result<_, String>>()?,
                bearer_token: raw.bearer_token.as_deref().map(x).transpose()?,
            }
        }
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        enabled: raw.enabled.unwrap_or(true) && !raw.disabled.unwrap_or(false),
        enabled_tools: raw.enabled_tools,
        disabled_tools: raw.disabled_tools,
        startup_timeout: seconds(
            raw.startup_timeout,
            DEFAULT_STARTUP_TIMEOUT,
            "startup_timeout",
        )?,
        tool_timeout: seconds(raw.tool_timeout, DEFAULT_TOOL_TIMEOUT, "tool_timeout")?,
        source: source.to_path_buf(),
    })
}

/// The servers of one file's `text`; each problem found, with its place. A bad server is
/// left out, the others kept.
pub fn parse(
    text: &str,
    source: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> (Vec<ServerConfig>, Vec<ConfigProblem>) {
    let problem = |line, column, message: String| ConfigProblem {
        file: source.to_path_buf(),
        line,
        column,
        message,
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return (
                Vec::new(),
                vec![problem(
                    e.line(),
                    e.column(),
                    format!("not valid JSON: {e}"),
                )],
            );
        }
    };
    let servers = match value.get("mcpServers") {
        Some(wrapped) => wrapped.clone(),
        None => value,
    };
    let Value::Object(servers) = servers else {
        return (
            Vec::new(),
            vec![problem(
                1,
                1,
                "expected an object of servers ({\"mcpServers\": {\"name\": {...}}})".into(),
            )],
        );
    };
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for (name, raw) in servers {
        let (line, column) = position_of_key(text, &name);
        let parsed = serde_json::from_value::<RawServer>(raw)
            .map_err(|e| format!("server {name:?}: {e}"))
            .and_then(|raw| server(&name, raw, source, lookup));
        match parsed {
            Ok(s) => found.push(s),
            Err(message) => problems.push(problem(line, column, message)),
        }
    }
    (found, problems)
}

/// The servers of `files`, in order: a later file's server replaces an earlier one of the
/// same name; a file that does not exist is skipped.
pub fn load(
    files: &[PathBuf],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> (Vec<ServerConfig>, Vec<ConfigProblem>) {
    let mut servers: Vec<ServerConfig> = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                problems.push(ConfigProblem {
                    file: file.clone(),
                    line: 1,
                    column: 1,
                    message: format!("cannot read it: {e}"),
                });
                continue;
            }
        };
        let (found, mut bad) = parse(&text, file, lookup);
        problems.append(&mut bad);
        for server in found {
            servers.retain(|s| s.name != server.name);
            servers.push(server);
        }
    }
    (servers, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "HOME" => Some("/home/me".into()),
            _ => None,
        }
    }

    fn one(text: &str) -> Result<ServerConfig, ConfigProblem> {
        let (mut found, mut problems) = parse(text, Path::new("mcp.json"), &env);
        match problems.pop() {
            Some(p) => Err(p),
            None => Ok(found.remove(0)),
        }
    }

    #[test]
    fn wrapped_and_bare_stdio_and_http() {
        let wrapped = r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs", "${HOME}/docs"], "env": {"KEY": "${TOKEN}"}}}}"#;
        let s = one(wrapped).unwrap();
        assert_eq!(
            s.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server-fs".into(), "/home/me/docs".into()],
                env: BTreeMap::from([("KEY".into(), "s3cret".into())]),
                cwd: None,
            }
        );
        assert!(s.enabled);
        assert_eq!(
            (s.startup_timeout, s.tool_timeout),
            (DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT)
        );
        let bare = r#"{"api": {"type": "http", "url": "https://mcp.example/${PATH_PART:-mcp}", "headers": {"X-Team": "core"}, "bearerToken": "${TOKEN}", "disabledTools": ["delete"], "enabled_tools": ["search", "read"], "startup_timeout": 2.5, "autoApprove": ["x"]}}"#;
        let s = one(bare).unwrap();
        assert_eq!(
            s.transport,
            Transport::Http {
                url: "https://mcp.example/mcp".into(),
                headers: BTreeMap::from([("X-Team".into(), "core".into())]),
                bearer_token: Some("s3cret".into()),
            }
        );
        assert_eq!(s.enabled_tools, Some(vec!["search".into(), "read".into()]));
        assert_eq!(s.disabled_tools, vec!["delete".to_string()]);
        assert_eq!(s.startup_timeout, Duration::from_millis(2500));
        assert!(
            !one(r#"{"x": {"command": "a", "disabled": true}}"#)
                .unwrap()
                .enabled
        );
        assert!(
            !one(r#"{"x": {"command": "a", "enabled": false}}"#)
                .unwrap()
                .enabled
        );
    }

    #[test]
    fn problems_say_where_and_what() {
        let err =
            one("{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\",}\n  }\n}").unwrap_err();
        assert_eq!((err.line, err.column), (3, 29), "{err}");
        assert!(
            err.to_string().starts_with("mcp.json:3:29: not valid JSON"),
            "{err}"
        );

        let text = "{\"mcpServers\": {\n  \"ok\": {\"command\": \"a\"},\n  \"bad\": {\"command\": \"${NOPE}\"}\n}}";
        let (found, problems) = parse(text, Path::new("mcp.json"), &env);
        assert_eq!(found.len(), 1, "the good server is kept");
        assert_eq!(
            problems[0].to_string(),
            "mcp.json:3:3: ${NOPE} is not set (give it a default with ${NOPE:-…})"
        );
        for (text, says) in [
            (
                r#"{"x": {"type": "sse", "url": "http://a/sse"}}"#,
                "SSE transport",
            ),
            (
                r#"{"x": {"command": "a", "url": "http://b"}}"#,
                "both a command and a url",
            ),
            (r#"{"x": {"args": ["a"]}}"#, "neither a command"),
            (r#"{"x": {"url": "ftp://b"}}"#, "must be http(s)"),
            (r#"{"x": {"command": "a", "tool_timeout": 0}}"#, "above 0"),
            (r#"{"x": {"command": ["a"]}}"#, "invalid type"),
            (r#"{"x": {"command": "${UNCLOSED"}}"#, "unclosed"),
            (r#"["not", "servers"]"#, "expected an object of servers"),
        ] {
            let err = one(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn later_files_replace_servers_of_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.json");
        let project = dir.path().join("project.json");
        std::fs::write(&user, r#"{"a": {"command": "one"}, "b": {"command": "b"}}"#).unwrap();
        std::fs::write(&project, r#"{"mcpServers": {"a": {"command": "two"}}}"#).unwrap();
        let missing = dir.path().join("missing.json");
        let (servers, problems) = load(&[user, missing, project.clone()], &env);
        assert!(problems.is_empty(), "{problems:?}");
        let names: Vec<(&str, &Path)> = servers
            .iter()
            .map(|s| (s.name.as_str(), s.source.as_path()))
            .collect();
        assert_eq!(names[1], ("a", project.as_path()));
        assert_eq!(names.len(), 2);
    }
}
