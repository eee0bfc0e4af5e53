//! A warm pool on the real Docker engine: it fills to its size; three sandboxes taken at
//! once get three different members, each with a token of its own that its container's
//! environment does not hold (the one there is dead); a member started again takes its own
//! token back at its next use; the pool refills behind what was taken; a served thread
//! that names the pool takes one, which goes with the thread; drained, nothing is left.

use std::time::{Duration, Instant};

use cove_harness::Turn;
use cove_harness::llm::Wire;
use cove_protocol::ErrorCode;
use cove_protocol::client::{ClientError, CovedClient};
use serde_json::{Value, json};

use super::real_docker::{IMAGE, docker, on_engine, on_engine_ok};
use super::serve::Server;
use super::{Cove, explain};

/// The rows a `--json` list prints, a line each.
fn rows_of(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {}", explain(out))))
        .collect()
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("not JSON: {}", explain(out)))
}

/// The containers this test's installation made, by name.
fn containers(installation: &str) -> Vec<String> {
    let out = docker(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=cove.installation={installation}"),
        "--format",
        "{{.Names}}",
    ]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Removes what the test's installation made however it ends, its pools' refills (which
/// outlive the commands that start them) stopped first.
struct Tidy {
    installation: String,
    db: std::path::PathBuf,
}

impl Drop for Tidy {
    fn drop(&mut self) {
        let _ = std::process::Command::new("pkill")
            .arg("-f")
            .arg(format!("{} sandbox pool fill", self.db.display()))
            .status();
        // A container the engine was making as its refill stopped comes a moment later.
        for round in 0..2 {
            if round == 1 {
                std::thread::sleep(std::time::Duration::from_secs(3));
            }
            for name in containers(&self.installation) {
                let _ = docker(&["rm", "-f", &name]);
            }
        }
        let out = docker(&[
            "network",
            "ls",
            "--filter",
            &format!("label=cove.installation={}", self.installation),
            "--format",
            "{{.Name}}",
        ]);
        for network in String::from_utf8_lossy(&out.stdout).lines() {
            let _ = docker(&["network", "rm", network]);
        }
    }
}

/// Waits up to `limit` for `cove sandbox pool ls` to show pool `pool` with `ready` ready.
async fn until_ready(cove: &Cove, pool: &str, ready: u64, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let listed = rows_of(&on_engine_ok(cove, &["--json", "sandbox", "pool", "ls"]).await);
        let row = listed
            .iter()
            .find(|r| r["pool"] == pool)
            .cloned()
            .unwrap_or_default();
        if row["ready"] == ready {
            return row;
        }
        assert!(
            started.elapsed() < limit,
            "pool {pool} did not get {ready} ready in {limit:?}: {row}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// (own token, boot token, the member it was made as) of sandbox `name`, from the database.
fn tokens_of(cove: &Cove, name: &str) -> (String, String, String) {
    let conn = rusqlite::Connection::open(cove.home.path().join("cove.db")).unwrap();
    conn.query_row(
        "SELECT token, boot_token, made_as FROM sandboxes WHERE name = ?1",
        [name],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

async fn refused(url: &str, token: &str) -> bool {
    matches!(
        CovedClient::new(url, token).unwrap().info().await,
        Err(ClientError::Api {
            code: ErrorCode::Unauthorized,
            ..
        })
    )
}

#[tokio::test]
async fn a_pool_hands_each_sandbox_to_one_taker_with_its_own_token_and_refills() {
    let _turn = super::real_docker::one_at_a_time().await;
    let present = docker(&["image", "inspect", IMAGE]);
    assert!(
        present.status.success(),
        "no {IMAGE} on a running Docker engine: run sandbox-image/build-test-image.sh"
    );
    let cove = Cove::new(Wire::OpenAi).await;
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        format!("[pools.p3]\nsize = 3\nimage = \"{IMAGE}\"\n[sandbox_limits]\nmemory = \"1g\"\n"),
    )
    .unwrap();
    // A pool that names no image Docker has says so, and why, in one line.
    let bad = cove.home.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[pools.nope]\nsize = 1\nimage = \"cove-no-such-image:1\"\n",
    )
    .unwrap();
    let mut cmd = cove.command(&["sandbox", "pool", "fill", "nope"]);
    cmd.env("COVE_CONFIG", &bad)
        .env_remove("DOCKER_HOST")
        .env_remove("DOCKER_TLS_VERIFY")
        .env_remove("DOCKER_CERT_PATH");
    let out = cmd.output().await.unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", explain(&out));
    assert!(
        said.contains("pool nope cannot fill") && said.contains("cove-no-such-image:1"),
        "{said}"
    );

    // A disk limit: applied where the engine's storage can (then `ls` shows it), else
    // refused in one line with nothing of the sandbox left behind (this machine's vfs over
    // a filesystem without quotas).
    let disk = on_engine(
        &cove,
        &["sandbox", "create", "dl", "--image", IMAGE, "--disk", "1g"],
    )
    .await;
    if disk.status.success() {
        let listed = rows_of(&on_engine_ok(&cove, &["--json", "sandbox", "ls"]).await);
        let row = listed.iter().find(|r| r["name"] == "dl").unwrap();
        assert_eq!(row["limits"]["disk_bytes"], 1 << 30, "{row}");
        on_engine_ok(&cove, &["sandbox", "rm", "dl"]).await;
    } else {
        let said = String::from_utf8_lossy(&disk.stderr);
        let error = said.trim().lines().last().unwrap_or_default();
        assert!(
            error.contains("cannot limit a sandbox's disk") && error.contains("remove `disk`"),
            "{said}"
        );
        let networks = docker(&["network", "ls", "--format", "{{.Name}}"]);
        assert!(
            !String::from_utf8_lossy(&networks.stdout)
                .lines()
                .any(|n| n == "cove-dl"),
            "the failed sandbox's network is left"
        );
    }

    let filled = json_of(&on_engine_ok(&cove, &["--json", "sandbox", "pool", "fill", "p3"]).await);
    assert_eq!(filled["ready"], 3, "{filled}");
    assert_eq!(filled["made"], 3, "{filled}");
    let conn = rusqlite::Connection::open(cove.home.path().join("cove.db")).unwrap();
    let installation: String = conn
        .query_row(
            "SELECT value FROM settings WHERE key = 'installation'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let _tidy = Tidy {
        installation: installation.clone(),
        db: cove.home.path().join("cove.db"),
    };
    assert_eq!(containers(&installation).len(), 3);

    // Three takers at once: three members, one each.
    let takers = (0..3).map(|n| {
        let cove = &cove;
        async move {
            let name = format!("t{n}");
            json_of(
                &on_engine_ok(
                    cove,
                    &["--json", "sandbox", "create", &name, "--pool", "p3"],
                )
                .await,
            )
        }
    });
    let taken = futures_util::future::join_all(takers).await;
    let mut members: Vec<String> = taken
        .iter()
        .map(|t| t["from"].as_str().unwrap().to_string())
        .collect();
    members.sort();
    members.dedup();
    assert_eq!(members.len(), 3, "{taken:?}");
    let mut own_tokens = Vec::new();
    for (n, took) in taken.iter().enumerate() {
        let name = format!("t{n}");
        let (own, boot, made_as) = tokens_of(&cove, &name);
        assert_eq!(Some(made_as.as_str()), took["from"].as_str());
        let url = took["url"].as_str().unwrap();
        // Its own token works; the one its container started with is dead.
        assert!(!refused(url, &own).await, "{name}: own token refused");
        assert!(
            refused(url, &boot).await,
            "{name}: its boot token still works"
        );
        own_tokens.push(own);
    }
    own_tokens.sort();
    own_tokens.dedup();
    assert_eq!(own_tokens.len(), 3, "a token was shared");

    // gc lists a sandbox no thread uses once it has been stopped long enough, and only then.
    on_engine_ok(&cove, &["sandbox", "stop", "t1"]).await;
    let listed =
        rows_of(&on_engine_ok(&cove, &["--json", "sandbox", "gc", "--stopped-for", "1h"]).await);
    assert!(listed.is_empty(), "{listed:?}");
    let listed =
        rows_of(&on_engine_ok(&cove, &["--json", "sandbox", "gc", "--stopped-for", "0s"]).await);
    let names: Vec<&str> = listed.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["t1"], "{listed:?}");
    assert_eq!(listed[0]["kind"], "sandbox");
    on_engine_ok(&cove, &["sandbox", "start", "t1"]).await;

    // What the agent can read in its sandbox holds no live token: the container's first
    // process shows the dead boot token, coved's own environment is closed to it.
    let (own, boot, member) = tokens_of(&cove, "t0");
    let seen = on_engine_ok(
        &cove,
        &[
            "exec",
            "--sandbox",
            "t0",
            "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep COVE_TOKEN= | sort -u; tr '\\0' '\\n' < /proc/$(pgrep -xo coved)/environ >/dev/null 2>&1 && echo COVED-READABLE; echo DONE",
        ],
    )
    .await;
    let seen = String::from_utf8_lossy(&seen.stdout).into_owned();
    assert!(seen.contains("DONE"), "{seen}");
    assert!(!seen.contains("COVED-READABLE"), "{seen}");
    assert!(!seen.contains(&own), "the live token is readable:\n{seen}");
    assert!(seen.contains(&format!("COVE_TOKEN={boot}")), "{seen}");

    // Started again, the member's daemon takes its boot token; its next use gives it its own.
    let restarted = docker(&["restart", "-t", "1", &format!("cove-{member}")]);
    assert!(restarted.status.success());
    let again = on_engine_ok(&cove, &["exec", "--sandbox", "t0", "echo again"]).await;
    assert!(String::from_utf8_lossy(&again.stdout).contains("again"));
    let url = taken[0]["url"].as_str().unwrap().to_string();
    let url = rows_of(&on_engine_ok(&cove, &["--json", "sandbox", "ls"]).await)
        .into_iter()
        .find(|r| r["name"] == "t0")
        .and_then(|r| r["url"].as_str().map(str::to_string))
        .unwrap_or(url);
    assert!(refused(&url, &boot).await, "the boot token works again");
    assert!(!refused(&url, &own).await);

    // The pool refills behind the three taken, by itself.
    let row = until_ready(&cove, "p3", 3, Duration::from_secs(400)).await;
    let refilled: Vec<&str> = row["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(
        refilled.iter().all(|m| !members.iter().any(|t| t == m)),
        "a member taken is offered again: {row}"
    );
    // The takers go now: the engine here copies the image whole for each container.
    for n in 0..3 {
        on_engine_ok(&cove, &["sandbox", "rm", &format!("t{n}")]).await;
    }

    // A served thread that names the pool takes one, which goes with the thread.
    cove.llm
        .push(Turn::text("").call("execute_command", json!({"command": "hostname"})));
    cove.llm
        .push(Turn::text("").call("complete", json!({"text": "looked"})));
    let mut cmd = cove.command(&[
        "--json",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--sandbox",
        "pool:p3",
    ]);
    cmd.env_remove("DOCKER_HOST")
        .env_remove("DOCKER_TLS_VERIFY")
        .env_remove("DOCKER_CERT_PATH");
    let server = Server::from_child(cmd.spawn().unwrap()).await;
    let thread = server
        .create(json!({"task": "Look around", "model": "openai/scripted"}))
        .await;
    let mut sse = server.stream(&thread, None).await;
    let events = sse.until("thread_run_end").await;
    let (_, view) = server.get(&format!("/v1/threads/{thread}")).await;
    let label = view["sandbox"].as_str().unwrap().to_string();
    let name = label
        .strip_prefix("docker:")
        .expect("a Docker sandbox")
        .to_string();
    let (_, _, served_member) = tokens_of(&cove, &name);
    // A sandbox a thread uses is never gc's, however long it has been stopped.
    on_engine_ok(&cove, &["sandbox", "stop", &name]).await;
    let listed =
        rows_of(&on_engine_ok(&cove, &["--json", "sandbox", "gc", "--stopped-for", "0s"]).await);
    assert!(
        listed.iter().all(|r| r["name"] != name.as_str()),
        "{listed:?}"
    );
    assert!(served_member.starts_with("pool-p3-"), "{served_member}");
    let hostname = docker(&[
        "inspect",
        "-f",
        "{{.Config.Hostname}}",
        &format!("cove-{served_member}"),
    ]);
    let hostname = String::from_utf8_lossy(&hostname.stdout).trim().to_string();
    assert!(!hostname.is_empty());
    assert!(
        events.iter().any(|(_, e)| e["type"] == "tool_completed"
            && e["output"].as_str().is_some_and(|o| o.contains(&hostname))),
        "the command did not run in the pooled sandbox {hostname}: {events:?}"
    );
    let mut deleted = server
        .raw(reqwest::Method::DELETE, &format!("/v1/threads/{thread}"))
        .await;
    for _ in 0..50 {
        if deleted.status() != 409 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        deleted = server
            .raw(reqwest::Method::DELETE, &format!("/v1/threads/{thread}"))
            .await;
    }
    assert_eq!(deleted.status(), 200);
    server.kill().await;
    assert!(
        !containers(&installation).contains(&format!("cove-{served_member}")),
        "the deleted thread's pooled sandbox is still there"
    );
    let listed = rows_of(&on_engine_ok(&cove, &["--json", "sandbox", "ls"]).await);
    assert!(
        !listed.iter().any(|r| r["name"] == name),
        "the deleted thread's sandbox is still listed: {listed:?}"
    );

    // Taken out of cove.toml (so no refill under way makes more), drained, the takers
    // removed: nothing of the pool is left.
    std::fs::write(config.join("cove.toml"), "").unwrap();
    let drained =
        json_of(&on_engine_ok(&cove, &["--json", "sandbox", "pool", "drain", "p3"]).await);
    assert!(drained["removed"].as_u64().unwrap() >= 2, "{drained}");
    assert_eq!(containers(&installation), Vec::<String>::new());
    let gc = rows_of(&on_engine_ok(&cove, &["--json", "sandbox", "gc"]).await);
    assert!(gc.is_empty(), "gc finds leftovers: {gc:?}");
}

/// A refill reads its pool from cove.toml once its turn comes: one started before the pool
/// was taken out of cove.toml (and drained) makes nothing when it gets the pool's lock
/// afterwards. (It read the cove.toml of its start, and refilled a drained pool behind
/// `drain`; no engine is reached here, none is needed.)
#[tokio::test]
async fn a_refill_waiting_while_its_pool_is_removed_makes_nothing() {
    let cove = Cove::new(Wire::OpenAi).await;
    let config = cove.home.path().join("config/cove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("cove.toml"),
        format!("[pools.late]\nsize = 1\nimage = \"{IMAGE}\"\n"),
    )
    .unwrap();
    // The pool's lock, held as a fill under way holds it.
    let lock = cove.home.path().join("pools/late.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let held = std::fs::File::create(&lock).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();

    let mut cmd = cove.command(&["sandbox", "pool", "fill", "late"]);
    // Were it to try, it would find no engine there.
    cmd.env("DOCKER_HOST", "tcp://127.0.0.1:9")
        .env_remove("DOCKER_TLS_VERIFY")
        .env_remove("DOCKER_CERT_PATH");
    let fill = cmd.spawn().unwrap();
    let pid = fill.id().unwrap();
    // Its turn is awaited once it has the lock's file open.
    let started = Instant::now();
    while !std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|to| to == lock))
    {
        let fds: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .collect();
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the fill never waited for {}: it has {fds:?}",
            lock.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::fs::write(config.join("cove.toml"), "").unwrap();
    drop(held);
    let out = tokio::time::timeout(Duration::from_secs(60), fill.wait_with_output())
        .await
        .expect("the fill ended")
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", explain(&out));
    assert!(said.contains("no pool late in cove.toml"), "{said}");
    let conn = rusqlite::Connection::open(cove.home.path().join("cove.db")).unwrap();
    let members: i64 = conn
        .query_row("SELECT count(*) FROM pool_members", [], |r| r.get(0))
        .unwrap();
    assert_eq!(members, 0);
}
