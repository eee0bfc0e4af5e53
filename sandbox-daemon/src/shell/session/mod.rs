//! One named shell session: an interactive bash in a PTY, the threads that read its output
//! and wait for it, and the bookkeeping that turns side-channel reports into finished
//! commands.

mod pty;

use pty::start_shell;

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use rustix::process::{Pid, Signal, WaitOptions, kill_process_group, waitpid};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::ShellError;
use super::output::{OutputLog, Rendered};
use super::recording::Timeline;
use super::scanner::Scanner;
use crate::procs::{self, ChildRegistry, SESSION_TAG_VAR};
use crate::random::random_hex;
use crate::timestamp::rfc3339;

/// How long a fresh shell may take to show its first prompt.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait for the end-of-output marker once the exit status is in. The marker only
/// goes missing if the command broke the terminal; the status alone then ends the command.
const MARKER_GRACE: Duration = Duration::from_millis(500);

/// How long to keep reading output after the shell itself exited.
const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(300);

/// How long a signal waits for the shell to pick up a command that was just sent.
const SIGNAL_START_WAIT: Duration = Duration::from_secs(5);

/// How long a signal waits for a freshly forked job to exec its program.
const EXEC_WAIT: Duration = Duration::from_millis(500);

/// Finished commands remembered, so a waiter can still find its result after a newer start.
const HISTORY: usize = 4;

/// Which shell language a session speaks to its shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// bash: PROMPT_COMMAND, `read -d`, `--rcfile`.
    Bash,
    /// Any POSIX shell: PS1's command substitution, `.`, `$ENV`.
    Posix,
}

impl Dialect {
    fn of(shell: &std::path::Path) -> Dialect {
        let name = shell
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.contains("bash") {
            Dialect::Bash
        } else {
            Dialect::Posix
        }
    }
}

/// Settings shared by every session of a daemon.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    pub shell: PathBuf,
    pub workspace: PathBuf,
    /// Output bytes each session keeps for `/output?since=`.
    pub log_capacity: usize,
    /// Output bytes a single answer may carry.
    pub output_cap: usize,
    pub cols: u16,
    pub rows: u16,
}

/// What a caller sees of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandView {
    pub output: Rendered,
    pub exit_code: Option<i32>,
    pub completed: bool,
    pub end_offset: u64,
}

/// What a caller sees of the session's output since an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputView {
    pub output: Rendered,
    pub offset: u64,
    pub running: bool,
    pub exit_code: Option<i32>,
}

/// Where a command stands, for a watch reading its output as it comes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Output (clean text) from the offset asked for; bytes the log no longer holds are
    /// skipped.
    pub text: Vec<u8>,
    /// The offset to ask from next.
    pub next: u64,
    /// Set once the command has ended.
    pub exit_code: Option<i32>,
    /// The command's text.
    pub command: String,
}

/// A summary for session listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub running: bool,
    pub command: Option<String>,
    pub started_at: Option<String>,
    pub exited: bool,
}

#[derive(Debug)]
struct Running {
    seq: u64,
    command: String,
    started_at: SystemTime,
    start: u64,
    head: Vec<u8>,
    /// The shell has read the command line.
    started: bool,
    status: Option<(i32, Instant)>,
    end: Option<u64>,
}

#[derive(Debug)]
struct Finished {
    seq: u64,
    command: String,
    started_at: SystemTime,
    start: u64,
    end: u64,
    head: Vec<u8>,
    exit_code: i32,
}

#[derive(Debug)]
struct State {
    log: OutputLog,
    /// When each stretch of the log arrived, for the session's recording.
    timeline: Timeline,
    head_cap: usize,
    next_seq: u64,
    running: Option<Running>,
    finished: VecDeque<Finished>,
    shell_exit: Option<(i32, Instant)>,
    reader_done: bool,
    /// The last command ran with `TRACEPARENT` exported: the next untraced one unsets it.
    traced: bool,
}

