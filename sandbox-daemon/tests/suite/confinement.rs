//! Nothing outside the workspace is ever read or written: a matrix of path attacks (absolute
//! paths, `..`, NUL bytes, and symlinks the shell plants inside the workspace) across every
//! file route. Write attacks aim only at a canary tree beside the workspace, so a regression
//! cannot damage the machine running the tests.

use std::collections::BTreeMap;
use std::path::Path;

use cove_harness::DaemonBuilder;
use cove_protocol::ErrorCode;
use cove_protocol::client::{ClientError, CovedClient};
use cove_protocol::files::{
    CreateRequest, DeleteQuery, ListQuery, ReadRequest, RewriteRequest, StrReplaceRequest,
};
use cove_protocol::shell::ExecRequest;

const SECRET: &str = "TOP-SECRET-CANARY";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    List,
    Read,
    Create,
    Rewrite,
    StrReplace,
    Delete,
    Download,
    Upload,
}

const ALL_ROUTES: [Route; 8] = [
    Route::List,
    Route::Read,
    Route::Create,
    Route::Rewrite,
    Route::StrReplace,
    Route::Delete,
    Route::Download,
    Route::Upload,
];
const READ_ROUTES: [Route; 3] = [Route::List, Route::Read, Route::Download];

/// Calls `route` on `path`; returns the error (or a description of the unexpected success).
async fn attack(c: &CovedClient, route: Route, path: &str) -> Result<String, ClientError> {
    let p = path.to_string();
    let ok = |what: &str| Ok(format!("{route:?} succeeded: {what}"));
    match route {
        Route::List => c
            .list(&ListQuery { path: p, depth: 3 })
            .await
            .and_then(|r| ok(&format!("{r:?}"))),
        Route::Read => c
            .read(&ReadRequest::whole(p))
            .await
            .and_then(|r| ok(&r.content)),
        Route::Create => c
            .create(&CreateRequest {
                path: p,
                content: "PWNED".into(),
                mode: None,
            })
            .await
            .and_then(|r| ok(&r.path)),
        Route::Rewrite => c
            .rewrite(&RewriteRequest {
                path: p,
                content: "PWNED".into(),
            })
            .await
            .and_then(|r| ok(&r.path)),
        Route::StrReplace => c
            .str_replace(&StrReplaceRequest {
                path: p,
                old_str: SECRET.into(),
                new_str: "PWNED".into(),
            })
            .await
            .and_then(|r| ok(&r.snippet)),
        Route::Delete => c
            .delete(&DeleteQuery {
                path: p,
                recursive: true,
            })
            .await
            .and_then(|r| ok(&r.path)),
        Route::Download => c
            .download(&p)
            .await
            .and_then(|b| ok(&String::from_utf8_lossy(&b))),
        Route::Upload => c
            .upload(&p, b"PWNED".to_vec())
            .await
            .and_then(|r| ok(&r.path)),
    }
}

/// Every file under `dir` with its content and mtime.
fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            let key = e.path().display().to_string();
            if meta.is_dir() {
                stack.push(e.path());
                out.insert(key, (Vec::new(), meta.modified().unwrap()));
            } else {
                out.insert(
                    key,
                    (std::fs::read(e.path()).unwrap(), meta.modified().unwrap()),
                );
            }
        }
    }
    out
}

