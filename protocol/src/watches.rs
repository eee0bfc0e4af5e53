//! Watch and sandbox-event wire types: what the agent waits for in the sandbox (a command
//! exiting, a line of output, a port listening, a file changing, a timer), registered as
//! one-shot watches and reported as events a caller long-polls for.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Seconds a watch lives when the request names none.
pub const DEFAULT_TTL_SECS: u64 = 3600;
/// The longest a watch may live.
pub const MAX_TTL_SECS: u64 = 86_400;
/// The longest `GET /v1/events` waits for an event before answering with none.
pub const MAX_EVENTS_WAIT_SECS: u64 = 60;

/// What a watch waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "on", rename_all = "snake_case", deny_unknown_fields)]
pub enum WatchSpec {
    /// A command of a shell session ends: the one numbered `command`, else the one running
    /// now, else the last one (which fires at once).
    Exit {
        session: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<u64>,
    },
    /// A line of a command's output matches `pattern` (a regular expression); the command is
    /// chosen as for `exit`. Fires once, with the matching lines, or when the command ends
    /// without one.
    Output {
        session: String,
        pattern: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<u64>,
    },
    /// Something in the sandbox listens on TCP `port` (at once if it already does).
    Port { port: u16 },
    /// A file or folder changes: anything beneath a folder, the file itself, or the path
    /// coming into being when it does not exist yet. Relative to the workspace.
    File { path: String },
    /// A timer runs out.
    After { seconds: u64 },
}

/// Body of `POST /v1/watches`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreateWatch {
    #[serde(flatten)]
    pub spec: WatchSpec,
    /// What the watch is for, in a few words ("tests to finish"); shown with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Seconds until the watch expires unfired (default 3600, at most 86400); it then fires
    /// `expired`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_secs: Option<u64>,
}

/// One watch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WatchInfo {
    /// `w` and hex digits, unique across the daemon's restarts.
    pub id: String,
    #[serde(flatten)]
    pub spec: WatchSpec,
    pub label: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// When it fires `expired` if nothing else fired first (RFC 3339).
    pub expires_at: String,
    /// The event it fired, once it has (the watch is then done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired: Option<u64>,
}

/// `GET /v1/watches`: the watches not yet fired, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WatchList {
    pub watches: Vec<WatchInfo>,
}

/// What happened, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Happened {
    /// The command ended.
    Exited {
        session: String,
        command: u64,
        /// Its text.
        command_text: String,
        exit_code: i32,
        /// The last lines it printed (at most 20).
        tail: String,
    },
    /// Lines of the command's output matched (at most 20 of them, with their 1-based line
    /// numbers in the command's output).
    Matched {
        session: String,
        command: u64,
        lines: Vec<MatchedLine>,
    },
    /// The command ended without a line that matched.
    EndedWithoutMatch {
        session: String,
        command: u64,
        exit_code: i32,
    },
    /// Something listens on the port.
    Listening { port: u16 },
    /// Paths changed (relative to the workspace; at most 50 named, `more` counts the rest).
    Changed { paths: Vec<String>, more: u64 },
    /// The timer ran out.
    TimerDone { seconds: u64 },
    /// The watch lived its whole lifetime without firing.
    Expired,
    /// The watch could not go on (its session was deleted, its folder removed).
    Failed { reason: String },
}

/// One line of output a pattern matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MatchedLine {
    pub line: u64,
    pub text: String,
}

/// One event: a watch fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxEvent {
    /// Increasing from 1 in each run of the daemon; `after=` resumes from it.
    pub id: u64,
    /// The watch that fired (done from then on).
    pub watch: String,
    pub label: Option<String>,
    /// When (RFC 3339).
    pub at: String,
    #[serde(flatten)]
    pub happened: Happened,
}

/// Query of `GET /v1/events`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Only events after this id (0 or none: every event kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// Seconds to wait for one when there is none yet (default 0, at most 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_secs: Option<u64>,
}

/// The answer to `GET /v1/events`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventList {
    /// The events after `after`, oldest first.
    pub events: Vec<SandboxEvent>,
    /// The id to pass as `after` next.
    pub last: u64,
    /// Events after `after` no longer kept (the daemon keeps the latest 4096).
    pub missed: u64,
    /// Changes each time the daemon starts: ids from an earlier run mean nothing now.
    pub boot: String,
}
