//! The local sandbox is a boundary: real commands run in it through `cove exec` (the
//! operator's way in, no model needed) and show what they cannot see, write or reach — the
//! controller's keys and tokens, its store and config, the user's credentials, this
//! machine's other processes and loopback services — while the workspace, `/tmp`, the
//! sandbox's home and the internet work (security review H2, H3, M6).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Output;

use super::{Cove, explain};
use cove_harness::llm::Wire;

/// Secrets a controller holds that the agent must never read.
const SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-canary-openai-3f1e"),
    ("ANTHROPIC_API_KEY", "sk-ant-canary-77aa"),
    ("OPENROUTER_API_KEY", "sk-or-canary-0c0c"),
    (
        "COVE_SERVE_TOKEN",
        "serve-canary-token-5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e",
    ),
    ("COVE_SANDBOX_TOKEN", "sandbox-canary-token-9191"),
    ("AWS_SECRET_ACCESS_KEY", "aws-canary-secret-4242"),
    ("GITHUB_TOKEN", "ghp_canarycanarycanary"),
];

async fn exec(cove: &Cove, script: &str, env: &[(&str, &str)]) -> Output {
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut cmd = cove.command(&["exec", script, "--workspace", &ws]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output())
        .await
        .expect("cove exec finished within 2 minutes")
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn the_agents_shell_reads_no_secret_of_the_controller_anywhere() {
    let cove = Cove::new(Wire::OpenAi).await;
    // Everything the sandbox could read that might hold them: its environment, every
    // process's environment and command line it can see.
    let out = exec(
        &cove,
        "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done 2>/dev/null; cat /proc/$(pgrep -xo coved)/environ >/dev/null 2>&1 && echo COVED-READABLE; echo DONE",
        SECRETS,
    )
    .await;
    let seen = stdout(&out);
    assert!(seen.contains("DONE"), "{}", explain(&out));
    // Only what the sandbox is given by name: a new HOME, the proxy.
    assert!(seen.contains("HOME=/home/agent"), "{seen}");
    // coved's own environment (its token) is closed to the agent's processes.
    assert!(!seen.contains("COVED-READABLE"), "{seen}");
    assert!(!seen.contains("COVE_TOKEN="), "{seen}");
    for (name, value) in SECRETS {
        assert!(!seen.contains(value), "{name} reached the sandbox:\n{seen}");
    }
    // Named in cove.toml, a variable goes in (and only then).
    std::fs::create_dir_all(cove.home.path().join("config/cove")).unwrap();
    std::fs::write(
        cove.home.path().join("config/cove/cove.toml"),
        "[local_sandbox]\nenv = [\"GITHUB_TOKEN\", \"GREETING=hello\"]\n",
    )
    .unwrap();
    let out = exec(
        &cove,
        "echo $GITHUB_TOKEN $GREETING $OPENAI_API_KEY",
        SECRETS,
    )
    .await;
    assert_eq!(
        stdout(&out).trim(),
        "ghp_canarycanarycanary hello",
        "{}",
        explain(&out)
    );
}

#[tokio::test]
async fn the_sandbox_writes_only_its_workspace_tmp_and_home_and_sees_nothing_of_the_users() {
    let cove = Cove::new(Wire::OpenAi).await;
    let home = cove.home.path();
    // What the user has beside the workspace: keys, Cove's own store and config, a folder.
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY CANARY").unwrap();
    std::fs::create_dir_all(home.join("project")).unwrap();
    std::fs::write(home.join("project/precious.txt"), "keep me").unwrap();
    let db = home.join("cove.db");
    let outside_tmp = tempfile::tempdir().unwrap();
    std::fs::write(outside_tmp.path().join("canary"), "keep me").unwrap();
    let marker = format!("cove-marker-{}", std::process::id());
    let script = format!(
        r#"for p in {home}/.ssh/id_ed25519 {home}/project/precious.txt {db} {data} {tmp}/canary /var/run/docker.sock /run/docker.sock /root /etc/shadow; do
  if [ -e "$p" ] && {{ [ -s "$p" ] || [ -S "$p" ] || {{ [ -d "$p" ] && [ -n "$(ls -A "$p" 2>/dev/null)" ]; }}; }}; then echo "SEES $p"; fi
done
rm -rf {home}/project {tmp} 2>/dev/null
for p in /usr/bin/cove-x /etc/cove-x; do
  if touch "$p" 2>/dev/null; then echo "WROTE $p"; fi
done
echo in-workspace > made-here.txt && echo WS-OK
echo hidden > /tmp/{marker} && echo TMP-OK
echo pip > ~/.kept && echo HOME-OK
echo PROCS=$(ls -d /proc/[0-9]* | wc -l)
python3 -c 'print("PY-OK")'
node -e 'console.log("NODE-OK")'
"#,
        home = home.display(),
        db = db.display(),
        data = home.join("data/cove").display(),
        tmp = outside_tmp.path().display(),
    );
    let out = exec(&cove, &script, &[]).await;
    let seen = stdout(&out);
    assert!(!seen.contains("SEES"), "{seen}\n{}", explain(&out));
    assert!(!seen.contains("WROTE"), "{seen}");
    for ok in ["WS-OK", "TMP-OK", "HOME-OK", "PY-OK", "NODE-OK"] {
        assert!(seen.contains(ok), "{ok}: {}", explain(&out));
    }
    // Its processes only: bubblewrap's init, coved, its shell and what it runs.
    let procs: usize = seen
        .lines()
        .find_map(|l| l.strip_prefix("PROCS="))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(procs < 12, "the sandbox sees {procs} processes");
    assert_eq!(
        std::fs::read_to_string(cove.workspace.join("made-here.txt")).unwrap(),
        "in-workspace\n"
    );
    assert!(
        home.join("project/precious.txt").exists(),
        "the user's folder is intact"
    );
    // Where its home folder was, the sandbox has a /tmp of its own: nothing lands here.
    let script = format!("touch {}/new-file; echo done", home.display());
    let out = exec(&cove, &script, &[]).await;
    assert!(stdout(&out).contains("done"), "{}", explain(&out));
    assert!(
        !home.join("new-file").exists(),
        "the sandbox wrote in the user's home"
    );
    assert!(
        outside_tmp.path().join("canary").exists(),
        "this machine's /tmp is intact"
    );
    assert!(
        !std::path::Path::new("/tmp").join(&marker).exists(),
        "the sandbox's /tmp is its own"
    );
    // The sandbox's home stays with its workspace: a second run finds what the first left.
    let again = exec(&cove, "cat ~/.kept", &[]).await;
    assert_eq!(stdout(&again).trim(), "pip", "{}", explain(&again));
}

/// A service on this machine's loopback, answering every connection with `body`.
fn loopback_service(body: &'static str) -> u16 {
    service_on("127.0.0.1", body)
}

/// A service on `ip`, answering every connection with `body` (as HTTP).
fn service_on(ip: &str, body: &'static str) -> u16 {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[tokio::test]
async fn this_machines_loopback_services_are_out_of_reach_unless_shared() {
    let cove = Cove::new(Wire::OpenAi).await;
    let port = loopback_service("host-database-answer");
    let script = format!(
        "curl -s -m 5 http://127.0.0.1:{port}/ || echo DIRECT-REFUSED
curl -s -m 5 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{port}/
curl -s -m 5 -x http://127.0.0.1:3128 http://169.254.169.254/latest/meta-data/
curl -s -m 5 -x http://127.0.0.1:3128 http://10.0.0.1/
echo END"
    );
    let out = exec(&cove, &script, &[]).await;
    let seen = stdout(&out);
    assert!(seen.contains("END"), "{}", explain(&out));
    assert!(!seen.contains("host-database-answer"), "{seen}");
    assert!(seen.contains("DIRECT-REFUSED"), "{seen}");
    // The proxy says why, and how to allow it.
    assert!(
        seen.contains(&format!("127.0.0.1:{port} is this machine's loopback")),
        "{seen}"
    );
    assert!(seen.contains(&format!("host_ports = [{port}]")), "{seen}");
    assert!(seen.contains("169.254.169.254:80 is link-local"), "{seen}");
    assert!(seen.contains("10.0.0.1:80 is a private network"), "{seen}");

    // Nor its services on its own network address (a public one, on a server).
    let own = cove_harness::site::network_address().unwrap();
    let on_all = service_on("0.0.0.0", "on-every-address");
    let out = exec(
        &cove,
        &format!("curl -s -m 5 -x http://127.0.0.1:3128 http://{own}:{on_all}/; echo END"),
        &[],
    )
    .await;
    let seen = stdout(&out);
    assert!(!seen.contains("on-every-address"), "{seen}");
    assert!(
        seen.contains("one of this machine's own addresses"),
        "{seen}"
    );

    // Shared by the user, the port is the sandbox's own 127.0.0.1:PORT.
    cove.share_port(port);
    let out = exec(
        &cove,
        &format!("curl -s -m 5 http://127.0.0.1:{port}/"),
        &[],
    )
    .await;
    assert_eq!(stdout(&out), "host-database-answer", "{}", explain(&out));

    // A service that speaks first (a database's greeting) is heard whole.
    let greeter = TcpListener::bind("127.0.0.1:0").unwrap();
    let greeter_port = greeter.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in greeter.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.write_all(b"220 greetings from the host\r\n");
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    });
    cove.share_port(greeter_port);
    let out = exec(
        &cove,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{greeter_port}; timeout 5 head -c 27 <&3"),
        &[],
    )
    .await;
    assert_eq!(
        stdout(&out),
        "220 greetings from the host",
        "{}",
        explain(&out)
    );
}

