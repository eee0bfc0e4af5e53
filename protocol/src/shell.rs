//! Shell session wire types: named, persistent shells in PTYs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The session used when a request names none.
pub const DEFAULT_SESSION: &str = "default";
/// Seconds a blocking `exec` waits before answering `timed_out` when the request names none.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// The longest a blocking `exec` may wait.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

fn default_session() -> String {
    DEFAULT_SESSION.to_string()
}

fn default_true() -> bool {
    true
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

/// `POST /v1/shell/exec`: run a command in a named session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecRequest {
    /// Shell text to run; may span lines, hold heredocs, define functions.
    pub command: String,
    /// Session name (`[A-Za-z0-9_.-]`, up to 64 characters); created on first use.
    #[serde(default = "default_session")]
    pub session: String,
    /// Wait for the command to finish (up to `timeout_secs`) before answering.
    #[serde(default = "default_true")]
    pub blocking: bool,
    /// How long a blocking call waits; the command keeps running after it.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Directory to `cd` into first, relative to the workspace root (or absolute). It persists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

impl ExecRequest {
    /// A blocking request in the default session with the default timeout.
    pub fn new(command: impl Into<String>) -> Self {
        ExecRequest {
            command: command.into(),
            session: default_session(),
            blocking: true,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            cwd: None,
        }
    }

    /// The same request in another session.
    pub fn in_session(mut self, session: impl Into<String>) -> Self {
        self.session = session.into();
        self
    }

    /// The same request with another timeout.
    pub fn with_timeout(mut self, secs: u64) -> Self {
        self.timeout_secs = secs;
        self
    }

    /// The same request, answered at once without waiting.
    pub fn non_blocking(mut self) -> Self {
        self.blocking = false;
        self
    }

    /// The same request, run from `cwd`.
    pub fn in_dir(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
}

/// The answer to `exec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecResponse {
    pub session: String,
    /// The command's output so far (stdout and stderr as the terminal saw them), ANSI-free.
    pub output: String,
    /// The exit status once completed; 128+N when killed by signal N.
    pub exit_code: Option<i32>,
    /// The command has finished.
    pub completed: bool,
    /// The wait ran out; the command is still running.
    pub timed_out: bool,
    /// Output was over the cap: head and tail were kept around an omission marker.
    pub truncated: bool,
    /// Session output offset just past `output`; pass it as `since` to read what follows.
    pub output_offset: u64,
    /// The command's number in its session, for watches on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<u64>,
}

/// One shell session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionInfo {
    pub name: String,
    /// A command is running in it.
    pub running: bool,
    /// The running (or last) command.
    pub command: Option<String>,
    /// When that command started (RFC 3339).
    pub started_at: Option<String>,
    /// The shell itself has exited; the next `exec` starts a fresh one.
    pub exited: bool,
    /// Where the terminal's foreground is (the shell, where a `cd` left it; or a shell or
    /// program a running command started, where typed input goes), while it lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// `GET /v1/shell/sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
}

/// Query of `GET /v1/shell/sessions/{name}/output`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputQuery {
    /// Session output offset to read from (an earlier `output_offset`); 0 when absent.
    #[serde(default)]
    pub since: Option<u64>,
}

/// The answer to an output read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OutputResponse {
    /// Output from `since` to `offset`, ANSI-free, capped with head and tail kept.
    pub output: String,
    /// Offset just past `output`: the next `since`.
    pub offset: u64,
    /// A command is still running.
    pub running: bool,
    /// Exit status of the last finished command.
    pub exit_code: Option<i32>,
    pub truncated: bool,
}

/// `POST /v1/shell/sessions/{name}/input`: text for an interactive prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputRequest {
    pub text: String,
    /// Press Enter after the text.
    #[serde(default = "default_true")]
    pub enter: bool,
}

/// The answer to an input write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InputResponse {
    pub session: String,
    pub bytes_written: u64,
}

/// The signals a client may send to a session's running command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Signal {
    #[serde(rename = "INT", alias = "SIGINT")]
    Int,
    #[serde(rename = "TERM", alias = "SIGTERM")]
    Term,
    #[serde(rename = "KILL", alias = "SIGKILL")]
    Kill,
}

/// `POST /v1/shell/sessions/{name}/signal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalRequest {
    pub signal: Signal,
}

/// The answer to a signal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SignalResponse {
    pub session: String,
    pub signal: Signal,
    /// The process group that received it (the terminal's foreground job).
    pub process_group: i32,
}

/// The answer to `DELETE /v1/shell/sessions/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeleteSessionResponse {
    pub session: String,
    /// How many processes were killed, the shell included.
    pub processes_killed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_request_defaults_match_the_contract() {
        let req: ExecRequest = serde_json::from_str(r#"{"command":"ls"}"#).unwrap();
        assert_eq!(req, ExecRequest::new("ls"));
        assert_eq!(req.session, "default");
        assert!(req.blocking);
        assert_eq!(req.timeout_secs, 60);
    }

    #[test]
    fn exec_request_refuses_unknown_fields() {
        let err = serde_json::from_str::<ExecRequest>(r#"{"command":"ls","timeout":5}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("timeout"), "{err}");
    }

    #[test]
    fn signals_accept_both_spellings() {
        let a: SignalRequest = serde_json::from_str(r#"{"signal":"INT"}"#).unwrap();
        let b: SignalRequest = serde_json::from_str(r#"{"signal":"SIGINT"}"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"signal":"INT"}"#);
    }
}
