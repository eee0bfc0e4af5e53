//! Forks against the real binary: a copy of the workspace that the whole API works on with
//! one header, changes that come back as a diff, and merges into the workspace: taken,
//! merged line by line, or refused as a conflict, never silently.

use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::ErrorCode;
use cove_protocol::checkpoints::Change;
use cove_protocol::client::CovedClient;
use cove_protocol::forks::CreateFork;
use cove_protocol::shell::ExecRequest;

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

async fn sh(c: &CovedClient, command: &str) -> String {
    let out = c
        .exec(&ExecRequest::new(command))
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    assert_eq!(out.exit_code, Some(0), "{command}: {}", out.output);
    out.output
}

const TEN: &str = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

#[tokio::test]
async fn a_fork_is_a_workspace_of_its_own_whose_changes_come_back() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::write(d.path("notes.txt"), TEN).unwrap();
    std::fs::create_dir(d.path("src")).unwrap();
    std::fs::write(d.path("src/keep.rs"), "fn main() {}\n").unwrap();
    let fork = c.create_fork(&CreateFork::default()).await.unwrap();
    assert_eq!(fork.files, 2);
    let f = c.for_fork(&fork.id).unwrap();
    // The fork's shell works in the copy: what it changes stays there.
    let pwd = sh(&f, "pwd").await;
    assert!(!pwd.contains(d.root().to_str().unwrap()), "{pwd}");
    sh(
        &f,
        "sed -i 's/^2$/two/' notes.txt && echo new > src/new.rs && rm src/keep.rs",
    )
    .await;
    assert_eq!(std::fs::read_to_string(d.path("notes.txt")).unwrap(), TEN);
    assert!(d.path("src/keep.rs").exists() && !d.path("src/new.rs").exists());
    // The files API works on the copy too.
    let listed = f.list(&Default::default()).await.unwrap();
    assert!(
        listed.entries.iter().any(|e| e.path.ends_with("notes.txt")),
        "{listed:?}"
    );
    let changes = c.fork_changes(&fork.id).await.unwrap();
    let got: Vec<(&str, Change)> = changes
        .changes
        .iter()
        .map(|p| (p.path.as_str(), p.change))
        .collect();
    assert_eq!(
        got,
        vec![
            ("notes.txt", Change::Changed),
            ("src/keep.rs", Change::Deleted),
            ("src/new.rs", Change::Added)
        ]
    );
    assert!(changes.changes[0].diff.as_deref().unwrap().contains("+two"));
    let applied = c.apply_fork(&fork.id).await.unwrap();
    assert_eq!(applied.applied.len(), 3, "{applied:?}");
    assert!(applied.conflicts.is_empty());
    assert_eq!(
        std::fs::read_to_string(d.path("notes.txt")).unwrap(),
        TEN.replace("2\n", "two\n")
    );
    assert!(!d.path("src/keep.rs").exists() && d.path("src/new.rs").exists());
    // Applied twice, nothing more happens.
    let again = c.apply_fork(&fork.id).await.unwrap();
    assert_eq!(again.unchanged.len(), 3, "{again:?}");
    assert_eq!(c.forks().await.unwrap().forks.len(), 1);
}

#[tokio::test]
async fn three_forks_editing_one_file_apply_two_and_refuse_the_third() {
    let d = daemon().await;
    let c = &d.client;
    std::fs::write(d.path("shared.txt"), TEN).unwrap();
    let mut forks = Vec::new();
    for _ in 0..3 {
        forks.push(c.create_fork(&CreateFork::default()).await.unwrap().id);
    }
    let edits = ["s/^1$/one/", "s/^9$/nine/", "s/^1$/uno/"];
    for (fork, edit) in forks.iter().zip(edits) {
        sh(
            &c.for_fork(fork).unwrap(),
            &format!("sed -i '{edit}' shared.txt"),
        )
        .await;
    }
    let first = c.apply_fork(&forks[0]).await.unwrap();
    assert_eq!(first.applied, vec!["shared.txt".to_string()]);
    let second = c.apply_fork(&forks[1]).await.unwrap();
    assert_eq!(second.merged, vec!["shared.txt".to_string()], "{second:?}");
    let third = c.apply_fork(&forks[2]).await.unwrap();
    assert_eq!(third.conflicts.len(), 1, "{third:?}");
    assert_eq!(third.conflicts[0].path, "shared.txt");
    assert!(
        third.conflicts[0].reason.contains("same lines"),
        "{third:?}"
    );
    // Both clean changes are in; the conflicting one was not merged.
    assert_eq!(
        std::fs::read_to_string(d.path("shared.txt")).unwrap(),
        TEN.replace("1\n2", "one\n2").replace("9\n", "nine\n")
    );
}