impl State {
    fn append(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.timeline.mark(self.log.end(), self.log.start());
        self.log.append(bytes);
        if let Some(r) = &mut self.running {
            let room = self.head_cap.saturating_sub(r.head.len());
            r.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
    }

    fn mark_end(&mut self, seq: u64) {
        let end = self.log.end();
        if let Some(r) = &mut self.running
            && r.seq == seq
        {
            r.end = Some(end);
        }
    }

    fn record_start(&mut self, seq: u64) {
        if let Some(r) = &mut self.running
            && r.seq == seq
        {
            r.started = true;
        }
    }

    fn record_status(&mut self, seq: u64, status: i32) {
        if let Some(r) = &mut self.running
            && r.seq == seq
        {
            r.status = Some((status, Instant::now()));
        }
    }

    /// Moves the running command to history once everything about its end is known.
    fn settle(&mut self) {
        let Some(r) = &self.running else { return };
        let done = if let Some((code, at)) = self.shell_exit {
            (self.reader_done || at.elapsed() >= EXIT_DRAIN_GRACE).then(|| {
                // An interactive bash announces its own `exit`; that line is not the command's.
                let end = self.log.end();
                let ends_with_exit = end >= r.start + 5 && self.log.ends_with(b"exit\n");
                (code, if ends_with_exit { end - 5 } else { end })
            })
        } else {
            match (r.status, r.end) {
                (Some((code, _)), Some(end)) => Some((code, end)),
                (Some((code, at)), None) if at.elapsed() >= MARKER_GRACE => {
                    Some((code, self.log.end()))
                }
                _ => None,
            }
        };
        let Some((exit_code, end)) = done else { return };
        let Some(r) = self.running.take() else { return };
        if let Some(previous) = self.finished.back_mut() {
            // Only the newest result keeps its head; older ones are rarely read again.
            previous.head = Vec::new();
        }
        if self.finished.len() == HISTORY {
            self.finished.pop_front();
        }
        self.finished.push_back(Finished {
            seq: r.seq,
            command: r.command,
            started_at: r.started_at,
            start: r.start,
            end,
            head: r.head,
            exit_code,
        });
    }

    /// When [`settle`](Self::settle) may next finish the command by time alone (a grace
    /// period running out) rather than on news from the shell; none when only news can.
    fn next_grace(&self) -> Option<Instant> {
        let running = self.running.as_ref()?;
        if let Some((_, at)) = self.shell_exit {
            return (!self.reader_done).then_some(at + EXIT_DRAIN_GRACE);
        }
        match (running.status, running.end) {
            (Some((_, at)), None) => Some(at + MARKER_GRACE),
            _ => None,
        }
    }

    fn last_exit_code(&self) -> Option<i32> {
        self.finished
            .back()
            .map(|f| f.exit_code)
            .or(self.shell_exit.map(|(code, _)| code))
    }
}

struct Shared {
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    /// Bumped on every change of every session of the daemon (what port watches look up
    /// at).
    activity: Arc<watch::Sender<u64>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn notify(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
        self.activity.send_modify(|v| *v = v.wrapping_add(1));
    }
}

/// A live shell session.
pub struct Session {
    name: String,
    tag: String,
    shell_pid: i32,
    dir: PathBuf,
    settings: Arc<SessionSettings>,
    shared: Arc<Shared>,
    writer: Mutex<Box<dyn Write + Send>>,
    master: Mutex<Box<dyn MasterPty + Send>>,
    status_task: JoinHandle<()>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("name", &self.name)
            .field("shell_pid", &self.shell_pid)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The pid of the session's shell.
    pub fn shell_pid(&self) -> i32 {
        self.shell_pid
    }

    /// Where what the terminal runs in the foreground is (the shell itself when idle; a
    /// shell or a program started in it while it runs, which is where typed text goes), as
    /// the kernel knows it.
    pub fn cwd(&self) -> Option<String> {
        [self.foreground_group(), self.shell_pid]
            .iter()
            .find_map(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).ok())
            .map(|dir| dir.to_string_lossy().into_owned())
    }

    /// Starts a shell in a PTY and waits for its first prompt.
    pub async fn spawn(
        name: &str,
        tag: String,
        dir: PathBuf,
        settings: Arc<SessionSettings>,
        registry: Arc<ChildRegistry>,
        activity: Arc<watch::Sender<u64>>,
    ) -> Result<Session, ShellError> {
        let session = {
            let settings = settings.clone();
            let name = name.to_string();
            crate::blocking::blocking(move || {
                start_shell(name, tag, dir, settings, registry, activity)
            })
            .await
            .map_err(|e| ShellError::Unavailable(format!("cannot start the shell: {e}")))??
        };
        if !session.wait_for(0, Instant::now() + STARTUP_TIMEOUT).await {
            let output = session.read_output(0).output.text;
            let session = Arc::new(session);
            session.kill().await;
            return Err(ShellError::Unavailable(format!(
                "{} showed no prompt within {} s; it printed: {output:?}",
                settings.shell.display(),
                STARTUP_TIMEOUT.as_secs()
            )));
        }
        session.shared.lock().finished.clear();
        Ok(session)
    }

    /// The session's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shell has exited; the session can only be read or deleted.
    pub fn has_exited(&self) -> bool {
        let mut st = self.shared.lock();
        st.settle();
        st.shell_exit.is_some()
    }

