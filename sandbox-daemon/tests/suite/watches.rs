//! Watches against the real binary: a background build's output and exit, a port a real
//! server (Python's http.server) opens, files written by the shell, timers and lifetimes,
//! and events resumed by id.

use std::time::Duration;

use cove_harness::preview::free_port;
use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::ErrorCode;
use cove_protocol::client::CovedClient;
use cove_protocol::shell::ExecRequest;
use cove_protocol::watches::{CreateWatch, Happened, SandboxEvent, WatchSpec};

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

fn watch(spec: WatchSpec, label: &str) -> CreateWatch {
    CreateWatch {
        spec,
        label: Some(label.into()),
        ttl_secs: None,
    }
}

/// Every event after `after` until `count` have come (each long poll waits up to 20 s).
async fn events(c: &CovedClient, mut after: u64, count: usize) -> Vec<SandboxEvent> {
    let mut got = Vec::new();
    for _ in 0..6 {
        let list = c.events(after, 20).await.expect("events");
        after = list.last;
        got.extend(list.events);
        if got.len() >= count {
            return got;
        }
    }
    panic!("only {} of {count} events came: {got:?}", got.len());
}

fn of<'a>(events: &'a [SandboxEvent], watch: &str) -> &'a Happened {
    &events
        .iter()
        .find(|e| e.watch == watch)
        .unwrap_or_else(|| panic!("no event of {watch} in {events:?}"))
        .happened
}

#[tokio::test]
async fn a_background_build_fires_its_output_and_exit_watches() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::write(
        d.path("build.sh"),
        "sleep 0.5\necho compiling\necho 'BUILD OK'\necho done\nexit 3\n",
    )
    .unwrap();
    let started = c
        .exec(
            &ExecRequest::new("bash build.sh")
                .in_session("build")
                .non_blocking(),
        )
        .await
        .unwrap();
    assert!(!started.completed);
    let command = started.command.expect("the command's number");
    let output = c
        .create_watch(&watch(
            WatchSpec::Output {
                session: "build".into(),
                pattern: "BUILD (OK|FAILED)".into(),
                command: None,
            },
            "the build's verdict",
        ))
        .await
        .unwrap();
    let exit = c
        .create_watch(&watch(
            WatchSpec::Exit {
                session: "build".into(),
                command: Some(command),
            },
            "the build to finish",
        ))
        .await
        .unwrap();
    assert_eq!(c.watches().await.unwrap().watches.len(), 2);
    let fired = events(c, 0, 2).await;
    match of(&fired, &output.id) {
        Happened::Matched { lines, session, .. } => {
            assert_eq!(session, "build");
            assert_eq!(lines.len(), 1, "{lines:?}");
            assert_eq!((lines[0].line, lines[0].text.as_str()), (2, "BUILD OK"));
        }
        other => panic!("output watch: {other:?}"),
    }
    match of(&fired, &exit.id) {
        Happened::Exited {
            exit_code,
            tail,
            command_text,
            command: n,
            ..
        } => {
            assert_eq!(*exit_code, 3);
            assert_eq!(*n, command);
            assert_eq!(command_text, "bash build.sh");
            assert!(tail.ends_with("BUILD OK\ndone"), "{tail:?}");
        }
        other => panic!("exit watch: {other:?}"),
    }
    let labels: Vec<_> = fired.iter().filter_map(|e| e.label.as_deref()).collect();
    assert!(labels.contains(&"the build to finish"), "{labels:?}");
    // Fired watches are done: nothing is left waiting, and a later poll sees nothing new.
    assert!(c.watches().await.unwrap().watches.is_empty());
    let last = fired.iter().map(|e| e.id).max().unwrap();
    let again = c.events(last, 0).await.unwrap();
    assert!(again.events.is_empty(), "{again:?}");
    // From the start, both are still there, in order, under the same boot.
    let all = c.events(0, 0).await.unwrap();
    assert_eq!(all.events.len(), 2);
    assert!(all.events[0].id < all.events[1].id);
    assert_eq!(all.boot, again.boot);
}

#[tokio::test]
async fn watches_on_finished_and_silent_commands_answer_at_once() {
    let d = daemon().await;
    let c = &d.client;
    c.exec(&ExecRequest::new("echo quiet; false").in_session("s"))
        .await
        .unwrap();
    let exit = c
        .create_watch(&watch(
            WatchSpec::Exit {
                session: "s".into(),
                command: None,
            },
            "done already",
        ))
        .await
        .unwrap();
    let output = c
        .create_watch(&watch(
            WatchSpec::Output {
                session: "s".into(),
                pattern: "^never$".into(),
                command: None,
            },
            "a line that never comes",
        ))
        .await
        .unwrap();
    let fired = events(c, 0, 2).await;
    assert!(
        matches!(of(&fired, &exit.id), Happened::Exited { exit_code: 1, .. }),
        "{fired:?}"
    );
    assert!(
        matches!(
            of(&fired, &output.id),
            Happened::EndedWithoutMatch { exit_code: 1, .. }
        ),
        "{fired:?}"
    );
    // Requests that cannot be watched are refused with what to fix.
    let cases = [
        (
            WatchSpec::Exit {
                session: "nope".into(),
                command: None,
            },
            ErrorCode::NotFound,
        ),
        (
            WatchSpec::Output {
                session: "s".into(),
                pattern: "(".into(),
                command: None,
            },
            ErrorCode::InvalidRequest,
        ),
        (
            WatchSpec::Exit {
                session: "s".into(),
                command: Some(99),
            },
            ErrorCode::InvalidRequest,
        ),
        (
            WatchSpec::File {
                path: "../outside".into(),
            },
            ErrorCode::PathOutsideWorkspace,
        ),
        (WatchSpec::After { seconds: 0 }, ErrorCode::InvalidRequest),
    ];
    for (spec, code) in cases {
        let e = c
            .create_watch(&watch(spec.clone(), "bad"))
            .await
            .expect_err("refused");
        assert_eq!(e.code(), Some(&code), "{spec:?}: {e}");
    }
}

