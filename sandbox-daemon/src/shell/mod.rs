//! Named, persistent shell sessions in PTYs.

pub mod http;
pub mod output;
pub mod recording;
pub mod scanner;
pub mod session;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::Instrument;

use cove_protocol::shell::{
    DeleteSessionResponse, ExecRequest, ExecResponse, MAX_TIMEOUT_SECS, OutputResponse,
    SessionInfo, SessionList,
};

use crate::procs::ChildRegistry;
use crate::random::random_hex;
use session::{Session, SessionSettings, session_dir};

/// What went wrong with a shell request, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// Fix the request.
    #[error("invalid session name {0:?}: use 1 to 64 characters from A-Z a-z 0-9 _ . -")]
    InvalidName(String),
    /// Fix the request.
    #[error("{0}")]
    InvalidRequest(String),
    /// Create the session with `exec` first, or check the name.
    #[error("no shell session named {0:?}")]
    NotFound(String),
    /// Wait, read its output, answer it, signal it, or use another session.
    #[error(
        "session {name:?} is still running `{command}` (started {started_at}); read its output, send it input or a signal, or use another session"
    )]
    Busy {
        name: String,
        command: String,
        started_at: String,
    },
    /// Nothing to send input or a signal to.
    #[error("session {0:?} has no command running")]
    NoRunningCommand(String),
    /// The shell exited; the next `exec` starts a fresh one.
    #[error("the shell of session {0:?} has exited")]
    Exited(String),
    /// Delete a session first.
    #[error("too many shell sessions (limit {0}); delete one first")]
    TooManySessions(usize),
    /// The daemon cannot run shells right now.
    #[error("cannot start a shell: {0}")]
    Unavailable(String),
    /// The PTY or a private file failed; the session may be unusable.
    #[error("shell session I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Checks a session name: 1 to 64 of `[A-Za-z0-9_.-]`.
pub fn validate_name(name: &str) -> Result<(), ShellError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ShellError::InvalidName(name.to_string()))
    }
}

/// Limits and paths for the shell family.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    pub settings: SessionSettings,
    /// Private directory for session FIFOs and command files.
    pub runtime_dir: PathBuf,
    pub max_sessions: usize,
}

/// Every shell session of the daemon.
pub struct ShellManager {
    settings: Arc<SessionSettings>,
    runtime_dir: PathBuf,
    max_sessions: usize,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    next_id: AtomicU64,
    tag_prefix: String,
    registry: Arc<ChildRegistry>,
    /// Bumped whenever any session changes.
    activity: Arc<tokio::sync::watch::Sender<u64>>,
}

