//! The local sandbox's walls, drawn by bubblewrap (Debian's `bwrap`): its own user, mount,
//! PID, IPC, UTS and network namespaces; a root holding only the system, read-only, with the
//! machine's secrets masked; the workspace, a private `/tmp` and a private `HOME` the only
//! places it writes; `/proc` of its own processes; and an environment of what is named here,
//! nothing inherited. What it reaches of the network goes through [`super::egress`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where the sandbox's home is, inside (as in the sandbox image).
pub const SANDBOX_HOME: &str = "/home/agent";
/// Where the runtime folder (the egress socket, coved's state) is, inside.
pub const SANDBOX_RUN: &str = "/run/cove";
/// Where coved's own binary is, inside.
pub const SANDBOX_COVED: &str = "/run/coved/coved";
/// The port the sandbox's proxy listens on, inside.
pub const PROXY_PORT: u16 = 3128;

/// The system, visible read-only (links kept as links).
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
    "/var/cache/fontconfig",
];
/// Secrets of the machine inside the system folders, masked.
const MACHINE_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/ssh",
    "/etc/kubernetes",
    "/etc/docker",
    "/etc/containerd",
    "/etc/rancher",
    "/etc/cove",
    "/etc/security/opasswd",
];
/// A user's credentials, under their home, masked wherever the sandbox could see them (a
/// workspace that is the home folder, a read-only folder the user shares).
pub const USER_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".config/hub",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/cove",
    ".config/cove",
    ".local/share/keyrings",
    ".password-store",
    ".vault-token",
    // What Cove and other agent hosts run or put in prompts: an agent that wrote them would
    // run its commands on this machine, unwalled, the next time.
    ".config/Claude",
    ".claude",
    ".claude.json",
    ".workany",
    ".cursor",
    ".codex",
];
/// Files a shell or git runs on this machine later, kept read-only wherever the sandbox
/// could otherwise write them (a folder the user shares writable, the workspace's own
/// `.git/hooks`).
pub const RUN_LATER: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".gitconfig",
    ".config/git",
    ".git/hooks",
];

/// The places of this machine a sandbox over `workspace` shows as they are (the system,
/// the folders the user shares, the workspace), as they are spelt.
fn spelt_places(workspace: &Path, read_only: &[PathBuf], writable: &[PathBuf]) -> Vec<PathBuf> {
    SYSTEM
        .iter()
        .map(PathBuf::from)
        .chain(read_only.iter().cloned())
        .chain(writable.iter().cloned())
        .chain([workspace.to_path_buf()])
        .collect()
}

/// The places of this machine a sandbox over `workspace` shows as they are, as they
/// resolve; everything else of the machine it hides or replaces with its own.
pub fn shown_places(workspace: &Path, read_only: &[PathBuf], writable: &[PathBuf]) -> Vec<PathBuf> {
    spelt_places(workspace, read_only, writable)
        .iter()
        .map(|p| resolved(p))
        .collect()
}

/// [`shown_places`] as they are spelt and as they resolve (`/bin` is `/usr/bin` where the
/// system merged them): a path a command names matches either.
pub fn shown_places_by_both_names(
    workspace: &Path,
    read_only: &[PathBuf],
    writable: &[PathBuf],
) -> Vec<PathBuf> {
    let spelt = spelt_places(workspace, read_only, writable);
    let resolved: Vec<PathBuf> = spelt.iter().map(|p| resolved(p)).collect();
    spelt.into_iter().chain(resolved).collect()
}

/// What the sandbox's network is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    /// Its own: loopback, and the internet through the controller's proxy.
    #[default]
    Proxied,
    /// Loopback only.
    None,
    /// The machine's own (loopback services included): no network boundary.
    Host,
}

/// Everything the walls are drawn from.
#[derive(Debug, Clone)]
pub struct Layout {
    /// coved, on this machine.
    pub coved: PathBuf,
    pub workspace: PathBuf,
    /// Bound at [`SANDBOX_HOME`].
    pub home: PathBuf,
    /// Bound at `/tmp`.
    pub tmp: PathBuf,
    /// Bound at [`SANDBOX_RUN`].
    pub runtime: PathBuf,
    /// Paths of this machine never shown (the controller's data and config, credentials).
    pub hidden: Vec<PathBuf>,
    /// More paths shown read-only, and writable.
    pub read_only: Vec<PathBuf>,
    pub writable: Vec<PathBuf>,
    pub network: Network,
}

