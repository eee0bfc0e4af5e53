//! A session's shell on a PTY: its start-up file (which marks each command's end and
//! reports its status into a FIFO), the shell started with the agent's environment, and the
//! threads that read the terminal and wait for the shell.

use super::*;

/// The start-up file of a bash session: marks each command's end and reports its status.
const INIT_TEMPLATE: &str = include_str!("session_init.bash");

/// The same for a POSIX shell without bash (busybox ash, dash).
const POSIX_INIT_TEMPLATE: &str = include_str!("session_init.sh");

/// Writes the shell's start-up file, which marks each command's end with `secret` and
/// reports its status into `fifo`; answers its path.
pub(super) fn write_init(
    dir: &Path,
    dialect: Dialect,
    secret: &str,
    fifo: &Path,
) -> Result<PathBuf, ShellError> {
    let template = match dialect {
        Dialect::Bash => INIT_TEMPLATE,
        Dialect::Posix => POSIX_INIT_TEMPLATE,
    };
    let init = template
        .replace("@MARK@", secret)
        .replace("@FIFO@", &fifo.to_string_lossy().replace('\'', "'\\''"));
    let init_path = dir.join(match dialect {
        Dialect::Bash => "init.bash",
        Dialect::Posix => "init.sh",
    });
    std::fs::write(&init_path, init)?;
    Ok(init_path)
}

/// A new session's state: the shell's start-up counts as its first command.
pub(super) fn starting_state(
    settings: &SessionSettings,
    activity: Arc<watch::Sender<u64>>,
) -> Arc<Shared> {
    Arc::new(Shared {
        state: Mutex::new(State {
            log: OutputLog::new(settings.log_capacity),
            timeline: Timeline::new(),
            head_cap: settings.output_cap / 2,
            next_seq: 1,
            running: Some(Running {
                seq: 0,
                command: "(shell startup)".to_string(),
                started_at: SystemTime::now(),
                start: 0,
                head: Vec::new(),
                started: true,
                status: None,
                end: None,
            }),
            finished: VecDeque::new(),
            shell_exit: None,
            reader_done: false,
            traced: false,
        }),
        changed: watch::channel(0).0,
        activity,
    })
}

/// The shell, interactive, reading `init_path` first, in the workspace, with the agent's
/// environment and none of coved's secrets.
pub(super) fn shell_command(
    settings: &SessionSettings,
    dialect: Dialect,
    init_path: &Path,
    tag: &str,
) -> CommandBuilder {
    let mut cmd = CommandBuilder::new(&settings.shell);
    match dialect {
        Dialect::Bash => {
            cmd.args(["--noprofile", "--noediting", "--rcfile"]);
            cmd.arg(init_path);
            cmd.arg("-i");
        }
        Dialect::Posix => {
            // An interactive POSIX shell reads the file $ENV names before its first prompt.
            cmd.env("ENV", init_path);
            cmd.arg("-i");
        }
    }
    cmd.cwd(&settings.workspace);
    for secret_var in cove_telemetry::SECRET_VARS
        .iter()
        .chain(&["COVE_TOKEN", "COVE_TOKEN_FILE"])
    {
        cmd.env_remove(secret_var);
    }
    for (key, value) in agent_environment() {
        cmd.env(key, value);
    }
    cmd.env(SESSION_TAG_VAR, tag);
    cmd
}