    /// Types a command into the shell. Returns its sequence number.
    /// Starts `command` (in `cwd` under the workspace when given); with `traceparent`, the
    /// command sees it as `TRACEPARENT`.
    pub fn start(
        &self,
        command: &str,
        cwd: Option<&str>,
        traceparent: Option<&str>,
    ) -> Result<u64, ShellError> {
        let (seq, trace) = {
            let mut st = self.shared.lock();
            st.settle();
            if st.shell_exit.is_some() {
                return Err(ShellError::Exited(self.name.clone()));
            }
            if let Some(r) = &st.running {
                return Err(ShellError::Busy {
                    name: self.name.clone(),
                    command: r.command.clone(),
                    started_at: rfc3339(r.started_at),
                });
            }
            let seq = st.next_seq;
            st.next_seq += 1;
            std::fs::write(self.dir.join("cmd"), command)?;
            let start = st.log.end();
            st.timeline.command(start, command);
            st.running = Some(Running {
                seq,
                command: command.to_string(),
                started_at: SystemTime::now(),
                start,
                head: Vec::new(),
                started: false,
                status: None,
                end: None,
            });
            // Only a checked traceparent (hex and dashes) is written into the shell's line.
            let trace = match traceparent.filter(|t| cove_telemetry::is_traceparent(t)) {
                Some(traceparent) => {
                    st.traced = true;
                    format!("export TRACEPARENT={traceparent}; ")
                }
                None if st.traced => {
                    st.traced = false;
                    "unset TRACEPARENT; ".to_string()
                }
                None => String::new(),
            };
            (seq, trace)
        };
        let command_file = shell_quote(&self.dir.join("cmd").to_string_lossy());
        let read_and_eval = match Dialect::of(&self.settings.shell) {
            Dialect::Bash => format!(
                "IFS= read -r -d '' __cove_cmd <{command_file}; __cove_restore; eval \"$__cove_cmd\""
            ),
            Dialect::Posix => format!(". {command_file}"),
        };
        let line = match cwd {
            Some(cwd) => {
                let dir = self.settings.workspace.join(cwd);
                format!(
                    "{trace}__cove_seq={seq}; __cove_begin; cd -- {} && {{ {read_and_eval}; }}\n",
                    shell_quote(&dir.to_string_lossy())
                )
            }
            None => format!("{trace}__cove_seq={seq}; __cove_begin; {read_and_eval}\n"),
        };
        // The empty line first: after an unmatched quote inside `eval`, bash 5.2 echoes a word
        // of the next line it reads into the output. An empty line has no word to echo. (A
        // POSIX shell needs none, and its empty prompt would only repeat the last report.)
        let line = match Dialect::of(&self.settings.shell) {
            Dialect::Bash => format!("\n{line}"),
            Dialect::Posix => line,
        };
        if let Err(e) = self.write_tty(line.as_bytes()) {
            let mut st = self.shared.lock();
            st.running = None;
            return Err(e);
        }
        Ok(seq)
    }

    fn write_tty(&self, bytes: &[u8]) -> Result<(), ShellError> {
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        writer.write_all(bytes)?;
        writer.flush()?;
        Ok(())
    }

    /// Waits until command `seq` has finished or `deadline` passes. True if it finished.
    pub async fn wait_for(&self, seq: u64, deadline: Instant) -> bool {
        let mut changes = self.subscribe();
        loop {
            if self.is_finished(seq) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            let _ = tokio::time::timeout_at(deadline.into(), self.next_change(&mut changes)).await;
        }
    }

    /// A receiver of the session's changes, for [`next_change`](Self::next_change).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Resolves when the session changed (output, a report from the shell) since `changes`
    /// last looked, or a grace period that can end its command ran out. Nothing ticks while
    /// neither can happen.
    pub async fn next_change(&self, changes: &mut watch::Receiver<u64>) {
        let grace = self.shared.lock().next_grace();
        match grace {
            Some(at) => {
                let _ = tokio::time::timeout_at(at.into(), changes.changed()).await;
            }
            None => {
                if changes.changed().await.is_err() {
                    // The sender lives as long as the session, which the caller holds.
                    std::future::pending::<()>().await;
                }
            }
        }
    }

