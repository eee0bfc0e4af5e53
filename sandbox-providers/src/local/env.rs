//! What a local sandbox is given of this machine: an environment of named variables (an
//! allowlist: the controller's keys, tokens and whatever else its shell holds never go
//! in), a home of its own that stays with its workspace, and the paths it must never see.

use std::path::{Path, PathBuf};

use super::LocalSettings;
use super::bwrap::{Network, PROXY_PORT, SANDBOX_HOME, USER_SECRETS};

/// Variables passed on as they are, when set: how text is shown and read.
const PASSED: &[&str] = &[
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_COLLATE",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "TERM",
    "COLORTERM",
];
/// `PATH` inside a walled sandbox (as in the sandbox image).
const SANDBOX_PATH: &str =
    "/home/agent/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What is passed on: how text is shown, and coved's own settings (`COVED_*`: the browser,
/// the search engine), none of them secrets.
fn passed() -> impl Iterator<Item = (String, String)> {
    let shown = PASSED
        .iter()
        .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)));
    let coved = std::env::vars().filter(|(name, _)| name.starts_with("COVED_"));
    shown.chain(coved)
}

fn user() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "agent".into())
}

/// The environment of a walled sandbox: its own `HOME`, `PATH`, `/tmp`, the proxy when its
/// network goes through one, what the user's settings name, and coved's token (which coved
/// keeps from its shells).
pub fn sandbox_env(settings: &LocalSettings, token: &str) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = vec![
        ("HOME".into(), SANDBOX_HOME.into()),
        ("PATH".into(), sandbox_path(settings)),
        ("USER".into(), user()),
        ("LOGNAME".into(), user()),
        ("SHELL".into(), "/bin/bash".into()),
        ("TMPDIR".into(), "/tmp".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("COVE_SANDBOX".into(), "local".into()),
    ];
    vars.extend(passed());
    if settings.network == Network::Proxied {
        let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
        for name in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            vars.push((name.into(), proxy.clone()));
        }
        for name in ["NO_PROXY", "no_proxy"] {
            vars.push((name.into(), "localhost,127.0.0.1,::1".into()));
        }
        // Node reads the proxy variables only when told to (22.21 and later).
        vars.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    }
    // Where the controller's traces go, so coved's spans join them.
    vars.extend(cove_telemetry::daemon_env());
    vars.extend(settings.env.iter().cloned());
    vars.push(("COVE_TOKEN".into(), token.into()));
    dedupe(vars)
}

/// The environment of `--sandbox host`: the user's own home and `PATH`, still without the
/// controller's keys and tokens.
pub fn host_env(token: &str) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = ["HOME", "PATH", "USER", "LOGNAME", "SHELL", "TMPDIR"]
        .iter()
        .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
        .collect();
    vars.extend(passed());
    vars.extend(cove_telemetry::daemon_env());
    vars.push(("COVE_SANDBOX".into(), "host".into()));
    vars.push(("COVE_TOKEN".into(), token.into()));
    dedupe(vars)
}

/// Later entries win, as they would set one after another.
fn dedupe(vars: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(vars.len());
    for (name, value) in vars {
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => out.push((name, value)),
        }
    }
    out
}

/// The sandbox's `PATH`, with the user's own `PATH` entries that lie in folders they share.
fn sandbox_path(settings: &LocalSettings) -> String {
    let shared: Vec<&PathBuf> = settings
        .read_only
        .iter()
        .chain(&settings.writable)
        .collect();
    let own = std::env::var_os("PATH").unwrap_or_default();
    let mut entries: Vec<String> = std::env::split_paths(&own)
        .filter(|p| shared.iter().any(|s| p.starts_with(s)))
        .map(|p| p.display().to_string())
        .collect();
    entries.push(SANDBOX_PATH.into());
    entries.join(":")
}

/// The home of the sandbox over `workspace`: one per workspace, kept between runs (what
/// the agent installs with `pip install --user` stays), 0700, in Cove's data folder.
pub fn home_for(workspace: &Path) -> std::io::Result<PathBuf> {
    // FNV-1a: a stable name for the folder, not a secret.
    let key = workspace
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    let key = format!("{key:016x}");
    let home = cove_config::data_dir().join("sandbox-homes").join(key);
    cove_store::private_files::dir_all(&home)?;
    Ok(home)
}

/// What of this machine a sandbox must never see, wherever it might show: Cove's data and
/// config, the user's credentials, and the files credential variables point at.
pub fn hidden_paths() -> Vec<PathBuf> {
    let mut hidden = vec![cove_config::data_dir(), cove_config::config_dir()];
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let home = PathBuf::from(home);
        hidden.extend(USER_SECRETS.iter().map(|s| home.join(s)));
    }
    for name in [
        "COVE_DB",
        "COVE_CONFIG",
        "KUBECONFIG",
        "DOCKER_CONFIG",
        "DOCKER_CERT_PATH",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AZURE_CONFIG_DIR",
        "SSH_AUTH_SOCK",
    ] {
        if let Some(value) = std::env::var_os(name).filter(|v| !v.is_empty()) {
            hidden.extend(std::env::split_paths(&value).filter(|p| p.is_absolute()));
        }
    }
    if let Ok(host) = std::env::var("DOCKER_HOST")
        && let Some(socket) = host.strip_prefix("unix://")
    {
        hidden.push(PathBuf::from(socket));
    }
    hidden
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_gets_only_what_is_named() {
        let settings = LocalSettings {
            env: vec![("GITHUB_TOKEN".into(), "given".into())],
            ..LocalSettings::default()
        };
        let vars = sandbox_env(&settings, "tok");
        let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("HOME"), Some(SANDBOX_HOME));
        assert_eq!(get("GITHUB_TOKEN"), Some("given"));
        assert_eq!(get("HTTPS_PROXY"), Some("http://127.0.0.1:3128"));
        assert_eq!(get("COVE_TOKEN"), Some("tok"));
        // Whatever this process holds is not passed unless named.
        let names: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
        for name in names {
            assert!(
                PASSED.contains(&name)
                    || name.starts_with("COVED_")
                    || [
                        "HOME",
                        "PATH",
                        "USER",
                        "LOGNAME",
                        "SHELL",
                        "TMPDIR",
                        "LANG",
                        "COVE_SANDBOX",
                        "COVE_TOKEN",
                        "GITHUB_TOKEN",
                        "NODE_USE_ENV_PROXY",
                        "NO_PROXY",
                        "no_proxy"
                    ]
                    .contains(&name)
                    || name.to_ascii_lowercase().ends_with("_proxy"),
                "{name} is not on the list"
            );
        }
    }

    #[test]
    fn no_proxy_without_a_proxied_network() {
        let settings = LocalSettings {
            network: Network::None,
            ..LocalSettings::default()
        };
        assert!(
            !sandbox_env(&settings, "t")
                .iter()
                .any(|(k, _)| k == "HTTPS_PROXY")
        );
    }
}