#[tokio::test]
async fn a_port_watch_fires_when_a_real_server_listens() {
    let d = daemon().await;
    let c = &d.client;
    let port = free_port();
    let w = c
        .create_watch(&watch(WatchSpec::Port { port }, "the server"))
        .await
        .unwrap();
    // Nothing yet.
    assert!(c.events(0, 1).await.unwrap().events.is_empty());
    c.exec(
        &ExecRequest::new(format!("python3 -m http.server {port} --bind 127.0.0.1"))
            .in_session("server")
            .non_blocking(),
    )
    .await
    .unwrap();
    let fired = events(c, 0, 1).await;
    assert_eq!(of(&fired, &w.id), &Happened::Listening { port });
    // A port already listened on fires at once.
    let again = c
        .create_watch(&watch(WatchSpec::Port { port }, "still up"))
        .await
        .unwrap();
    let fired = events(c, fired[0].id, 1).await;
    assert_eq!(of(&fired, &again.id), &Happened::Listening { port });
}

#[tokio::test]
async fn file_watches_see_trees_files_and_paths_to_come() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::create_dir(d.path("out")).unwrap();
    std::fs::write(d.path("config.txt"), "one").unwrap();
    let tree = c
        .create_watch(&watch(WatchSpec::File { path: "out".into() }, "out"))
        .await
        .unwrap();
    let file = c
        .create_watch(&watch(
            WatchSpec::File {
                path: "config.txt".into(),
            },
            "config",
        ))
        .await
        .unwrap();
    let missing = c
        .create_watch(&watch(
            WatchSpec::File {
                path: "dist/deep/report.json".into(),
            },
            "the report",
        ))
        .await
        .unwrap();
    // Files into a folder made after the watch; a file replaced by a rename; a path whose
    // folders did not exist.
    let sh = "mkdir -p out/sub && echo a > out/sub/x.txt && echo b > out/y.txt \
        && echo two > config.tmp && mv config.tmp config.txt \
        && mkdir -p dist/deep && echo '{}' > dist/deep/report.json";
    let done = c.exec(&ExecRequest::new(sh)).await.unwrap();
    assert_eq!(done.exit_code, Some(0), "{}", done.output);
    let fired = events(c, 0, 3).await;
    match of(&fired, &tree.id) {
        Happened::Changed { paths, .. } => {
            for p in ["out/sub", "out/y.txt"] {
                assert!(paths.iter().any(|x| x == p), "{p} in {paths:?}");
            }
        }
        other => panic!("tree: {other:?}"),
    }
    assert_eq!(
        of(&fired, &file.id),
        &Happened::Changed {
            paths: vec!["config.txt".into()],
            more: 0
        }
    );
    assert_eq!(
        of(&fired, &missing.id),
        &Happened::Changed {
            paths: vec!["dist/deep/report.json".into()],
            more: 0
        }
    );
}

#[tokio::test]
async fn timers_lifetimes_and_deleted_watches() {
    let d = daemon().await;
    let c = &d.client;
    let timer = c
        .create_watch(&watch(WatchSpec::After { seconds: 1 }, "a second"))
        .await
        .unwrap();
    let short = c
        .create_watch(&CreateWatch {
            spec: WatchSpec::Port { port: free_port() },
            label: None,
            ttl_secs: Some(1),
        })
        .await
        .unwrap();
    let dropped = c
        .create_watch(&watch(WatchSpec::After { seconds: 1 }, "dropped"))
        .await
        .unwrap();
    assert_eq!(c.delete_watch(&dropped.id).await.unwrap().id, dropped.id);
    let e = c.delete_watch(&dropped.id).await.expect_err("gone");
    assert_eq!(e.code(), Some(&ErrorCode::NotFound));
    let fired = events(c, 0, 2).await;
    assert_eq!(of(&fired, &timer.id), &Happened::TimerDone { seconds: 1 });
    assert_eq!(of(&fired, &short.id), &Happened::Expired);
    // The deleted one never fires.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let all = c.events(0, 0).await.unwrap();
    assert!(all.events.iter().all(|e| e.watch != dropped.id), "{all:?}");
}
