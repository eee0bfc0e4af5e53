//! Snapshots of whole Docker sandboxes on the real engine: a file installed outside the
//! workspace (in the agent's home, as `pip install --user` does) and one in it are both in
//! a snapshot and in a sandbox made from it, which gets a token of its own (the snapshot
//! holds none); a snapshot is refused while a command runs unless forced; a fork goes on
//! apart from its original; a snapshot in use is not removed.

use std::time::Duration;

use cove_harness::llm::Wire;
use serde_json::Value;

use super::real_docker::{IMAGE, Leftover, docker, on_engine};
use super::{Cove, events, explain};

#[tokio::test]
async fn a_snapshot_holds_the_whole_filesystem_and_a_fork_goes_on_apart() {
    let _turn = super::real_docker::one_at_a_time().await;
    let present = docker(&["image", "inspect", IMAGE]);
    assert!(
        present.status.success(),
        "no {IMAGE} on a running Docker engine: run sandbox-image/build-test-image.sh"
    );
    let cove = Cove::new(Wire::OpenAi).await;
    let id = std::process::id();
    let (a, b, c) = (
        format!("snap-a-{id}"),
        format!("snap-b-{id}"),
        format!("snap-c-{id}"),
    );
    let _leftovers = [&a, &b, &c].map(|n| Leftover(format!("cove-{n}")));
    let ok = |out: std::process::Output| {
        assert!(out.status.success(), "{}", explain(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };

    ok(on_engine(&cove, &["sandbox", "create", &a, "--image", IMAGE]).await);
    ok(on_engine(&cove, &[
        "exec",
        "--sandbox",
        &a,
        "mkdir -p ~/.local/share/tool && echo v1 > ~/.local/share/tool/version && echo notes > /workspace/notes.txt",
    ])
    .await);

    // While a command runs in one of its shells, a snapshot is refused.
    let busy_args = ["exec", "--sandbox", &a, "--session", "build", "sleep 4"];
    let busy = on_engine(&cove, &busy_args);
    let refused = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        on_engine(&cove, &["sandbox", "snapshot", &a]).await
    };
    let (_, refused) = tokio::join!(busy, refused);
    assert!(!refused.status.success(), "{}", explain(&refused));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("session build runs `sleep 4`") && said.contains("--force"),
        "{said}"
    );

    let taken = events(
        &on_engine(
            &cove,
            &["--json", "sandbox", "snapshot", &a, "--tag", "one"],
        )
        .await,
    );
    let reference = taken[0]["snapshot"].as_str().unwrap().to_string();
    let listed = ok(on_engine(&cove, &["sandbox", "snapshots"]).await);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&reference) && l.contains(&a)),
        "{listed}"
    );
    // The snapshot holds no token.
    let env = docker(&["image", "inspect", "-f", "{{json .Config.Env}}", &reference]);
    let env: Vec<String> = serde_json::from_slice(&env.stdout).unwrap();
    assert!(env.contains(&"COVE_TOKEN=".to_string()), "{env:?}");

    // A sandbox made from it has both files, and a token of its own.
    ok(on_engine(&cove, &["sandbox", "create", &b, "--from", &reference]).await);
    let read = ok(on_engine(
        &cove,
        &[
            "exec",
            "--sandbox",
            &b,
            "cat ~/.local/share/tool/version /workspace/notes.txt",
        ],
    )
    .await);
    assert!(read.contains("v1\nnotes"), "{read}");
    let tokens = |name: &str| -> String {
        let listed = docker(&[
            "inspect",
            "-f",
            "{{json .Config.Env}}",
            &format!("cove-{name}"),
        ]);
        let env: Vec<String> = serde_json::from_slice(&listed.stdout).unwrap();
        env.into_iter()
            .find(|e| e.starts_with("COVE_TOKEN="))
            .unwrap_or_default()
    };
    assert_ne!(tokens(&a), tokens(&b));

    // A fork in one step goes on apart from its original.
    ok(on_engine(&cove, &["sandbox", "fork", &a, &c]).await);
    ok(on_engine(
        &cove,
        &[
            "exec",
            "--sandbox",
            &c,
            "echo v2 > ~/.local/share/tool/version",
        ],
    )
    .await);
    let original = ok(on_engine(
        &cove,
        &["exec", "--sandbox", &a, "cat ~/.local/share/tool/version"],
    )
    .await);
    let forked = ok(on_engine(
        &cove,
        &["exec", "--sandbox", &c, "cat ~/.local/share/tool/version"],
    )
    .await);
    assert_eq!((original.as_str(), forked.as_str()), ("v1", "v2"));

    // A snapshot a sandbox is made from stays; once that sandbox is gone, it goes.
    let in_use = on_engine(&cove, &["sandbox", "rm-snapshot", &reference]).await;
    assert!(!in_use.status.success(), "{}", explain(&in_use));
    for name in [&a, &b, &c] {
        ok(on_engine(&cove, &["sandbox", "rm", name]).await);
    }
    ok(on_engine(&cove, &["sandbox", "rm-snapshot", &reference]).await);
    let left: Vec<Value> = events(&on_engine(&cove, &["--json", "sandbox", "snapshots"]).await)
        .into_iter()
        .filter(|s| s["of"].as_str() == Some(a.as_str()) && s["reference"] == reference.as_str())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The fork's own snapshot goes with a removal of its own.
    for s in events(&on_engine(&cove, &["--json", "sandbox", "snapshots"]).await) {
        if s["of"].as_str() == Some(a.as_str()) {
            ok(on_engine(
                &cove,
                &["sandbox", "rm-snapshot", s["reference"].as_str().unwrap()],
            )
            .await);
        }
    }
}

