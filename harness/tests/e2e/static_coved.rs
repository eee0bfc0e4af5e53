//! The statically linked coved (`crt-static`, built by `sandbox-image/build-test-image.sh`,
//! which `harness/install-test-deps.sh` runs) in a root that has no C library at all: only
//! the binary and Debian's busybox-static as its shell. It answers `/health`, runs shell
//! commands in busybox's ash, serves files, and says the browser is unavailable.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use cove_protocol::ErrorCode;
use cove_protocol::browser::StateQuery;
use cove_protocol::client::CovedClient;
use cove_protocol::shell::ExecRequest;

/// Where build-test-image.sh leaves the static build.
fn static_coved() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/x86_64-unknown-linux-gnu/debug/coved");
    assert!(
        path.exists(),
        "no static coved at {}: run harness/install-test-deps.sh (sandbox-image/build-test-image.sh builds it with RUSTFLAGS='-C target-feature=+crt-static' --target x86_64-unknown-linux-gnu)",
        path.display()
    );
    path
}

fn busybox() -> &'static str {
    ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("busybox is missing: apt-get install busybox-static (.ci/run installs it)")
}

#[tokio::test]
async fn the_static_coved_runs_where_there_is_no_c_library() {
    let coved = static_coved();
    let ldd = std::process::Command::new("ldd")
        .arg(&coved)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&ldd.stdout).to_string() + &String::from_utf8_lossy(&ldd.stderr);
    assert!(
        said.contains("not a dynamic executable") || said.contains("statically linked"),
        "{said}"
    );

    // A root of two programs: coved, and busybox as sh and its few tools.
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for dir in ["bin", "dev", "proc", "tmp", "workspace"] {
        std::fs::create_dir_all(r.join(dir)).unwrap();
    }
    std::fs::copy(busybox(), r.join("bin/busybox")).unwrap();
    for applet in ["sh", "stty", "cat", "ls", "mkdir", "sleep", "uname"] {
        std::os::unix::fs::symlink("busybox", r.join("bin").join(applet)).unwrap();
    }
    std::fs::copy(&coved, r.join("coved")).unwrap();
    for missing in ["lib", "lib64", "usr", "bin/bash"] {
        assert!(!r.join(missing).exists(), "{missing} in the root");
    }

    let port = cove_harness::mcp_servers::free_port().unwrap();
    let token = cove_harness::daemon::random_token();
    // Its own user, mount and process namespaces: /dev and /proc are the root's, and no
    // privilege is needed to chroot into it.
    let script = format!(
        "mount --rbind /dev {root}/dev && mount -t proc proc {root}/proc && exec chroot {root} /coved --listen 127.0.0.1:{port} --workspace /workspace",
        root = r.display()
    );
    let mut child = tokio::process::Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "--pid",
            "--fork",
            // The forked child is the namespace's first process, coved in the end: it dies
            // with unshare (killed below), and every process of the namespace with it.
            "--kill-child",
            "sh",
            "-c",
            &script,
        ])
        .env_clear()
        .env("COVE_TOKEN", &token)
        .env("COVED_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("unshare runs (util-linux)");
    let client = CovedClient::new(&format!("http://127.0.0.1:{port}"), token).unwrap();
    let mut healthy = false;
    for _ in 0..100 {
        if client.health().await.is_ok() {
            healthy = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !healthy {
        let _ = child.kill().await;
        let out = child.wait_with_output().await.unwrap();
        panic!(
            "the static coved did not answer /health: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let out = client
        .exec(&ExecRequest::new(
            "echo shell=${0##*/} on $(uname -s); ls /",
        ))
        .await
        .unwrap();
    assert!(out.completed, "{out:?}");
    assert_eq!(out.exit_code, Some(0));
    assert!(
        out.output.starts_with("shell=sh on Linux\n"),
        "{}",
        out.output
    );
    assert!(out.output.contains("coved"), "{}", out.output);
    let failed = client.exec(&ExecRequest::new("cat /nope")).await.unwrap();
    assert_eq!(failed.exit_code, Some(1));
    // Files work; the browser is absent and says so.
    client
        .upload("hello.txt", "from the host".as_bytes().to_vec())
        .await
        .unwrap();
    let read = client
        .exec(&ExecRequest::new("cat hello.txt"))
        .await
        .unwrap();
    assert_eq!(read.output, "from the host");
    let browser = client.browser_state(StateQuery::lean()).await.unwrap_err();
    assert_eq!(
        browser.code(),
        Some(&ErrorCode::BrowserUnavailable),
        "{browser}"
    );
    let _ = child.kill().await;
}
