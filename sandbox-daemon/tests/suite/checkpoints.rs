//! Checkpoints against the real binary: a workspace changed only through the shell comes back
//! exactly (every path, content, mode and link), diffs name what changed, restores wait for
//! running commands, `.coveignore` is kept out, archives move between daemons (and GNU tar
//! reads them; Python's tarfile writes the hostile ones), and a restore cut short by a kill
//! ends whole at the next start.

use std::collections::BTreeMap;

use cove_harness::tree::tree;
use cove_harness::{DaemonBuilder, DaemonProcess};
use cove_protocol::ErrorCode;
use cove_protocol::checkpoints::{
    Change, CheckpointCreated, CreateCheckpoint, DiffQuery, ImportQuery, RestoreRequest,
};
use cove_protocol::client::CovedClient;
use cove_protocol::shell::ExecRequest;

async fn daemon() -> DaemonProcess {
    DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts")
}

async fn sh(c: &CovedClient, command: &str) {
    let out = c
        .exec(&ExecRequest::new(command))
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    assert_eq!(out.exit_code, Some(0), "{command}: {}", out.output);
}

async fn checkpoint(c: &CovedClient, label: &str) -> CheckpointCreated {
    c.create_checkpoint(&CreateCheckpoint {
        label: Some(label.into()),
        keep: false,
    })
    .await
    .unwrap_or_else(|e| panic!("checkpoint {label}: {e}"))
}

async fn restore(c: &CovedClient, id: &str) -> cove_protocol::checkpoints::RestoreResponse {
    c.restore_checkpoint(id, &RestoreRequest::default())
        .await
        .unwrap_or_else(|e| panic!("restore {id}: {e}"))
}

/// Text, binary content, modes, links in and out, an empty folder, a read-only folder.
const FIRST: &str = "mkdir -p src/util empty ro docs && printf 'one\\ntwo\\nthree\\n' > src/a.txt \
    && printf 'helper\\n' > src/util/h.sh && chmod 755 src/util/h.sh \
    && printf 'secret\\n' > key && chmod 600 key && printf 'locked\\n' > none && chmod 000 none \
    && python3 -c 'open(\"blob.bin\",\"wb\").write(bytes(range(256))*40)' \
    && ln -s src/a.txt link && ln -s /etc/hostname outside && printf 'r\\n' > ro/r.txt \
    && chmod 555 ro && printf '# doc\\n' > docs/readme.md";

/// What an agent does through the shell: edit in place, delete a tree, move, rewrite a
/// binary, change modes and links, add folders.
const SECOND: &str = "sed -i 's/two/TWO/' src/a.txt && rm -rf src/util && mv docs/readme.md notes.md \
    && python3 -c 'open(\"blob.bin\",\"wb\").write(bytes(reversed(range(256)))*41)' \
    && chmod 700 key && chmod 644 none && ln -sfn notes.md link && mkdir -p new/deeper/empty \
    && chmod 755 ro && rm ro/r.txt && printf 'x' > ro/x";

#[tokio::test]
async fn a_workspace_changed_through_the_shell_comes_back_exactly() {
    let d = daemon().await;
    let c = &d.client;
    sh(c, FIRST).await;
    let first = checkpoint(c, "first").await;
    let t1 = tree(&d.workspace);
    assert_eq!(first.checkpoint.parent, None);
    assert_eq!(first.checkpoint.files, 7, "{first:?}");
    assert_eq!(first.checkpoint.symlinks, 2);
    assert!(first.bytes_added >= 10_240, "{first:?}");

    sh(c, SECOND).await;
    let second = checkpoint(c, "second").await;
    let t2 = tree(&d.workspace);
    assert_eq!(
        second.checkpoint.parent.as_deref(),
        Some(first.checkpoint.id.as_str())
    );
    assert!(second.changed >= 8, "{second:?}");

    sh(
        c,
        "rm -rf src new && printf 'later\\n' > later.txt && chmod 000 later.txt",
    )
    .await;
    let t3 = tree(&d.workspace);

    let back = restore(c, &first.checkpoint.id).await;
    assert_eq!(tree(&d.workspace), t1, "restored to the first checkpoint");
    assert!(back.written > 0 && back.removed > 0, "{back:?}");
    restore(c, &second.checkpoint.id).await;
    assert_eq!(tree(&d.workspace), t2, "restored to the second checkpoint");
    // The point just before the first restore is kept too: a restore can be undone.
    restore(c, &back.before).await;
    assert_eq!(tree(&d.workspace), t3, "back to before the restores");

    let again = checkpoint(c, "unchanged").await;
    assert_eq!(again.changed, 0, "{again:?}");
    assert_eq!(again.bytes_added, 0, "{again:?}");
    let list = c.checkpoints().await.unwrap();
    let labels: Vec<_> = list
        .checkpoints
        .iter()
        .map(|k| k.label.clone().unwrap_or_default())
        .collect();
    assert_eq!(labels[0], "first");
    assert!(
        labels.iter().any(|l| l.starts_with("before restoring")),
        "{labels:?}"
    );
    assert!(list.store_cap >= 1 << 30);
}