pub(super) fn start_shell(
    name: String,
    tag: String,
    dir: PathBuf,
    settings: Arc<SessionSettings>,
    registry: Arc<ChildRegistry>,
    activity: Arc<watch::Sender<u64>>,
) -> Result<Session, ShellError> {
    std::fs::create_dir_all(&dir)?;
    let fifo = dir.join("status.fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .map_err(std::io::Error::from)?;
    let secret = random_hex(16);
    let dialect = Dialect::of(&settings.shell);
    let init_path = write_init(&dir, dialect, &secret, &fifo)?;
    let shared = starting_state(&settings, activity);

    // The status FIFO is opened read-write so it never reports EOF between writers.
    let status_rx = tokio::net::unix::pipe::OpenOptions::new()
        .read_write(true)
        .open_receiver(&fifo)?;
    let status_task = tokio::spawn(read_statuses(shared.clone(), status_rx));

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: settings.rows,
            cols: settings.cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| ShellError::Unavailable(format!("cannot open a PTY: {e}")))?;
    let cmd = shell_command(&settings, dialect, &init_path, &tag);
    let child = pty.slave.spawn_command(cmd).map_err(|e| {
        status_task.abort();
        ShellError::Unavailable(format!("cannot start {}: {e}", settings.shell.display()))
    })?;
    let shell_pid = child
        .process_id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| ShellError::Unavailable("the shell has no process id".into()))?;
    registry.register(shell_pid);
    // Dropping our copy of the slave lets the reader see EOF once the shell's side closes.
    drop(pty.slave);
    // coved waits for the shell itself (for exact signal numbers); the handle is not needed.
    drop(child);

    let reader = pty
        .master
        .try_clone_reader()
        .map_err(|e| ShellError::Unavailable(format!("cannot read the PTY: {e}")))?;
    let writer = pty
        .master
        .take_writer()
        .map_err(|e| ShellError::Unavailable(format!("cannot write the PTY: {e}")))?;

    {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name(format!("pty-read-{name}"))
            .spawn(move || read_terminal(shared, reader, &secret))?;
    }
    {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name(format!("pty-wait-{name}"))
            .spawn(move || wait_for_shell(shared, shell_pid, &registry))?;
    }

    Ok(Session {
        name,
        tag,
        shell_pid,
        dir,
        settings,
        shared,
        writer: Mutex::new(writer),
        master: Mutex::new(pty.master),
        status_task,
    })
}

/// Environment that suits an agent: no pagers, no prompts, no colour, UTF-8.
pub(super) fn agent_environment() -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("TERM", "dumb".to_string()),
        ("PAGER", "cat".to_string()),
        ("GIT_PAGER", "cat".to_string()),
        ("MANPAGER", "cat".to_string()),
        ("SYSTEMD_PAGER", String::new()),
        ("DEBIAN_FRONTEND", "noninteractive".to_string()),
        ("GIT_TERMINAL_PROMPT", "0".to_string()),
        ("PYTHONUNBUFFERED", "1".to_string()),
        ("NO_COLOR", "1".to_string()),
    ];
    if std::env::var_os("LANG").is_none() && std::env::var_os("LC_ALL").is_none() {
        env.push(("LANG", "C.UTF-8".to_string()));
    }
    env
}

pub(super) fn read_terminal(shared: Arc<Shared>, mut reader: Box<dyn Read + Send>, secret: &str) {
    let mut scanner = Scanner::new(secret);
    let mut buf = vec![0u8; 64 * 1024];
    let mut text = Vec::with_capacity(buf.len());
    let mut markers = Vec::new();
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // EIO: every process holding the terminal has closed it.
            Err(_) => break,
        };
        text.clear();
        markers.clear();
        scanner.feed(&buf[..n], &mut text, &mut markers);
        let mut st = shared.lock();
        let mut from = 0;
        for &(at, seq) in &markers {
            st.append(&text[from..at]);
            st.mark_end(seq);
            from = at;
        }
        st.append(&text[from..]);
        if !markers.is_empty() {
            st.settle();
            drop(st);
            shared.notify();
        }
    }
    shared.lock().reader_done = true;
    shared.notify();
}

pub(super) async fn read_statuses(shared: Arc<Shared>, pipe: tokio::net::unix::pipe::Receiver) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut parts = line.split_whitespace();
        let kind = parts.next();
        let seq = parts.next().and_then(|s| s.parse::<u64>().ok());
        let status = parts.next().and_then(|s| s.parse::<i32>().ok());
        {
            let mut st = shared.lock();
            match (kind, seq, status) {
                (Some("start"), Some(seq), None) => st.record_start(seq),
                (Some("done"), Some(seq), Some(status)) => {
                    st.record_status(seq, status);
                    st.settle();
                }
                _ => {
                    tracing::warn!(%line, "unreadable status report from a shell session");
                    continue;
                }
            }
        }
        shared.notify();
    }
}

pub(super) fn wait_for_shell(shared: Arc<Shared>, shell_pid: i32, registry: &ChildRegistry) {
    let code = match Pid::from_raw(shell_pid).map(|pid| waitpid(Some(pid), WaitOptions::empty())) {
        Some(Ok(Some((_, status)))) => status
            .exit_status()
            .or(status.terminating_signal().map(|sig| 128 + sig))
            .unwrap_or(-1),
        _ => -1,
    };
    registry.unregister(shell_pid);
    {
        let mut st = shared.lock();
        st.shell_exit = Some((code, Instant::now()));
        st.settle();
    }
    shared.notify();
}