#[tokio::test]
async fn gc_lists_what_this_cove_made_and_forgot_and_removes_it_with_yes() {
    let _turn = super::real_docker::one_at_a_time().await;
    let cove = Cove::new(Wire::OpenAi).await;
    let id = std::process::id();
    let (kept, forgotten) = (format!("gc-kept-{id}"), format!("gc-gone-{id}"));
    let _leftovers = [&kept, &forgotten].map(|n| Leftover(format!("cove-{n}")));
    let ok = |out: std::process::Output| {
        assert!(out.status.success(), "{}", explain(&out));
        out
    };
    ok(on_engine(&cove, &["sandbox", "create", &kept, "--image", IMAGE]).await);
    ok(on_engine(&cove, &["sandbox", "create", &forgotten, "--image", IMAGE]).await);
    ok(on_engine(&cove, &["sandbox", "snapshot", &forgotten, "--tag", "old"]).await);
    // Forgotten: its row leaves the database, as a removed database would.
    let db = cove.home.path().join("cove.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("DELETE FROM sandboxes WHERE name = ?1", [&forgotten])
        .unwrap();
    drop(conn);
    // Another installation's container on the same engine is never listed.
    let theirs = format!("cove-theirs-{id}");
    let _theirs = Leftover(theirs.clone());
    let made = docker(&[
        "create",
        "--name",
        &theirs,
        "--label",
        &format!("cove.sandbox=theirs-{id}"),
        "--label",
        "cove.installation=another-users",
        IMAGE,
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );

    // Made moments ago, they are left alone by default: a create may be under way.
    let young = events(&ok(on_engine(&cove, &["--json", "sandbox", "gc"]).await));
    assert!(young.iter().all(|r| r["kind"] == "snapshot"), "{young:?}");
    let listed = events(&ok(on_engine(
        &cove,
        &["--json", "sandbox", "gc", "--min-age", "0s"],
    )
    .await));
    let mut kinds: Vec<(String, String)> = listed
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    kinds.sort();
    let repo = format!("cove-snapshot/{forgotten}:old");
    assert_eq!(
        kinds,
        [
            ("container".to_string(), format!("cove-{forgotten}")),
            ("network".to_string(), format!("cove-{forgotten}")),
            ("snapshot".to_string(), repo.clone()),
        ],
        "{listed:?}"
    );
    let still = docker(&["inspect", "-f", "{{.Name}}", &format!("cove-{forgotten}")]);
    assert!(still.status.success(), "a dry run removed something");

    ok(on_engine(&cove, &["sandbox", "gc", "--yes", "--min-age", "0s"]).await);
    for gone in [
        vec!["inspect", &format!("cove-{forgotten}")],
        vec!["network", "inspect", &format!("cove-{forgotten}")],
        vec!["image", "inspect", &repo],
    ] {
        let args: Vec<&str> = gone.iter().map(|s| s.as_ref()).collect();
        assert!(!docker(&args).status.success(), "{args:?} is still there");
    }
    assert!(
        docker(&["inspect", &format!("cove-{kept}")])
            .status
            .success()
    );
    assert!(
        docker(&["inspect", &theirs]).status.success(),
        "another installation's"
    );
    assert!(
        events(&ok(on_engine(
            &cove,
            &["--json", "sandbox", "gc", "--min-age", "0s"]
        )
        .await))
        .is_empty()
    );
    ok(on_engine(&cove, &["sandbox", "rm", &kept]).await);
}