#[tokio::test]
async fn a_diff_names_what_changed_and_shows_text() {
    let d = daemon().await;
    let c = &d.client;
    sh(
        c,
        "printf 'alpha\\nbeta\\ngamma\\n' > a.txt && printf 'gone\\n' > old.txt && mkdir keep",
    )
    .await;
    let from = checkpoint(c, "from").await.checkpoint.id;
    sh(c, "sed -i 's/beta/BETA/' a.txt && rm old.txt && head -c 3000 /dev/urandom > r.bin && chmod 700 keep && mkdir fresh").await;
    let diff = c
        .checkpoint_diff(&from, &DiffQuery::default())
        .await
        .unwrap();
    assert_eq!(diff.to, "current");
    let by_path: BTreeMap<_, _> = diff.changes.iter().map(|p| (p.path.as_str(), p)).collect();
    let a = by_path["a.txt"];
    assert_eq!(a.change, Change::Changed);
    let text = a.diff.as_deref().unwrap();
    assert!(
        text.contains("-beta\n") && text.contains("+BETA\n"),
        "{text}"
    );
    assert_eq!(by_path["old.txt"].change, Change::Deleted);
    assert!(by_path["r.bin"].binary && by_path["r.bin"].diff.is_none());
    assert_eq!(by_path["keep"].mode_to.as_deref(), Some("0700"));
    assert_eq!(by_path["fresh"].change, Change::Added);
    assert_eq!(
        (diff.added, diff.changed, diff.deleted),
        (2, 2, 1),
        "{diff:?}"
    );
    // Between two checkpoints, and nothing between a point and itself.
    let to = checkpoint(c, "to").await.checkpoint.id;
    let between = c
        .checkpoint_diff(&from, &DiffQuery { to: to.clone() })
        .await
        .unwrap();
    assert_eq!(between.changes, diff.changes);
    let same = c.checkpoint_diff(&to, &DiffQuery::default()).await.unwrap();
    assert!(same.changes.is_empty(), "{same:?}");
}

#[tokio::test]
async fn a_restore_waits_for_running_commands_unless_asked_to_stop_them() {
    let d = daemon().await;
    let c = &d.client;
    sh(c, "echo 1 > f").await;
    let id = checkpoint(c, "one").await.checkpoint.id;
    let mut background = ExecRequest::new("sleep 60").in_session("worker");
    background.blocking = false;
    c.exec(&background).await.unwrap();
    let busy = c
        .restore_checkpoint(&id, &RestoreRequest::default())
        .await
        .unwrap_err();
    assert_eq!(busy.code(), Some(&ErrorCode::Busy));
    assert!(busy.to_string().contains("worker"), "{busy}");
    let done = c
        .restore_checkpoint(
            &id,
            &RestoreRequest {
                stop_commands: true,
            },
        )
        .await
        .unwrap();
    assert_eq!(done.stopped_sessions, ["worker"]);
    assert!(
        c.sessions()
            .await
            .unwrap()
            .sessions
            .iter()
            .all(|s| s.name != "worker")
    );
}

#[tokio::test]
async fn coveignore_leaves_paths_out_and_a_restore_leaves_them_alone() {
    let d = daemon().await;
    let c = &d.client;
    sh(c, "printf 'cache/\\n*.log\\n' > .coveignore && mkdir cache && echo v1 > cache/big && echo a > run.log && echo src > main.rs").await;
    let first = checkpoint(c, "first").await;
    assert_eq!(first.ignored, ["cache/", "*.log"]);
    assert_eq!(
        first.checkpoint.files, 2,
        "only .coveignore and main.rs: {first:?}"
    );
    sh(
        c,
        "echo v2 > cache/big && echo b > run.log && echo changed > main.rs",
    )
    .await;
    restore(c, &first.checkpoint.id).await;
    let root = &d.workspace;
    assert_eq!(
        std::fs::read_to_string(root.join("main.rs")).unwrap(),
        "src\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("cache/big")).unwrap(),
        "v2\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("run.log")).unwrap(),
        "b\n"
    );
    assert_eq!(c.checkpoints().await.unwrap().ignored, ["cache/", "*.log"]);
}

