//! Shell sessions against real PTYs and a real bash.

use std::time::Duration;

use cove_harness::{DaemonBuilder, DaemonProcess, procs};
use cove_protocol::ErrorCode;
use cove_protocol::client::CovedClient;
use cove_protocol::shell::{ExecRequest, InputRequest, OutputResponse, Signal};

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

async fn run(client: &CovedClient, session: &str, command: &str) -> (String, Option<i32>) {
    let out = client
        .exec(&ExecRequest::new(command).in_session(session))
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    assert!(out.completed, "{command} did not complete: {out:?}");
    (out.output, out.exit_code)
}

/// Polls a session's output until its command is no longer running (or 30 s pass).
async fn until_idle(d: &DaemonProcess, session: &str, since: u64) -> OutputResponse {
    let mut text = String::new();
    let mut since = since;
    for _ in 0..600 {
        let out = d.client.output(session, since).await.unwrap();
        text.push_str(&out.output);
        since = out.offset;
        if !out.running {
            return OutputResponse {
                output: text,
                ..out
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = d.stderr();
    let tail: String = log
        .lines()
        .rev()
        .take(30)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n");
    panic!(
        "session {session} still running after 30 s; output so far: {text:?}\ncoved log tail:\n{tail}"
    );
}

fn unique(tag: &str) -> String {
    format!("{tag}{}", std::process::id())
}

#[tokio::test]
async fn exit_codes_are_exact() {
    let d = daemon().await;
    let c = &d.client;
    assert_eq!(run(c, "codes", "true").await.1, Some(0));
    assert_eq!(run(c, "codes", "false").await.1, Some(1));
    assert_eq!(run(c, "codes", "(exit 42)").await.1, Some(42));
    let (out, code) = run(c, "codes", "no_such_command_xyz").await;
    assert_eq!(code, Some(127));
    assert!(
        out.contains("no_such_command_xyz: command not found"),
        "{out:?}"
    );
    assert_eq!(run(c, "codes", "sh -c 'kill -9 $$'").await.1, Some(137));
    // `exit` ends the shell itself; its status is the command's, and the next call gets a
    // fresh shell in the same session.
    assert_eq!(
        run(c, "codes", "echo bye; exit 3").await,
        ("bye\n".to_string(), Some(3)),
        "bash's own `exit` line is not output"
    );
    assert_eq!(
        run(c, "codes", "echo again").await,
        ("again\n".to_string(), Some(0))
    );
    // $? carries over between calls, as in a terminal.
    run(c, "codes", "(exit 5)").await;
    assert_eq!(run(c, "codes", "echo $?").await.0, "5\n");
}

#[tokio::test]
async fn output_has_no_echo_no_prompt_and_no_escape_codes() {
    let d = daemon().await;
    let c = &d.client;
    assert_eq!(run(c, "clean", "echo hi").await.0, "hi\n");
    let (out, _) = run(
        c,
        "clean",
        r"printf '\033[1;31mred\033[0m \033]0;title\007plain\r\n'",
    )
    .await;
    assert_eq!(out, "red plain\n");
    // A script that sets a prompt (a virtualenv's activate, say) does not leak it.
    run(c, "clean", "PS1='my-prompt$ '").await;
    assert_eq!(run(c, "clean", "echo after").await.0, "after\n");
    assert_eq!(run(c, "clean", ":").await.0, "");
    // A syntax error, even an unmatched quote, leaves nothing behind for the next command.
    for broken in [
        "echo 'unterminated",
        "echo \"unterminated",
        "if then fi",
        "for x in",
    ] {
        let (out, code) = run(c, "clean", broken).await;
        assert_eq!(code, Some(2), "{broken}: {out}");
        assert!(
            out.starts_with("bash: ") && out.contains("unexpected"),
            "{broken}: {out:?}"
        );
        assert_eq!(
            run(c, "clean", "echo next").await.0,
            "next\n",
            "after {broken}"
        );
    }
}

#[tokio::test]
async fn cwd_env_functions_and_aliases_persist_in_a_session() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::create_dir_all(d.path("sub/dir")).unwrap();
    run(
        c,
        "s",
        "cd sub; export GREETING=hello; NOT_EXPORTED=1; greet() { echo \"$GREETING, $1\"; }",
    )
    .await;
    run(c, "s", "declare -A map=([k]=v); alias ll='echo aliased'").await;
    let (out, _) = run(c, "s", "pwd; greet world; echo $NOT_EXPORTED ${map[k]}").await;
    let root = std::fs::canonicalize(d.root()).unwrap();
    assert_eq!(out, format!("{}/sub\nhello, world\n1 v\n", root.display()));
    assert_eq!(run(c, "s", "ll").await.0, "aliased\n");
    // `cwd` is relative to the workspace root and persists like a `cd`.
    let out = c
        .exec(&ExecRequest::new("pwd").in_session("s").in_dir("sub/dir"))
        .await
        .unwrap();
    assert_eq!(out.output, format!("{}/sub/dir\n", root.display()));
    assert_eq!(run(c, "s", "basename $PWD").await.0, "dir\n");
    let bad = c
        .exec(&ExecRequest::new("pwd").in_session("s").in_dir("missing"))
        .await
        .unwrap();
    assert_eq!(bad.exit_code, Some(1));
    assert!(bad.output.contains("missing"), "{bad:?}");
}

#[tokio::test]
async fn sessions_are_isolated() {
    let d = daemon().await;
    let c = &d.client;
    run(c, "a", "export ONLY_A=1; cd /tmp; only_a() { :; }").await;
    let (out, _) = run(
        c,
        "b",
        "echo ${ONLY_A:-unset}; pwd; type only_a 2>&1 | head -1",
    )
    .await;
    let root = std::fs::canonicalize(d.root()).unwrap();
    assert_eq!(
        out,
        format!("unset\n{}\nbash: type: only_a: not found\n", root.display())
    );
    let listed = c.sessions().await.unwrap().sessions;
    let names: Vec<_> = listed.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    // Each says where its shell is: where a `cd` left it, else the workspace.
    let tmp = std::fs::canonicalize("/tmp").unwrap();
    assert_eq!(listed[0].cwd.as_deref(), tmp.to_str());
    assert_eq!(listed[1].cwd.as_deref(), root.to_str());
}

#[tokio::test]
async fn sessions_run_in_parallel() {
    // Session "waiter" blocks until session "signaller" acts: if sessions were served one at
    // a time, the waiter would hold the daemon and time out.
    let d = daemon().await;
    let c = &d.client;
    let wait_request = ExecRequest::new("while [ ! -e flag ]; do sleep 0.02; done; echo released")
        .in_session("waiter")
        .with_timeout(30);
    let waiter = c.exec(&wait_request);
    let signaller = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c.exec(&ExecRequest::new("touch flag").in_session("signaller"))
            .await
            .unwrap()
    };
    let (waited, signalled) = tokio::join!(waiter, signaller);
    let waited = waited.unwrap();
    assert!(waited.completed && !waited.timed_out, "{waited:?}");
    assert_eq!(waited.output, "released\n");
    assert_eq!(signalled.exit_code, Some(0));
}

#[tokio::test]
async fn a_timed_out_command_keeps_running_and_finishes_later() {
    let d = daemon().await;
    let c = &d.client;
    let out = c
        .exec(&ExecRequest::new("echo one; sleep 1.5; echo two; (exit 7)").with_timeout(1))
        .await
        .unwrap();
    assert!(out.timed_out && !out.completed, "{out:?}");
    assert_eq!(out.exit_code, None);
    assert_eq!(out.output, "one\n");
    let rest = until_idle(&d, "default", out.output_offset).await;
    assert_eq!(rest.output, "two\n");
    assert_eq!(rest.exit_code, Some(7));
    // Reading from the start gives the whole story.
    assert_eq!(c.output("default", 0).await.unwrap().output, "one\ntwo\n");
}

#[tokio::test]
async fn non_blocking_returns_at_once_and_the_session_stays_busy() {
    let d = daemon().await;
    let c = &d.client;
    let out = c
        .exec(&ExecRequest::new("sleep 30").in_session("bg").non_blocking())
        .await
        .unwrap();
    assert!(
        !out.completed && !out.timed_out && out.exit_code.is_none(),
        "{out:?}"
    );
    let busy = c
        .exec(&ExecRequest::new("echo hi").in_session("bg"))
        .await
        .unwrap_err();
    assert_eq!(busy.code(), Some(&ErrorCode::SessionBusy));
    let listed = c.sessions().await.unwrap();
    let bg = listed.sessions.iter().find(|s| s.name == "bg").unwrap();
    assert!(bg.running);
    assert_eq!(bg.command.as_deref(), Some("sleep 30"));
    assert!(bg.started_at.is_some());
    c.signal("bg", Signal::Kill).await.unwrap();
    let done = until_idle(&d, "bg", 0).await;
    assert_eq!(done.exit_code, Some(137));
    assert_eq!(run(c, "bg", "echo free").await.0, "free\n");
}

#[tokio::test]
async fn input_reaches_an_interactive_prompt() {
    let d = daemon().await;
    let c = &d.client;
    let out = c
        .exec(
            &ExecRequest::new("read -p 'name? ' x; echo got:$x")
                .in_session("ask")
                .with_timeout(1),
        )
        .await
        .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.output, "name? ");
    let sent = c
        .input(
            "ask",
            &InputRequest {
                text: "alice".into(),
                enter: true,
            },
        )
        .await
        .unwrap();
    assert_eq!(sent.bytes_written, 6);
    let done = until_idle(&d, "ask", out.output_offset).await;
    assert_eq!(done.output, "got:alice\n");
    assert_eq!(done.exit_code, Some(0));
    // Nothing is waiting for input now.
    let err = c
        .input(
            "ask",
            &InputRequest {
                text: "stray".into(),
                enter: true,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::NoRunningCommand));
}