#[tokio::test]
async fn the_internet_is_reached_through_the_proxy() {
    let cove = Cove::new(Wire::OpenAi).await;
    // PyPI is reachable wherever the tests' own dependencies were installed from.
    let out = exec(
        &cove,
        "curl -sS -m 30 -o /dev/null -w '%{http_code}' https://pypi.org/simple/six/",
        &[],
    )
    .await;
    assert_eq!(stdout(&out), "200", "{}", explain(&out));
}

#[tokio::test]
async fn without_walls_the_sandbox_is_named_host_and_warns_on_every_run() {
    let cove = Cove::new(Wire::OpenAi).await;
    let ws = cove.workspace.to_str().unwrap().to_string();
    let mut cmd = cove.command(&[
        "exec",
        "echo $HOME",
        "--workspace",
        &ws,
        "--sandbox",
        "host",
    ]);
    for (k, v) in SECRETS {
        cmd.env(k, v);
    }
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{}", explain(&out));
    assert_eq!(stdout(&out).trim(), cove.home.path().to_str().unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--sandbox host: no walls"), "{err}");
    // Even so, its environment is named, not inherited.
    let out = cove
        .command(&["exec", "env", "--workspace", &ws, "--sandbox", "host"])
        .env("OPENROUTER_API_KEY", "sk-or-canary-0c0c")
        .output()
        .await
        .unwrap();
    assert!(!stdout(&out).contains("sk-or-canary"), "{}", explain(&out));
}

#[tokio::test]
async fn a_workspace_that_holds_the_users_home_is_refused() {
    let cove = Cove::new(Wire::OpenAi).await;
    let home = cove.home.path().to_str().unwrap().to_string();
    let out = cove
        .command(&["exec", "touch ~/.bashrc-was-here", "--workspace", &home])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success(), "{}", explain(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("use a folder inside it"), "{err}");
}

/// `cove exec` with `PATH` as given: refused in one line that says all of `said`, and
/// nothing ran.
async fn refused_with_path(cove: &Cove, path: &str, said: &[&str]) {
    let ws = cove.workspace.to_str().unwrap().to_string();
    let out = cove
        .command(&["exec", "touch ran", "--workspace", &ws])
        .env("PATH", path)
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    for said in said {
        assert!(err.contains(said), "{said}: {err}");
    }
    assert!(!cove.workspace.join("ran").exists());
}

#[tokio::test]
async fn a_machine_that_cannot_wall_the_agent_in_says_so_and_runs_nothing() {
    let cove = Cove::new(Wire::OpenAi).await;
    // No bubblewrap on this PATH: as on a machine without it.
    refused_with_path(
        &cove,
        "/nonexistent",
        &[
            "bubblewrap is not installed",
            "--sandbox host",
            "cove sandbox create",
        ],
    )
    .await;

    // bubblewrap installed, the kernel refusing user namespaces: bwrap's own words, as a
    // Debian kernel with kernel.unprivileged_userns_clone=0 makes it say them.
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    refused_with_path(
        &cove,
        &format!("{}:/usr/bin:/bin", bin.path().display()),
        &[
            "cannot make the sandbox's namespaces",
            "non-privileged user namespaces",
            "kernel.unprivileged_userns_clone=1",
            "--sandbox host",
            "cove sandbox create",
        ],
    )
    .await;
}

#[tokio::test]
async fn what_cove_keeps_on_disk_is_its_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let cove = Cove::new(Wire::OpenAi).await;
    cove.llm
        .push(cove_harness::Turn::text("").call("complete", serde_json::json!({"text": "done"})));
    // A run with the default workspace: made in Cove's data folder.
    let out = cove
        .run(&[
            "--json",
            "run",
            "Nothing much",
            "--model",
            "openai/scripted",
            "--no-prompt",
        ])
        .await;
    assert!(out.status.success(), "{}", explain(&out));
    let mode = |p: &std::path::Path| {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let home = cove.home.path();
    let data = home.join("data/cove");
    assert_eq!(mode(&data), 0o700, "the data folder");
    for file in ["cove.db", "cove.db-wal"] {
        let path = home.join(file);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{file}");
        }
    }
    assert_eq!(mode(&data.join("logs/coved.log")), 0o600, "coved's log");
    let workspaces: Vec<_> = std::fs::read_dir(data.join("workspaces"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(workspaces.len(), 1);
    assert_eq!(mode(&workspaces[0].path()), 0o700, "the thread's workspace");

    // A database an older Cove left readable by others is tightened when opened.
    std::fs::set_permissions(home.join("cove.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let threads = cove.run(&["threads"]).await;
    assert!(threads.status.success(), "{}", explain(&threads));
    assert_eq!(mode(&home.join("cove.db")), 0o600);
}

/// The review's `policy_truncation` case, walled: a command that names folders of this
/// machine for deletion, the second past any cut and inside `sh -c`. The walls keep it from
/// them; auto still asks, since the agent means the user's files, and the request shows the
/// whole command. Allowed, it runs inside the walls and this machine's folders stay.
#[tokio::test]
async fn a_deletion_aimed_at_this_machines_files_asks_though_the_walls_hold_it() {
    use cove_harness::Turn;
    use serde_json::json;
    let cove = Cove::new(Wire::OpenAi).await;
    let machine = tempfile::tempdir().unwrap();
    let scratch = machine.path().join("old-build-cache");
    let precious = machine.path().join("precious");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::create_dir_all(&precious).unwrap();
    std::fs::write(precious.join("thesis.tex"), "years of work").unwrap();
    let command = format!(
        "rm -rf {} && true {}stale-artifacts && sh -c 'rm -rf {}'",
        scratch.display(),
        "clean-".repeat(30),
        precious.display()
    );
    cove.llm
        .push(Turn::text("Tidying up.").call("execute_command", json!({ "command": command })));
    cove.llm
        .push(Turn::text("").call("complete", json!({ "text": "done" })));
    let ws = cove.workspace.to_str().unwrap().to_string();
    let out = cove
        .run(&[
            "--json",
            "run",
            "tidy up",
            "--model",
            cove.model(),
            "--workspace",
            &ws,
            "--no-prompt",
            "--permissions",
            "auto",
        ])
        .await;
    assert_eq!(out.status.code(), Some(9), "{}", explain(&out));
    let all = super::events(&out);
    let asked = all
        .iter()
        .find(|e| e["type"] == "permission_request")
        .unwrap_or_else(|| panic!("{:?}", super::kinds(&all)));
    let summary = asked["summary"].as_str().unwrap();
    let why = asked["why"].as_str().unwrap();
    assert!(
        summary.contains(&precious.display().to_string()),
        "the whole command is shown: {summary}"
    );
    assert!(
        why.contains(&scratch.display().to_string()) && why.contains("does not show"),
        "{why}"
    );
    let thread = asked["thread_id"].as_str().unwrap();
    let request = asked["request_id"].as_str().unwrap();
    let permit = cove.run(&["permit", thread, request, "allow_once"]).await;
    assert!(permit.status.success(), "{}", explain(&permit));
    let out = cove.run(&["--json", "resume", thread, "--no-prompt"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", explain(&out));
    assert!(scratch.exists() && precious.join("thesis.tex").exists());
}

/// The walls' other layers, tried from inside: namespaces of its own (user, IPC, UTS, mount,
/// PID), no new namespaces or mounts (seccomp), no typing into another's terminal, and
/// Landlock holding a place the mounts leave writable (the runtime folder coved keeps its
/// proxy's socket in) to the folders coved names.
#[tokio::test]
async fn the_sandbox_has_namespaces_of_its_own_and_cannot_make_new_ones_or_mount() {
    let cove = Cove::new(Wire::OpenAi).await;
    let script = r#"
echo "HOST=$(hostname)"
for ns in user ipc uts mnt pid; do echo "NS-$ns=$(readlink /proc/self/ns/$ns)"; done
echo "UIDMAP=$(cat /proc/self/uid_map | tr -s ' ' | sed 's/^ //')"
unshare -U true 2>/dev/null && echo UNSHARE-WORKED
unshare -rm true 2>/dev/null && echo UNSHARE-ROOT-WORKED
mkdir -p /tmp/m && mount -t tmpfs none /tmp/m 2>/dev/null && echo MOUNT-WORKED
python3 -c 'import fcntl, termios, sys
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x")
except OSError as e:
    print("TIOCSTI-ERRNO", e.errno)
else:
    print("TIOCSTI-WORKED")'
test -w /run/cove && echo RUN-MOUNT-WRITABLE
touch /run/cove/planted 2>/dev/null && echo LANDLOCK-LET-IT
touch /tmp/ok 2>/dev/null && echo TMP-OK
echo DONE"#;
    let out = exec(&cove, script, &[]).await;
    let seen = stdout(&out);
    assert!(seen.contains("DONE"), "{}", explain(&out));
    assert!(seen.contains("HOST=cove-sandbox"), "{seen}");
    for ns in ["user", "ipc", "uts", "mnt", "pid"] {
        let host = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
        let line = format!("NS-{ns}={}", host.display());
        assert!(!seen.contains(&line), "the sandbox shares {ns}: {seen}");
        assert!(seen.contains(&format!("NS-{ns}={ns}:[")), "{seen}");
    }
    // Inside a user namespace one id is mapped, not the machine's whole range.
    let map = seen
        .lines()
        .find_map(|l| l.strip_prefix("UIDMAP="))
        .unwrap();
    assert!(!map.ends_with("4294967295"), "{map}");
    for worked in [
        "UNSHARE-WORKED",
        "UNSHARE-ROOT-WORKED",
        "MOUNT-WORKED",
        "TIOCSTI-WORKED",
        "LANDLOCK-LET-IT",
    ] {
        assert!(!seen.contains(worked), "{worked}: {seen}");
    }
    // The terminal ioctl is refused by seccomp (EPERM), before the kernel looks at the
    // descriptor (which would say ENOTTY or EIO).
    assert!(seen.contains("TIOCSTI-ERRNO 1"), "{seen}");
    // The runtime folder's mount is writable and its owner the sandbox's user: only Landlock
    // kept the file out of it, while /tmp takes one.
    assert!(seen.contains("RUN-MOUNT-WRITABLE"), "{seen}");
    assert!(seen.contains("TMP-OK"), "{seen}");
}

/// A `cd` in one call moves where the next call's paths start: `cd ..`, then the workspace
/// by its name, deletes the whole of it. Auto asks, having asked the sandbox where the
/// shell is, and nothing is deleted while it waits.
#[tokio::test]
async fn a_deletion_is_read_from_where_an_earlier_cd_left_the_shell() {
    use cove_harness::Turn;
    use serde_json::json;
    let cove = Cove::new(Wire::OpenAi).await;
    std::fs::write(cove.workspace.join("work.txt"), "keep me").unwrap();
    let name = cove
        .workspace
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    cove.llm
        .push(Turn::text("Up one.").call("execute_command", json!({ "command": "cd .." })));
    cove.llm.push(Turn::text("Clearing.").call(
        "execute_command",
        json!({ "command": format!("rm -rf {name}") }),
    ));
    cove.llm
        .push(Turn::text("").call("complete", json!({ "text": "done" })));
    let ws = cove.workspace.to_str().unwrap().to_string();
    let out = cove
        .run(&[
            "--json",
            "run",
            "clear it",
            "--model",
            cove.model(),
            "--workspace",
            &ws,
            "--no-prompt",
        ])
        .await;
    assert_eq!(out.status.code(), Some(9), "{}", explain(&out));
    let all = super::events(&out);
    let asked: Vec<_> = all
        .iter()
        .filter(|e| e["type"] == "permission_request")
        .collect();
    assert_eq!(
        asked.len(),
        1,
        "only the deletion asks: {:?}",
        super::kinds(&all)
    );
    let why = asked[0]["why"].as_str().unwrap();
    assert!(why.contains("whole workspace"), "{why}");
    assert!(asked[0]["summary"].as_str().unwrap().contains(&name));
    assert!(cove.workspace.join("work.txt").exists());
}