#[tokio::test]
async fn an_archive_moves_a_checkpoint_to_another_daemon() {
    let a = daemon().await;
    sh(&a.client, FIRST).await;
    sh(&a.client, "rm outside").await; // a link out of the workspace is not taken in
    let id = checkpoint(&a.client, "to move").await.checkpoint.id;
    let tar = a
        .client
        .checkpoint_archive(&id)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    // GNU tar reads it.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &tar).unwrap();
    let listed = std::process::Command::new("tar")
        .arg("-tvf")
        .arg(file.path())
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listing.contains("src/util/h.sh") && listing.contains("link -> src/a.txt"),
        "{listing}"
    );

    let b = daemon().await;
    let imported = b
        .client
        .import_checkpoint(
            &ImportQuery {
                label: Some("moved".into()),
            },
            tar.to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(imported.checkpoint.files, 7);
    assert!(
        tree(&b.workspace).is_empty(),
        "an import does not touch the workspace"
    );
    restore(&b.client, &imported.checkpoint.id).await;
    assert_eq!(tree(&b.workspace), tree(&a.workspace));

    // And a tar GNU tar wrote is taken as well.
    let made = tempfile::NamedTempFile::new().unwrap();
    let status = std::process::Command::new("tar")
        .arg("-cf")
        .arg(made.path())
        .arg("-C")
        .arg(&a.workspace)
        .arg("src")
        .status()
        .unwrap();
    assert!(status.success());
    let gnu = b
        .client
        .import_checkpoint(&ImportQuery::default(), std::fs::read(made.path()).unwrap())
        .await
        .unwrap();
    restore(&b.client, &gnu.checkpoint.id).await;
    assert_eq!(
        std::fs::read(b.workspace.join("src/a.txt")).unwrap(),
        std::fs::read(a.workspace.join("src/a.txt")).unwrap()
    );
    assert!(!b.workspace.join("key").exists());
}

/// A tar written by Python's tarfile with one hostile entry.
fn hostile_tar(entry: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.tar");
    let script = format!(
        "import io, tarfile\n\
         t = tarfile.open({out:?}, 'w')\n\
         def add(name, data=b'x', kind=tarfile.REGTYPE, link=''):\n\
         \x20   i = tarfile.TarInfo(name); i.type = kind; i.linkname = link; i.size = len(data) if kind == tarfile.REGTYPE else 0\n\
         \x20   t.addfile(i, io.BytesIO(data) if kind == tarfile.REGTYPE else None)\n\
         add('fine.txt')\n\
         {entry}\n\
         t.close()\n",
        out = out.to_string_lossy()
    );
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(out).unwrap()
}

#[tokio::test]
async fn hostile_archives_and_bad_ids_are_refused_and_change_nothing() {
    let d = daemon().await;
    let c = &d.client;
    sh(c, "echo keep > mine").await;
    let before = tree(&d.workspace);
    for entry in [
        "add('../escape.txt')",
        "add('/etc/evil')",
        "add('a/../../up')",
        "add('out', kind=tarfile.SYMTYPE, link='/etc')",
        "add('climb', kind=tarfile.SYMTYPE, link='../../x')",
        "add('l', kind=tarfile.SYMTYPE, link='fine.txt'); add('l/inside')",
        "add('dev', kind=tarfile.CHRTYPE)",
    ] {
        let refused = c
            .import_checkpoint(&ImportQuery::default(), hostile_tar(entry))
            .await
            .unwrap_err();
        assert_eq!(
            refused.code(),
            Some(&ErrorCode::InvalidArchive),
            "{entry}: {refused}"
        );
    }
    let garbage = c
        .import_checkpoint(&ImportQuery::default(), b"not a tar at all".repeat(100))
        .await
        .unwrap_err();
    assert_eq!(
        garbage.code(),
        Some(&ErrorCode::InvalidArchive),
        "{garbage}"
    );
    assert!(c.checkpoints().await.unwrap().checkpoints.is_empty());
    assert_eq!(tree(&d.workspace), before);

    for (id, code) in [
        ("nope", ErrorCode::InvalidRequest),
        ("c999", ErrorCode::NotFound),
    ] {
        let e = c
            .checkpoint_diff(id, &DiffQuery::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(&code), "{id}: {e}");
        let e = c
            .restore_checkpoint(id, &RestoreRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(&code), "{id}: {e}");
        let e = c.checkpoint_archive(id).await.unwrap_err();
        assert_eq!(e.code(), Some(&code), "{id}: {e}");
    }
    let id = checkpoint(c, "one").await.checkpoint.id;
    let e = c
        .checkpoint_diff(&id, &DiffQuery { to: "c0x".into() })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&ErrorCode::InvalidRequest), "{e}");
}

/// Many files, so a restore has many steps to be cut between.
const MANY: &str = "mkdir -p d && for i in $(seq 1 300); do echo \"v1 $i\" > d/f$i; done";