    /// The command a watch means: `command` when the session still knows it, else the one
    /// running, else the last one finished.
    pub fn target(&self, command: Option<u64>) -> Result<u64, ShellError> {
        let mut st = self.shared.lock();
        st.settle();
        let known = |seq: u64| {
            st.running.as_ref().is_some_and(|r| r.seq == seq)
                || st.finished.iter().any(|f| f.seq == seq)
        };
        match command {
            Some(seq) if seq > 0 && known(seq) => Ok(seq),
            Some(seq) => Err(ShellError::InvalidRequest(format!(
                "session {:?} has no command {seq} (its last {HISTORY} finished commands and the running one are kept)",
                self.name
            ))),
            None => st
                .running
                .as_ref()
                .map(|r| r.seq)
                .or_else(|| st.finished.back().map(|f| f.seq))
                .filter(|seq| *seq > 0)
                .ok_or_else(|| {
                    ShellError::InvalidRequest(format!(
                        "session {:?} has run no command yet",
                        self.name
                    ))
                }),
        }
    }

    /// Command `seq`'s output from offset `from` on (its start at the least) as far as it
    /// is known, and whether it has ended. None once the session no longer remembers it.
    pub fn progress(&self, seq: u64, from: u64) -> Option<Progress> {
        let mut st = self.shared.lock();
        st.settle();
        let (start, end, exit_code, command) =
            if let Some(r) = st.running.as_ref().filter(|r| r.seq == seq) {
                let end = if st.reader_done {
                    st.log.end()
                } else {
                    st.log.stable_end()
                };
                (r.start, end, None, r.command.clone())
            } else {
                let f = st.finished.iter().find(|f| f.seq == seq)?;
                (f.start, f.end, Some(f.exit_code), f.command.clone())
            };
        let end = end.max(start);
        let from = from.clamp(start, end);
        Some(Progress {
            text: st.log.slice(from, end),
            next: end,
            exit_code,
            command,
        })
    }

    fn is_finished(&self, seq: u64) -> bool {
        let mut st = self.shared.lock();
        st.settle();
        st.running.as_ref().is_none_or(|r| r.seq != seq)
    }

    /// The output and status of command `seq`.
    pub fn command_view(&self, seq: u64) -> CommandView {
        let cap = self.settings.output_cap;
        let mut st = self.shared.lock();
        st.settle();
        if let Some(r) = st.running.as_ref().filter(|r| r.seq == seq) {
            let end = st.log.stable_end().max(r.start);
            return CommandView {
                output: st.log.render(r.start, end, &r.head, cap),
                exit_code: None,
                completed: false,
                end_offset: end,
            };
        }
        match st.finished.iter().find(|f| f.seq == seq) {
            Some(f) => CommandView {
                output: st.log.render(f.start, f.end, &f.head, cap),
                exit_code: Some(f.exit_code),
                completed: true,
                end_offset: f.end,
            },
            None => CommandView {
                output: Rendered {
                    text: String::new(),
                    truncated: false,
                },
                exit_code: st.last_exit_code(),
                completed: true,
                end_offset: st.log.end(),
            },
        }
    }

    /// Output from `since` to now.
    pub fn read_output(&self, since: u64) -> OutputView {
        let mut st = self.shared.lock();
        st.settle();
        let end = if st.reader_done {
            st.log.end()
        } else {
            st.log.stable_end()
        };
        OutputView {
            output: st
                .log
                .render(since.min(end), end, &[], self.settings.output_cap),
            offset: end,
            running: st.running.is_some(),
            exit_code: st.last_exit_code(),
        }
    }

    /// The session's output still held, as a terminal recording (asciicast v2).
    pub fn recording(&self) -> String {
        let st = self.shared.lock();
        st.timeline
            .asciicast(&st.log, self.settings.cols, self.settings.rows)
    }

    /// A summary for listings.
    pub fn summary(&self) -> SessionSummary {
        let mut st = self.shared.lock();
        st.settle();
        let exited = st.shell_exit.is_some();
        match (&st.running, st.finished.back()) {
            (Some(r), _) => SessionSummary {
                running: true,
                command: Some(r.command.clone()),
                started_at: Some(rfc3339(r.started_at)),
                exited,
            },
            (None, Some(f)) => SessionSummary {
                running: false,
                command: Some(f.command.clone()),
                started_at: Some(rfc3339(f.started_at)),
                exited,
            },
            (None, None) => SessionSummary {
                running: false,
                command: None,
                started_at: None,
                exited,
            },
        }
    }

    fn require_running(&self) -> Result<(), ShellError> {
        let mut st = self.shared.lock();
        st.settle();
        if st.running.is_none() {
            return Err(ShellError::NoRunningCommand(self.name.clone()));
        }
        Ok(())
    }

    /// Whether the running command has been read by the shell (None: nothing is running).
    fn running_started(&self) -> Option<bool> {
        let mut st = self.shared.lock();
        st.settle();
        st.running.as_ref().map(|r| r.started)
    }