#[tokio::test]
async fn signals_reach_the_running_command() {
    let d = daemon().await;
    let c = &d.client;
    c.exec(
        &ExecRequest::new("sleep 100")
            .in_session("sig")
            .non_blocking(),
    )
    .await
    .unwrap();
    let sent = c.signal("sig", Signal::Int).await.unwrap();
    assert!(sent.process_group > 1);
    let done = until_idle(&d, "sig", 0).await;
    assert_eq!(done.exit_code, Some(130));
    // A loop running inside the shell itself stops on INT too, and the session survives.
    c.exec(
        &ExecRequest::new("while :; do :; done")
            .in_session("sig")
            .non_blocking(),
    )
    .await
    .unwrap();
    c.signal("sig", Signal::Int).await.unwrap();
    let done = until_idle(&d, "sig", 0).await;
    assert_eq!(done.exit_code, Some(130));
    assert_eq!(run(c, "sig", "echo alive").await.0, "alive\n");
    // TERM reaches a job that honours it.
    c.exec(
        &ExecRequest::new("sleep 100")
            .in_session("sig")
            .non_blocking(),
    )
    .await
    .unwrap();
    c.signal("sig", Signal::Term).await.unwrap();
    assert_eq!(until_idle(&d, "sig", 0).await.exit_code, Some(143));
    let idle = c.signal("sig", Signal::Int).await.unwrap_err();
    assert_eq!(idle.code(), Some(&ErrorCode::NoRunningCommand));
}