impl Layout {
    /// bwrap's arguments up to and including `--`, then the command to run inside.
    pub fn args(&self, command: &[OsString]) -> Vec<OsString> {
        let mut a = Args::default();
        a.flags(&[
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            "cove-sandbox",
        ]);
        if self.network != Network::Host {
            a.flags(&["--unshare-net"]);
        }
        for dir in SYSTEM {
            let path = Path::new(dir);
            match std::fs::read_link(path) {
                Ok(target) => a.path2("--symlink", &target, path),
                Err(_) if path.exists() => a.path2("--ro-bind", path, path),
                Err(_) => {}
            }
        }
        for secret in MACHINE_SECRETS {
            a.mask(Path::new(secret));
        }
        a.flags(&["--proc", "/proc", "--dev", "/dev"]);
        a.flags(&["--perms", "1777", "--tmpfs", "/dev/shm"]);
        a.path2("--ro-bind", Path::new("/sys"), Path::new("/sys"));
        a.path2("--bind", &self.tmp, Path::new("/tmp"));
        a.path2("--symlink", Path::new("/tmp"), Path::new("/var/tmp"));
        a.path2("--bind", &self.home, Path::new(SANDBOX_HOME));
        a.path2("--bind", &self.runtime, Path::new(SANDBOX_RUN));
        a.path2("--ro-bind", &self.coved, Path::new(SANDBOX_COVED));
        for path in &self.read_only {
            a.path2("--ro-bind", path, path);
        }
        for path in &self.writable {
            a.path2("--bind", path, path);
        }
        a.path2("--bind", &self.workspace, &self.workspace);
        // Last, so nothing bound above shows what they cover. Paths are compared as they
        // resolve (a link to `~/.ssh` hides what it points at).
        let shown = shown_places(&self.workspace, &self.read_only, &self.writable);
        for hidden in &self.hidden {
            let hidden = resolved(hidden);
            if shown.iter().any(|s| hidden.starts_with(s)) {
                a.mask(&hidden);
            }
        }
        for dir in self.writable.iter().chain([&self.workspace]) {
            for later in RUN_LATER {
                let path = resolved(&dir.join(later));
                if path.exists() {
                    a.path2("--ro-bind", &path, &path);
                }
            }
        }
        a.flags(&["--remount-ro", "/"]);
        a.args.push("--chdir".into());
        a.args.push(self.workspace.clone().into());
        a.args.push("--".into());
        a.args.extend(command.iter().cloned());
        a.args
    }
}

/// `path` with its links followed, as far as it exists.
fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Why `workspace` cannot be a sandbox's: it holds the user's home folder or Cove's own
/// data, whose secrets and startup files a writable bind would hand over.
pub fn unfit_workspace(workspace: &Path, guarded: &[PathBuf]) -> Option<String> {
    let workspace = resolved(workspace);
    guarded
        .iter()
        .map(|g| resolved(g))
        .find(|g| g.starts_with(&workspace))
        .map(|g| {
            format!(
                "the workspace {} holds {}: the agent would write there (keys, startup files, Cove's own store); use a folder inside it",
                workspace.display(),
                g.display()
            )
        })
}

#[derive(Default)]
struct Args {
    args: Vec<OsString>,
}

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.args.extend(flags.iter().map(OsString::from));
    }

    fn path2(&mut self, flag: &str, a: &Path, b: &Path) {
        self.args.push(flag.into());
        self.args.push(a.into());
        self.args.push(b.into());
    }

    /// Hides `path` if it exists: an empty folder over a folder, an empty file over a file.
    fn mask(&mut self, path: &Path) {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => {
                self.args.push("--tmpfs".into());
                self.args.push(path.into());
            }
            Ok(_) => self.path2("--ro-bind", Path::new("/dev/null"), path),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(root: &Path) -> Layout {
        Layout {
            coved: root.join("bin/coved"),
            workspace: root.join("home/work"),
            home: root.join("state/home"),
            tmp: root.join("state/tmp"),
            runtime: root.join("state/run"),
            hidden: vec![root.join("home/work/.ssh"), root.join("elsewhere/.ssh")],
            read_only: vec![],
            writable: vec![],
            network: Network::Proxied,
        }
    }

    fn text(args: &[OsString]) -> String {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_workspace_is_bound_after_tmp_and_home_and_secrets_inside_it_are_masked() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("home/work/.ssh")).unwrap();
        let l = layout(root.path());
        let args = text(&l.args(&["coved".into()]));
        let ws = l.workspace.display().to_string();
        let tmp_at = args.find(" /tmp ").unwrap();
        let ws_at = args.find(&format!("--bind {ws} {ws}")).unwrap();
        assert!(tmp_at < ws_at, "{args}");
        assert!(args.contains(&format!("--tmpfs {ws}/.ssh")), "{args}");
        assert!(
            !args.contains("elsewhere"),
            "what the sandbox cannot see needs no mask"
        );
        assert!(args.contains("--unshare-net"));
        assert!(args.ends_with("-- coved"), "{args}");
        assert!(args.contains(&format!("--chdir {ws} --")), "{args}");
    }

    #[test]
    fn a_workspace_that_holds_the_home_folder_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home/me");
        std::fs::create_dir_all(home.join("project")).unwrap();
        let guarded = vec![home.clone()];
        assert!(unfit_workspace(&home, &guarded).is_some());
        assert!(unfit_workspace(&root.path().join("home"), &guarded).is_some());
        assert!(unfit_workspace(&home.join("project"), &guarded).is_none());
    }

    #[test]
    fn startup_files_in_a_shared_folder_stay_read_only() {
        let root = tempfile::tempdir().unwrap();
        let mut l = layout(root.path());
        let shared = root.path().join("shared");
        std::fs::create_dir_all(shared.join(".git/hooks")).unwrap();
        std::fs::write(shared.join(".bashrc"), "").unwrap();
        l.writable = vec![shared.clone()];
        let args = text(&l.args(&[]));
        let rc = resolved(&shared.join(".bashrc")).display().to_string();
        assert!(args.contains(&format!("--ro-bind {rc} {rc}")), "{args}");
        assert!(args.contains(".git/hooks"), "{args}");
    }

    #[test]
    fn the_host_network_is_shared_only_when_asked() {
        let root = tempfile::tempdir().unwrap();
        let mut l = layout(root.path());
        l.network = Network::Host;
        assert!(!text(&l.args(&[])).contains("--unshare-net"));
    }
}