impl ShellManager {
    /// A manager with no sessions yet.
    pub fn new(config: ShellConfig, registry: Arc<ChildRegistry>) -> Self {
        ShellManager {
            settings: Arc::new(config.settings),
            runtime_dir: config.runtime_dir,
            max_sessions: config.max_sessions,
            sessions: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            tag_prefix: format!("{}-{}", std::process::id(), random_hex(4)),
            registry,
            activity: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A receiver that sees a change whenever any session prints or reports.
    pub fn activity(&self) -> tokio::sync::watch::Receiver<u64> {
        self.activity.subscribe()
    }

    /// The session called `name`.
    pub fn session(&self, name: &str) -> Result<Arc<Session>, ShellError> {
        self.get(name)
    }

    fn get(&self, name: &str) -> Result<Arc<Session>, ShellError> {
        validate_name(name)?;
        self.map()
            .get(name)
            .cloned()
            .ok_or_else(|| ShellError::NotFound(name.to_string()))
    }

    /// The live session called `name`, started (or restarted after its shell exited) if need be.
    async fn live_session(&self, name: &str) -> Result<Arc<Session>, ShellError> {
        let existing = self.map().get(name).cloned();
        if let Some(session) = existing {
            if !session.has_exited() {
                return Ok(session);
            }
            self.forget(name, &session);
            session.kill().await;
            self.registry.reap_orphans();
        }
        if self.map().len() >= self.max_sessions {
            return Err(ShellError::TooManySessions(self.max_sessions));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}-{id}", self.tag_prefix);
        let fresh = Arc::new(
            Session::spawn(
                name,
                tag,
                session_dir(&self.runtime_dir, id),
                self.settings.clone(),
                self.registry.clone(),
                self.activity.clone(),
            )
            .await?,
        );
        let winner = {
            let mut map = self.map();
            map.entry(name.to_string())
                .or_insert_with(|| fresh.clone())
                .clone()
        };
        if !Arc::ptr_eq(&winner, &fresh) {
            // Another request created the session while this one was starting a shell.
            fresh.kill().await;
        }
        Ok(winner)
    }

    /// The processes of every session: their shells, and the tag they all inherit.
    pub fn agent_processes(&self) -> crate::preview::ports::AgentProcesses {
        crate::preview::ports::AgentProcesses {
            shells: self.map().values().map(|s| s.shell_pid()).collect(),
            tag_prefix: self.tag_prefix.clone(),
        }
    }

    fn forget(&self, name: &str, session: &Arc<Session>) {
        let mut map = self.map();
        if map.get(name).is_some_and(|s| Arc::ptr_eq(s, session)) {
            map.remove(name);
        }
    }

    /// Runs a command, waiting for it if the request is blocking. `traceparent` is the
    /// caller's trace context: the command runs in a span under it and sees its own (or,
    /// when coved exports no spans, the caller's) as `TRACEPARENT`.
    pub async fn exec(
        &self,
        request: &ExecRequest,
        traceparent: Option<&str>,
    ) -> Result<ExecResponse, ShellError> {
        let span = cove_telemetry::in_trace(|| {
            tracing::info_span!(
                target: cove_telemetry::TARGET,
                "shell command",
                cove.shell.session = %request.session,
                process.command_line = %summary(&request.command),
                process.exit.code = tracing::field::Empty,
                cove.shell.completed = tracing::field::Empty,
            )
        });
        let traceparent =
            cove_telemetry::traceparent_of(&span).or_else(|| traceparent.map(str::to_string));
        let response = self
            .exec_traced(request, traceparent)
            .instrument(span.clone())
            .await;
        if let Ok(response) = &response {
            if let Some(code) = response.exit_code {
                span.record("process.exit.code", code);
            }
            span.record("cove.shell.completed", response.completed);
        }
        response
    }

    async fn exec_traced(
        &self,
        request: &ExecRequest,
        traceparent: Option<String>,
    ) -> Result<ExecResponse, ShellError> {
        validate_name(&request.session)?;
        if request.command.trim().is_empty() {
            return Err(ShellError::InvalidRequest("command is empty".into()));
        }
        if request.command.contains('\0')
            || request.cwd.as_deref().is_some_and(|c| c.contains('\0'))
        {
            return Err(ShellError::InvalidRequest(
                "command and cwd cannot contain NUL bytes".into(),
            ));
        }
        if request.timeout_secs > MAX_TIMEOUT_SECS {
            return Err(ShellError::InvalidRequest(format!(
                "timeout_secs is at most {MAX_TIMEOUT_SECS}"
            )));
        }
        let started = Instant::now();
        let mut attempt = 0;
        let (session, seq) = loop {
            let session = self.live_session(&request.session).await?;
            let starter = session.clone();
            let command = request.command.clone();
            let cwd = request.cwd.clone();
            let trace = traceparent.clone();
            let result = crate::blocking::blocking(move || {
                starter.start(&command, cwd.as_deref(), trace.as_deref())
            })
            .await
            .map_err(|e| ShellError::Unavailable(format!("cannot start the command: {e}")))?;
            match result {
                Ok(seq) => break (session, seq),
                // The shell died between the lookup and the start: start a fresh one once.
                Err(ShellError::Exited(_)) if attempt == 0 => attempt += 1,
                Err(e) => return Err(e),
            }
        };
        if request.blocking {
            let deadline = started + Duration::from_secs(request.timeout_secs);
            session.wait_for(seq, deadline).await;
        }
        let view = session.command_view(seq);
        Ok(ExecResponse {
            session: request.session.clone(),
            output: view.output.text,
            exit_code: view.exit_code,
            completed: view.completed,
            timed_out: request.blocking && !view.completed,
            truncated: view.output.truncated,
            output_offset: view.end_offset,
            command: Some(seq),
        })
    }

    /// Every session, sorted by name.
    pub fn list(&self) -> SessionList {
        let sessions: Vec<Arc<Session>> = self.map().values().cloned().collect();
        let mut infos: Vec<SessionInfo> = sessions
            .iter()
            .map(|s| {
                let summary = s.summary();
                SessionInfo {
                    name: s.name().to_string(),
                    running: summary.running,
                    command: summary.command,
                    started_at: summary.started_at,
                    exited: summary.exited,
                    cwd: (!summary.exited).then(|| s.cwd()).flatten(),
                }
            })
            .collect();
        infos.sort_by(|a, b| a.name.cmp(&b.name));
        SessionList { sessions: infos }
    }

    /// Output of session `name` since an offset.
    pub fn output(&self, name: &str, since: u64) -> Result<OutputResponse, ShellError> {
        let view = self.get(name)?.read_output(since);
        Ok(OutputResponse {
            output: view.output.text,
            offset: view.offset,
            running: view.running,
            exit_code: view.exit_code,
            truncated: view.output.truncated,
        })
    }

    /// Session `name`'s output as a terminal recording (asciicast v2).
    pub fn recording(&self, name: &str) -> Result<String, ShellError> {
        Ok(self.get(name)?.recording())
    }

    /// Types into session `name`'s running command.
    pub async fn input(&self, name: &str, text: String, enter: bool) -> Result<u64, ShellError> {
        let session = self.get(name)?;
        // A program that reads nothing fills the terminal's buffer and the write waits.
        crate::blocking::blocking(move || session.send_input(&text, enter))
            .await
            .map_err(|e| ShellError::Unavailable(format!("cannot type into the session: {e}")))?
    }

    /// Signals session `name`'s running command.
    pub async fn signal(
        &self,
        name: &str,
        signal: rustix::process::Signal,
    ) -> Result<i32, ShellError> {
        self.get(name)?.signal(signal).await
    }

    /// Kills session `name`'s whole process tree and forgets it.
    pub async fn delete(&self, name: &str) -> Result<DeleteSessionResponse, ShellError> {
        let session = self.get(name)?;
        self.forget(name, &session);
        let killed = session.kill().await;
        self.registry.reap_orphans();
        Ok(DeleteSessionResponse {
            session: name.to_string(),
            processes_killed: killed,
        })
    }

    /// Kills every session (daemon shutdown).
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = self.map().drain().map(|(_, s)| s).collect();
        for session in sessions {
            let killed = session.kill().await;
            tracing::debug!(
                session = session.name(),
                killed,
                "session killed at shutdown"
            );
        }
        self.registry.reap_orphans();
    }
}

/// A command as a span shows it: its first line, at most 200 characters.
fn summary(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(200).collect();
    if cut.len() < command.trim_end().len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_checked() {
        for good in ["default", "a", "build-2", "x.y_z", &"n".repeat(64)] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "../x", "a/b", "é", &"n".repeat(65), "a\0"] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }
}