#[tokio::test]
async fn a_restore_cut_short_by_a_kill_is_finished_at_the_next_start() {
    let base = tempfile::tempdir().unwrap();
    let workspace = base.path().join("w");
    let store = base.path().join("store");
    let start = |fault: Option<&str>| {
        let mut b = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
            .workspace(&workspace)
            .arg("--checkpoints")
            .arg(&store);
        if let Some(fault) = fault {
            b = b.env("COVED_TEST_FAULT", fault);
        }
        b.spawn()
    };
    let d = start(Some("restore-kill-after:100")).await.unwrap();
    sh(&d.client, MANY).await;
    let target = checkpoint(&d.client, "v1").await.checkpoint.id;
    let t1 = tree(&workspace);
    sh(
        &d.client,
        "for i in $(seq 1 300); do echo \"v2 $i\" > d/f$i; done; echo new > d/zz",
    )
    .await;
    let cut = d
        .client
        .restore_checkpoint(&target, &RestoreRequest::default())
        .await;
    assert!(cut.is_err(), "the daemon was to die midway: {cut:?}");
    let midway = tree(&workspace);
    assert_ne!(midway, t1, "killed before the restore was done");
    assert!(store.join("restore.json").exists(), "the journal is left");
    drop(d);

    let d = start(None).await.unwrap();
    assert!(!store.join("restore.json").exists());
    assert_eq!(tree(&workspace), t1, "finished at the start");
    assert!(
        d.stderr().contains("restore was cut short"),
        "{}",
        d.stderr()
    );
    // The store still reads: a diff, a checkpoint and another restore work.
    let list = d.client.checkpoints().await.unwrap();
    assert!(list.checkpoints.len() >= 2);
    let diff = d
        .client
        .checkpoint_diff(&target, &DiffQuery::default())
        .await
        .unwrap();
    assert!(diff.changes.is_empty(), "{diff:?}");
    let before = list
        .checkpoints
        .iter()
        .find(|k| k.label.as_deref().is_some_and(|l| l.starts_with("before")))
        .unwrap()
        .id
        .clone();
    restore(&d.client, &before).await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("d/f7")).unwrap(),
        "v2 7\n"
    );
}

#[tokio::test]
async fn a_restore_that_fails_midway_puts_the_workspace_back() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .env("COVED_TEST_FAULT", "restore-fail-after:50")
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    sh(c, MANY).await;
    let target = checkpoint(c, "v1").await.checkpoint.id;
    sh(
        c,
        "for i in $(seq 1 300); do echo \"v2 $i\" > d/f$i; done; chmod 700 d/f9",
    )
    .await;
    let now = tree(&d.workspace);
    let failed = c
        .restore_checkpoint(&target, &RestoreRequest::default())
        .await
        .unwrap_err();
    assert_eq!(failed.code(), Some(&ErrorCode::Internal), "{failed}");
    assert!(failed.to_string().contains("put back"), "{failed}");
    assert_eq!(tree(&d.workspace), now, "the workspace is as it was");
    // The fault is spent: the same restore now goes through.
    restore(c, &target).await;
    assert_eq!(
        std::fs::read_to_string(d.workspace.join("d/f9")).unwrap(),
        "v1 9\n"
    );
}

#[tokio::test]
async fn the_store_stays_under_its_cap_by_dropping_the_oldest_checkpoints_not_kept() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .arg("--checkpoint-cap")
        .arg("350000")
        .spawn()
        .await
        .expect("coved starts");
    let c = &d.client;
    sh(c, "head -c 100000 /dev/urandom > a && cp a first").await;
    let kept = c
        .create_checkpoint(&CreateCheckpoint {
            label: Some("kept".into()),
            keep: true,
        })
        .await
        .unwrap();
    let mut made = Vec::new();
    let mut dropped = Vec::new();
    for round in 0..5 {
        sh(c, "head -c 100000 /dev/urandom > a").await;
        let next = checkpoint(c, &format!("round {round}")).await;
        dropped.extend(next.dropped.clone());
        made.push(next.checkpoint.id);
    }
    let list = c.checkpoints().await.unwrap();
    assert_eq!(list.store_cap, 350_000);
    assert!(list.store_bytes <= 350_000, "{list:?}");
    // The oldest went first; the kept one and the newest never.
    assert_eq!(dropped[..2], made[..2], "{dropped:?} of {made:?}");
    let ids: Vec<&str> = list.checkpoints.iter().map(|k| k.id.as_str()).collect();
    assert!(ids.contains(&kept.checkpoint.id.as_str()), "{ids:?}");
    assert!(ids.contains(&made[4].as_str()), "{ids:?}");
    assert!(dropped.iter().all(|gone| !ids.contains(&gone.as_str())));
    let gone = c
        .checkpoint_diff(&dropped[0], &DiffQuery::default())
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Some(&ErrorCode::NotFound), "{gone}");
    // What the kept one holds survived the collection.
    restore(c, &kept.checkpoint.id).await;
    assert_eq!(
        std::fs::read(d.workspace.join("a")).unwrap(),
        std::fs::read(d.workspace.join("first")).unwrap()
    );
}