#[tokio::test]
async fn a_deleted_fork_leaves_nothing_running_and_is_gone() {
    let d = daemon().await;
    let c = &d.client;
    let fork = c.create_fork(&CreateFork::default()).await.unwrap();
    let f = c.for_fork(&fork.id).unwrap();
    f.exec(
        &ExecRequest::new("sleep 317")
            .in_session("long")
            .non_blocking(),
    )
    .await
    .unwrap();
    let sleeping = || !cove_harness::procs::matching("sleep 317").is_empty();
    for _ in 0..100 {
        if sleeping() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(sleeping(), "the fork's command runs");
    c.delete_fork(&fork.id).await.unwrap();
    assert!(!sleeping(), "the fork's command was killed with it");
    let e = f.sessions().await.expect_err("the fork is gone");
    assert_eq!(e.code(), Some(&ErrorCode::NotFound), "{e}");
    let e = c.delete_fork(&fork.id).await.expect_err("deleted once");
    assert_eq!(e.code(), Some(&ErrorCode::NotFound));
    assert!(c.forks().await.unwrap().forks.is_empty());
    // A fork cannot be forked.
    let fork = c.create_fork(&CreateFork::default()).await.unwrap();
    let e = c
        .for_fork(&fork.id)
        .unwrap()
        .create_fork(&CreateFork::default())
        .await
        .expect_err("nested");
    assert_eq!(e.code(), Some(&ErrorCode::InvalidRequest), "{e}");
}

#[tokio::test]
async fn a_fork_is_reached_only_with_the_daemons_token() {
    let d = daemon().await;
    let fork = d.client.create_fork(&CreateFork::default()).await.unwrap();
    let http = reqwest::Client::new();
    for token in [None, Some("not-the-token-0123456789abcdef0123456789")] {
        let mut request = http
            .post(format!("{}/v1/shell/exec", d.url))
            .header(cove_protocol::forks::FORK_HEADER, &fork.id)
            .json(&ExecRequest::new("touch reached"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{token:?}");
    }
    // Nothing ran in the fork.
    let f = d.client.for_fork(&fork.id).unwrap();
    let out = f.exec(&ExecRequest::new("ls reached")).await.unwrap();
    assert_ne!(out.exit_code, Some(0), "{}", out.output);
}

#[tokio::test]
async fn a_fork_outlives_its_daemon_and_is_taken_up_at_the_next_start() {
    let base = tempfile::tempdir().unwrap();
    let workspace = base.path().join("w");
    let store = base.path().join("store");
    let start = || {
        DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
            .workspace(&workspace)
            .arg("--checkpoints")
            .arg(&store)
            .spawn()
    };
    let d = start().await.unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), TEN).unwrap();
    let kept = d.client.create_fork(&CreateFork::default()).await.unwrap();
    let gone = d.client.create_fork(&CreateFork::default()).await.unwrap();
    sh(
        &d.client.for_fork(&kept.id).unwrap(),
        "sed -i 's/^3$/three/' notes.txt",
    )
    .await;
    d.client.delete_fork(&gone.id).await.unwrap();
    // A fork whose making was cut short (no record) is cleared at the next start.
    let half = store.join("forks").join("f000000000000");
    std::fs::create_dir_all(half.join("workspace")).unwrap();
    // Killed outright, as a controller's end takes a local sandbox down.
    d.stop_with(rustix::process::Signal::KILL).await.unwrap();

    let d = start().await.unwrap();
    let listed = d.client.forks().await.unwrap();
    assert_eq!(listed.forks, vec![kept.clone()], "only the fork still kept");
    assert!(!half.exists(), "the unfinished fork was left");
    // A second daemon over the same store meanwhile takes none of them up.
    let other = start().await.unwrap();
    assert!(other.client.forks().await.unwrap().forks.is_empty());
    other.terminate().await.unwrap();
    // It goes on where it was: its files, its changes, and its merge.
    let f = d.client.for_fork(&kept.id).unwrap();
    assert_eq!(sh(&f, "sed -n 3p notes.txt").await, "three\n");
    let changes = d.client.fork_changes(&kept.id).await.unwrap();
    assert_eq!(changes.changes.len(), 1, "{changes:?}");
    assert_eq!(changes.changes[0].path, "notes.txt");
    let applied = d.client.apply_fork(&kept.id).await.unwrap();
    assert!(applied.conflicts.is_empty(), "{applied:?}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        TEN.replace("3\n", "three\n")
    );
}