#[tokio::test]
async fn delete_kills_the_whole_tree_escapees_included() {
    let d = daemon().await;
    let c = &d.client;
    let tag = unique("81");
    let script = format!(
        "sleep {tag}1 & \
         (sleep {tag}2 &) ; \
         setsid sleep {tag}3 & \
         setsid sh -c 'sleep {tag}4 & sleep {tag}5' & \
         nohup sleep {tag}6 >/dev/null 2>&1 & \
         true"
    );
    run(c, "tree", &script).await;
    c.exec(
        &ExecRequest::new(format!("sleep {tag}7"))
            .in_session("tree")
            .non_blocking(),
    )
    .await
    .unwrap_err_or_busy();
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = procs::matching(&format!("sleep {tag}"));
        if seen.len() >= 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen.len() >= 6, "{seen:?}");
    let deleted = c.delete_session("tree").await.unwrap();
    assert!(deleted.processes_killed >= 7, "{deleted:?}");
    let survivors: Vec<_> = procs::matching(&format!("sleep {tag}"))
        .into_iter()
        .filter(|p| !p.is_zombie())
        .collect();
    assert!(survivors.is_empty(), "survived DELETE: {survivors:?}");
    let gone = c.output("tree", 0).await.unwrap_err();
    assert_eq!(gone.code(), Some(&ErrorCode::NotFound));
    let again = c.delete_session("tree").await.unwrap_err();
    assert_eq!(again.code(), Some(&ErrorCode::NotFound));
    assert_no_zombies(d.pid()).await;
}