    fn foreground_group(&self) -> i32 {
        self.master
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .process_group_leader()
            .filter(|pgid| *pgid > 0)
            .unwrap_or(self.shell_pid)
    }

    /// Types `text` (and Enter) into the running command's terminal. Returns bytes written.
    pub fn send_input(&self, text: &str, enter: bool) -> Result<u64, ShellError> {
        self.require_running()?;
        let mut bytes = text.as_bytes().to_vec();
        if enter {
            // A real Enter key sends CR; the terminal turns it into LF for line readers.
            bytes.push(b'\r');
        }
        self.write_tty(&bytes)?;
        Ok(bytes.len() as u64)
    }

    /// Sends `signal` to the terminal's foreground job. Returns the process group signalled.
    ///
    /// Two races are closed here. A signal that reaches bash while it is still reading the
    /// command line discards the line silently, so the signal waits for the shell's `start`
    /// report. And a job bash has just forked is still bash, with bash's handlers, until it
    /// execs its program, so the signal waits (briefly) for the exec. If the shell's own group
    /// was in the foreground and a job takes the terminal moments later, the job gets the
    /// signal too: it was being forked as the signal left.
    pub async fn signal(&self, signal: Signal) -> Result<i32, ShellError> {
        let no_command = || ShellError::NoRunningCommand(self.name.clone());
        let deadline = Instant::now() + SIGNAL_START_WAIT;
        let mut changes = self.shared.changed.subscribe();
        loop {
            match self.running_started() {
                None => return Err(no_command()),
                Some(true) => break,
                Some(false) if Instant::now() >= deadline => break,
                Some(false) => {
                    let _ =
                        tokio::time::timeout(Duration::from_millis(20), changes.changed()).await;
                }
            }
        }
        self.wait_for_exec(self.foreground_group()).await;
        let first = self.foreground_group();
        send_to_group(first, signal)?;
        tracing::debug!(session = %self.name, pgid = first, ?signal, "signal sent");
        if first == self.shell_pid {
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if self.running_started().is_none() {
                    break;
                }
                let now = self.foreground_group();
                if now != first {
                    self.wait_for_exec(now).await;
                    send_to_group(now, signal)?;
                    tracing::debug!(session = %self.name, pgid = now, ?signal, "signal sent to the new foreground job");
                    return Ok(now);
                }
            }
        }
        Ok(first)
    }

    /// Waits (at most [`EXEC_WAIT`]) until the leader of `pgid` is no longer a fork of the
    /// session's shell, i.e. has exec'd its program. A subshell never execs; it gets the
    /// signal when the wait runs out.
    async fn wait_for_exec(&self, pgid: i32) {
        if pgid == self.shell_pid {
            return;
        }
        // Read now, not at spawn: `spawn` returns midway through the shell's execve, before
        // its new command line is in place.
        let Ok(shell_cmdline) = std::fs::read(format!("/proc/{}/cmdline", self.shell_pid)) else {
            return;
        };
        let deadline = Instant::now() + EXEC_WAIT;
        while Instant::now() < deadline {
            match std::fs::read(format!("/proc/{pgid}/cmdline")) {
                Ok(cmdline) if cmdline == shell_cmdline => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                _ => return,
            }
        }
        tracing::debug!(session = %self.name, pgid, "job did not exec in time; signalling anyway");
    }

    /// Kills every process of the session and removes its private files. Returns how many
    /// processes were killed.
    pub async fn kill(self: &Arc<Self>) -> u64 {
        let (shell_pid, tag) = (self.shell_pid, self.tag.clone());
        let killed = crate::blocking::blocking(move || procs::kill_session(shell_pid, &tag))
            .await
            .unwrap_or(0);
        self.status_task.abort();
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::debug!(dir = %self.dir.display(), error = %e, "session dir not removed");
        }
        killed
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.status_task.abort();
    }
}

fn send_to_group(pgid: i32, signal: Signal) -> Result<(), ShellError> {
    let pgid = Pid::from_raw(pgid)
        .ok_or_else(|| ShellError::InvalidRequest(format!("bad process group {pgid}")))?;
    kill_process_group(pgid, signal).map_err(std::io::Error::from)?;
    Ok(())
}

/// Where a session keeps its private files.
pub fn session_dir(runtime_dir: &Path, id: u64) -> PathBuf {
    runtime_dir.join(format!("session-{id}"))
}

/// Quotes `s` for a POSIX shell as a single word.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_survives_quotes() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
        assert_eq!(shell_quote("plain"), "'plain'");
    }
}