#[tokio::test]
async fn no_path_reaches_outside_the_workspace() {
    let base = tempfile::tempdir().unwrap();
    let base_path = std::fs::canonicalize(base.path()).unwrap();
    let b = base_path.display().to_string();
    let outside = base_path.join("outside");
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(outside.join("dir/inner.txt"), SECRET).unwrap();
    let ws = base_path.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("inside.txt"), "inside").unwrap();

    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .workspace(&ws)
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    // The shell is unconfined by design: it plants links the file routes must not follow out.
    let plant = format!(
        "ln -s {b}/outside/secret.txt evil_file && \
         ln -s ../outside/secret.txt evil_rel && \
         ln -s {b}/outside evil_dir && \
         ln -s .. up && \
         mkdir -p sub nested && ln -s ../../outside sub/deep && \
         ln -s ../evil_dir nested/chain && \
         ln -s {b}/outside/missing.txt dangling_out && \
         ln -s /proc/self/root proc_root && \
         ln -s /etc/passwd passwd_link && \
         ln -s loop_b loop_a && ln -s loop_a loop_b"
    );
    let planted = c.exec(&ExecRequest::new(plant)).await.unwrap();
    assert_eq!(planted.exit_code, Some(0), "{}", planted.output);
    let before = snapshot(&outside);

    // Attacks on every route; all of them aim into the canary tree.
    let attacks_everywhere: Vec<String> = vec![
        format!("{b}/outside/secret.txt"),
        format!("{b}/ws/inside.txt"),
        "../outside/secret.txt".into(),
        "./../outside/secret.txt".into(),
        "sub/../../outside/secret.txt".into(),
        "sub/../../../outside/secret.txt".into(),
        "inside\0.txt".into(),
        "evil_dir/secret.txt".into(),
        "evil_dir/dir/inner.txt".into(),
        "up/outside/secret.txt".into(),
        "sub/deep/secret.txt".into(),
        "nested/chain/secret.txt".into(),
        format!("proc_root{b}/outside/secret.txt"),
        "evil_dir/new.txt".into(),
        "evil_dir/newdir/new.txt".into(),
        "up/outside/new.txt".into(),
        "sub/deep/newdir/new.txt".into(),
        "nested/chain/new.txt".into(),
        format!("proc_root{b}/outside/new.txt"),
    ];
    // Links that themselves point out: every route but delete, which removes the link only.
    let outward_links = [
        "evil_file",
        "evil_rel",
        "dangling_out",
        "evil_dir",
        "up",
        "sub/deep",
    ];
    // Outside the canary tree: read-only routes only.
    let read_only = [
        "/etc/passwd",
        "../../../../../../etc/passwd",
        "passwd_link",
        "proc_root/etc/passwd",
    ];

    let mut cases: Vec<(Route, String)> = Vec::new();
    for path in &attacks_everywhere {
        cases.extend(ALL_ROUTES.iter().map(|r| (*r, path.clone())));
    }
    for path in outward_links {
        cases.extend(
            ALL_ROUTES
                .iter()
                .filter(|r| **r != Route::Delete)
                .map(|r| (*r, path.to_string())),
        );
    }
    for path in read_only {
        cases.extend(READ_ROUTES.iter().map(|r| (*r, path.to_string())));
    }
    assert!(attacks_everywhere.len() + outward_links.len() + read_only.len() >= 20);

    let mut failures = Vec::new();
    for (route, path) in &cases {
        match attack(c, *route, path).await {
            Err(e) if e.code() == Some(&ErrorCode::PathOutsideWorkspace) => {
                assert!(
                    !e.to_string().contains(SECRET),
                    "{route:?} {path:?} leaked: {e}"
                );
            }
            other => failures.push(format!("{route:?} {path:?}: {other:?}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} attacks not refused:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );

    assert_eq!(snapshot(&outside), before, "the canary tree changed");
    assert!(
        d.path("evil_dir").is_symlink() && d.path("sub/deep").is_symlink(),
        "planted links untouched"
    );

    // A symlink loop is an invalid path, not a crash and not an escape.
    let looped = c.read(&ReadRequest::whole("loop_a")).await.unwrap_err();
    assert_eq!(looped.code(), Some(&ErrorCode::InvalidPath), "{looped}");
    // Deleting an outward link removes the link and nothing it points to.
    for link in outward_links {
        c.delete(&DeleteQuery {
            path: link.into(),
            recursive: true,
        })
        .await
        .unwrap();
        assert!(
            std::fs::symlink_metadata(ws.join(link)).is_err(),
            "{link} still there"
        );
    }
    assert_eq!(
        snapshot(&outside),
        before,
        "deleting links touched their targets"
    );
}