trait BusyIsFine {
    fn unwrap_err_or_busy(self);
}

impl BusyIsFine for Result<cove_protocol::shell::ExecResponse, cove_protocol::client::ClientError> {
    fn unwrap_err_or_busy(self) {
        if let Err(e) = self {
            panic!("non-blocking exec failed: {e}");
        }
    }
}

async fn assert_no_zombies(daemon_pid: i32) {
    let mut zombies = Vec::new();
    for _ in 0..100 {
        zombies = procs::descendants(daemon_pid)
            .into_iter()
            .filter(|p| p.is_zombie())
            .collect();
        if zombies.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("zombies under coved: {zombies:?}");
}

#[tokio::test]
async fn a_thousand_commands_leave_no_zombies_and_no_strays() {
    let d = daemon().await;
    let c = &d.client;
    let commands = [
        "true",
        "sleep 0 &",
        "(sleep 0 &)",
        "setsid true &",
        "echo x | cat >/dev/null",
        "setsid sh -c 'sleep 0 &' &",
    ];
    for i in 0..1000 {
        let cmd = commands[i % commands.len()];
        let out = c
            .exec(&ExecRequest::new(cmd).in_session("many"))
            .await
            .unwrap();
        assert!(out.completed, "{cmd}: {out:?}");
    }
    assert_no_zombies(d.pid()).await;
    // Only the shell and whatever it is doing this instant remain.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let alive: Vec<_> = procs::descendants(d.pid())
        .into_iter()
        .filter(|p| !p.is_zombie())
        .collect();
    assert!(alive.len() <= 2, "stray processes: {alive:?}");
}

#[tokio::test]
async fn output_over_the_cap_keeps_head_and_tail() {
    let d = daemon().await;
    let c = &d.client;
    let out = c
        .exec(&ExecRequest::new("seq 1 300000").with_timeout(120))
        .await
        .unwrap();
    assert!(out.completed && out.truncated, "{}", out.output.len());
    assert!(out.output.starts_with("1\n2\n3\n"), "{}", &out.output[..40]);
    assert!(out.output.ends_with("299999\n300000\n"));
    assert!(out.output.contains(" bytes omitted ...]"));
    assert!(
        out.output.len() <= 1024 * 1024 + 100,
        "{}",
        out.output.len()
    );
    let expected_total: usize = (1..=300_000).map(|n: u32| n.to_string().len() + 1).sum();
    let marker = out.output.split("[... ").nth(1).unwrap();
    let omitted: usize = marker.split(' ').next().unwrap().parse().unwrap();
    let shown = out.output.len() - format!("\n[... {omitted} bytes omitted ...]\n").len();
    assert_eq!(
        shown + omitted,
        expected_total,
        "every byte is either shown or counted"
    );
}

#[tokio::test]
async fn yes_for_ten_seconds_does_not_grow_the_daemon() {
    let d = daemon().await;
    let c = &d.client;
    c.exec(&ExecRequest::new("yes").in_session("flood").non_blocking())
        .await
        .unwrap();
    // Meanwhile other sessions answer normally.
    for i in 0..10 {
        let out = c
            .exec(&ExecRequest::new(format!("echo tick {i}")).in_session("calm"))
            .await
            .unwrap();
        assert_eq!(out.output, format!("tick {i}\n"));
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    let out = c.output("flood", 0).await.unwrap();
    assert!(out.running && out.truncated);
    assert!(
        out.offset > 10 * 1024 * 1024,
        "yes produced {} bytes",
        out.offset
    );
    assert!(out.output.len() <= 1024 * 1024 + 100);
    assert!(out.output.ends_with("y\n") || out.output.ends_with('y'));
    let peak_kib = procs::status_kib(d.pid(), "VmHWM").unwrap();
    assert!(peak_kib < 64 * 1024, "coved peaked at {peak_kib} KiB RSS");
    c.delete_session("flood").await.unwrap();
}

#[tokio::test]
async fn utf8_split_across_reads_is_never_mangled() {
    let d = daemon().await;
    let c = &d.client;
    // 60,000 bytes of 2-, 3- and 4-byte characters: PTY reads split them at every offset.
    let (out, _) = run(
        c,
        "utf",
        "for i in $(seq 1 6000); do printf 'é€😀'; done; echo",
    )
    .await;
    let expected = format!("{}\n", "é€😀".repeat(6000));
    assert!(
        !out.contains('\u{fffd}'),
        "replacement characters in output"
    );
    assert_eq!(out, expected);
}

#[tokio::test]
async fn the_environment_suits_an_agent() {
    let d = daemon().await;
    let (out, _) = run(
        &d.client,
        "env",
        "echo $PAGER $GIT_PAGER $DEBIAN_FRONTEND $TERM $GIT_TERMINAL_PROMPT; [ -t 0 ] && echo tty",
    )
    .await;
    assert_eq!(out, "cat cat noninteractive dumb 0\ntty\n");
    // A pager-happy command does not wait for a keypress.
    let (out, code) = run(&d.client, "env", "seq 1 500 | ${PAGER} | tail -1").await;
    assert_eq!((out.as_str(), code), ("500\n", Some(0)));
}

#[tokio::test]
async fn long_and_multi_line_commands_arrive_intact() {
    let d = daemon().await;
    let body = "x".repeat(100_000);
    let script = format!(
        "cat > big.txt <<'EOF'\n{body}\nEOF\nwc -c < big.txt\nfor i in 1 2; do\n  echo line $i\ndone"
    );
    let (out, code) = run(&d.client, "long", &script).await;
    assert_eq!(code, Some(0));
    assert_eq!(out, "100001\nline 1\nline 2\n");
    assert_eq!(
        std::fs::read_to_string(d.path("big.txt")).unwrap().len(),
        100_001
    );
}

#[tokio::test]
async fn bad_shell_requests_are_refused_clearly() {
    let d = daemon().await;
    let c = &d.client;
    let cases = [
        ExecRequest::new(""),
        ExecRequest::new("   "),
        ExecRequest::new("echo").in_session("bad name"),
        ExecRequest::new("echo").in_session("../x"),
        ExecRequest::new("echo").with_timeout(99_999),
        ExecRequest::new("echo \0"),
    ];
    for req in cases {
        let err = c.exec(&req).await.unwrap_err();
        assert_eq!(
            err.code(),
            Some(&ErrorCode::InvalidRequest),
            "{req:?}: {err}"
        );
    }
    for name in ["nobody", "x"] {
        assert_eq!(
            c.output(name, 0).await.unwrap_err().code(),
            Some(&ErrorCode::NotFound)
        );
        assert_eq!(
            c.signal(name, Signal::Int).await.unwrap_err().code(),
            Some(&ErrorCode::NotFound)
        );
        let input = InputRequest {
            text: "x".into(),
            enter: true,
        };
        assert_eq!(
            c.input(name, &input).await.unwrap_err().code(),
            Some(&ErrorCode::NotFound)
        );
        assert_eq!(
            c.delete_session(name).await.unwrap_err().code(),
            Some(&ErrorCode::NotFound)
        );
    }
}

/// A POSIX shell without bash, as in images that have none: Debian's busybox (ash).
async fn busybox_daemon() -> (DaemonProcess, tempfile::TempDir) {
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("busybox is missing: the POSIX-shell tests need it (Debian: apt-get install busybox-static)");
    let dir = tempfile::tempdir().unwrap();
    // busybox picks the applet by the name it is called with.
    let sh = dir.path().join("sh");
    std::os::unix::fs::symlink(busybox, &sh).unwrap();
    let daemon = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--shell")
        .arg(&sh)
        .spawn()
        .await
        .expect("coved starts");
    (daemon, dir)
}

#[tokio::test]
async fn a_posix_shell_without_bash_runs_commands_with_exact_codes_and_state() {
    let (d, _dir) = busybox_daemon().await;
    let (out, code) = run(&d.client, "ash", "echo hello from ${0##*/}").await;
    assert_eq!(code, Some(0));
    assert_eq!(out.trim(), "hello from sh", "no echo, no prompt: {out:?}");
    let (_, code) = run(&d.client, "ash", "false").await;
    assert_eq!(code, Some(1));
    let (_, code) = run(&d.client, "ash", "exit_with() { return $1; }; exit_with 7").await;
    assert_eq!(code, Some(7));
    // State persists between commands of a session: variables, functions, the folder.
    run(
        &d.client,
        "ash",
        "mkdir -p sub && cd sub && X=kept && greet() { echo hi $1; }",
    )
    .await;
    let (out, _) = run(&d.client, "ash", "echo $X $(basename $PWD); greet there").await;
    assert_eq!(out.trim(), "kept sub\nhi there");
    // A multi-line command and a syntax error are one command each.
    let (out, code) = run(&d.client, "ash", "for i in 1 2 3\ndo\n  echo n$i\ndone").await;
    assert_eq!((out.trim(), code), ("n1\nn2\nn3", Some(0)));
    let (_, code) = run(&d.client, "ash", "if then fi").await;
    assert_ne!(code, Some(0));
    let (out, code) = run(&d.client, "ash", "echo still fine").await;
    assert_eq!((out.trim(), code), ("still fine", Some(0)));
    // A command that times out keeps running and is finished later.
    let out = d
        .client
        .exec(
            &ExecRequest::new("sleep 1.5; echo late")
                .in_session("ash")
                .with_timeout(1),
        )
        .await
        .unwrap();
    assert!(!out.completed);
    let done = until_idle(&d, "ash", out.output_offset).await;
    assert!(done.output.contains("late"), "{done:?}");
    assert_eq!(done.exit_code, Some(0));
}

/// Where typed input goes is where the terminal's foreground is: a shell started in the
/// session and moved by a `cd` typed into it, not the session's own shell.
#[tokio::test]
async fn a_session_says_where_its_foreground_is() {
    let d = daemon().await;
    let c = &d.client;
    c.exec(
        &ExecRequest::new("bash --norc --noprofile")
            .in_session("inner")
            .non_blocking(),
    )
    .await
    .unwrap();
    let typed = cove_protocol::shell::InputRequest {
        text: "cd /tmp".into(),
        enter: true,
    };
    c.input("inner", &typed).await.unwrap();
    let tmp = std::fs::canonicalize("/tmp").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let listed = c.sessions().await.unwrap().sessions;
        let inner = listed.iter().find(|s| s.name == "inner").unwrap();
        if inner.cwd.as_deref() == tmp.to_str() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the foreground shell's folder was never said: {inner:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.signal("inner", Signal::Kill).await.unwrap();
}

/// A session's terminal is kept as an asciicast v2 recording with its timing, which the real
/// player (PyPI `asciinema`) plays; an unknown session is a 404.
#[tokio::test]
async fn a_sessions_terminal_is_a_recording_a_real_player_plays() {
    let d = daemon().await;
    run(&d.client, "rec", "echo first-line").await;
    run(
        &d.client,
        "rec",
        "sleep 0.4; printf 'caf\\303\\251 \\033[1mbold\\033[0m\\n'",
    )
    .await;
    let cast = d.client.recording("rec").await.unwrap();
    let lines: Vec<serde_json::Value> = cast
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(lines[0]["version"], 2, "{}", lines[0]);
    assert_eq!(
        (lines[0]["width"].as_u64(), lines[0]["height"].as_u64()),
        (Some(200), Some(50))
    );
    let at = |needle: &str| {
        lines[1..]
            .iter()
            .find(|e| e[2].as_str().is_some_and(|t| t.contains(needle)))
            .and_then(|e| e[0].as_f64())
            .unwrap_or_else(|| panic!("{needle} not in {cast}"))
    };
    assert!(lines[1..].iter().all(|e| e[1] == "o"));
    let times: Vec<f64> = lines[1..].iter().map(|e| e[0].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(
        at("café bold") - at("$ echo first-line") >= 0.35,
        "the sleep is in the timing: {cast}"
    );
    // The session's text as the agent reads it: the command after a prompt, no escapes,
    // lines ended as a terminal ends them.
    let texts: Vec<&str> = lines[1..].iter().filter_map(|e| e[2].as_str()).collect();
    let given = texts.iter().position(|t| *t == "$ echo first-line\r\n");
    let printed = texts.iter().position(|t| t.starts_with("first-line\r\n"));
    assert!(
        given.is_some() && printed.is_some() && given < printed,
        "{texts:?}"
    );
    assert!(cast.contains("café bold\\r\\n"), "{cast}");

    let python = cove_harness::mcp_servers::python().unwrap();
    let asciinema = python.with_file_name("asciinema");
    assert!(
        asciinema.is_file(),
        "PyPI asciinema is missing at {}: run harness/install-test-deps.sh",
        asciinema.display()
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &cast).unwrap();
    let played = std::process::Command::new(&asciinema)
        .arg("cat")
        .arg(file.path())
        .output()
        .unwrap();
    assert!(
        played.status.success(),
        "{}",
        String::from_utf8_lossy(&played.stderr)
    );
    let shown = String::from_utf8_lossy(&played.stdout);
    assert!(
        shown.contains("first-line") && shown.contains("café"),
        "{shown}"
    );

    let missing = d.client.recording("nope").await.unwrap_err();
    assert!(
        matches!(
            missing,
            cove_protocol::client::ClientError::Api {
                code: ErrorCode::NotFound,
                ..
            }
        ),
        "{missing:?}"
    );
}

/// `exec` with a W3C `traceparent`, as cove sends it under a tool's span.
async fn traced(client: &CovedClient, command: &str, traceparent: &str) -> String {
    let url = client.url(&["v1", "shell", "exec"]).unwrap();
    let out: serde_json::Value = client
        .request(reqwest::Method::POST, url)
        .header("traceparent", traceparent)
        .json(&ExecRequest::new(command).in_session("traced"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    out["output"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_traced_command_sees_its_traceparent_and_the_next_untraced_one_does_not() {
    // This coved exports no spans: the caller's own context is what the command sees.
    let d = daemon().await;
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let seen = traced(&d.client, "echo \"[$TRACEPARENT]\"", parent).await;
    assert_eq!(seen.trim(), format!("[{parent}]"));
    // The next command without a trace does not see the last one's.
    let (plain, _) = run(&d.client, "traced", "echo \"[${TRACEPARENT-unset}]\"").await;
    assert_eq!(plain.trim(), "[unset]");
    // A malformed header never reaches the shell's line.
    let hostile = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01; touch /tmp/x";
    let seen = traced(&d.client, "echo \"[${TRACEPARENT-unset}]\"", hostile).await;
    assert_eq!(seen.trim(), "[unset]");
}
