//! The permission policy: which tool calls run, which wait for the user's consent, which are
//! refused. Rules from `[permissions]` in `cove.toml` are tried deny, then ask, then allow;
//! the mode decides the rest (see [`Mode`]).
//!
//! ```toml
//! [permissions]
//! mode = "auto"
//! deny = [{ tool = "execute_command", match = "*mkfs*" }]
//! ask = [{ tool = "browser_navigate_to", match = "*bank*" }, { tool = "mcp:*" }]
//! allow = [{ tool = "execute_command", match = "git push origin feature/*" }]
//! ```

mod command;
mod describe;
pub mod glob;

use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use command::{Risk, RiskKind, risks as command_risks};
pub use cove_config::{PermissionsConfig, RuleConfig};
pub use describe::{Effect, effect, effect_of, fingerprint, key_argument, summary};
pub use glob::Glob;

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The rules, then Cove's own cautions: commands that run as root, run downloaded code,
    /// push, or delete outside the workspace ask, and so do MCP tools; the rest runs.
    #[default]
    Auto,
    /// Every call that changes anything asks (deny rules still refuse).
    Ask,
    /// Calls that change anything are refused without asking; reads run.
    ReadOnly,
    /// Nothing asks; only deny rules refuse.
    Yolo,
}

impl Mode {
    /// The names `--permissions` and `mode` take.
    pub const NAMES: &[&str] = &["auto", "ask", "read-only", "yolo"];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Ask => "ask",
            Mode::ReadOnly => "read-only",
            Mode::Yolo => "yolo",
        }
    }
}

impl FromStr for Mode {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Mode, PolicyError> {
        match s {
            "auto" => Ok(Mode::Auto),
            "ask" => Ok(Mode::Ask),
            "read-only" | "readonly" => Ok(Mode::ReadOnly),
            "yolo" => Ok(Mode::Yolo),
            other => Err(PolicyError::UnknownMode(other.to_string())),
        }
    }
}

/// Why a policy cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("unknown permissions mode {0:?}: use auto, ask, read-only or yolo")]
    UnknownMode(String),
    #[error("a permissions rule has an empty tool name: name a tool, or `*` for all")]
    EmptyTool,
}

#[derive(Debug, Clone)]
struct Rule {
    tool: Glob,
    pattern: Option<Glob>,
}

impl Rule {
    fn new(config: &RuleConfig) -> Result<Rule, PolicyError> {
        if config.tool.trim().is_empty() {
            return Err(PolicyError::EmptyTool);
        }
        Ok(Rule {
            tool: Glob::new(config.tool.trim()),
            pattern: config.pattern.as_deref().map(Glob::new),
        })
    }

    fn matches(&self, tool: &str, key: Option<&str>) -> bool {
        self.tool.matches(tool)
            && match (&self.pattern, key) {
                (None, _) => true,
                (Some(pattern), Some(key)) => pattern.matches(key),
                (Some(_), None) => false,
            }
    }

    fn describe(&self) -> String {
        match &self.pattern {
            Some(p) => format!(
                "{{tool = {:?}, match = {:?}}}",
                self.tool.as_str(),
                p.as_str()
            ),
            None => format!("{{tool = {:?}}}", self.tool.as_str()),
        }
    }
}

/// What the policy says of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Put it to the user first; `why` says what made it ask.
    Ask { why: String },
    /// Refuse it; the model is told `why`.
    Deny { why: String },
}

/// The policy of one run.
#[derive(Debug, Clone)]
pub struct Policy {
    mode: Mode,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
    /// Where the sandbox's workspace lies, for commands that delete.
    workspace: Option<PathBuf>,
    /// Whether walls stand between the agent and this machine (every sandbox but
    /// `--sandbox host`).
    walled: bool,
    /// For a sandbox walled in on this machine: the places of the machine it shows as they
    /// are (the system, the workspace, shared folders).
    shown: Option<Vec<PathBuf>>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            mode: Mode::Auto,
            deny: Vec::new(),
            ask: Vec::new(),
            allow: Vec::new(),
            workspace: None,
            walled: true,
            shown: None,
        }
    }
}

impl Policy {
    /// The policy of `config`, in `mode` when given (a `--permissions` flag), else the
    /// configured one.
    pub fn new(config: &PermissionsConfig, mode: Option<Mode>) -> Result<Policy, PolicyError> {
        let mode = match (mode, &config.mode) {
            (Some(mode), _) => mode,
            (None, Some(name)) => name.parse()?,
            (None, None) => Mode::Auto,
        };
        let rules = |list: &[RuleConfig]| list.iter().map(Rule::new).collect::<Result<_, _>>();
        Ok(Policy {
            mode,
            deny: rules(&config.deny)?,
            ask: rules(&config.ask)?,
            allow: rules(&config.allow)?,
            workspace: None,
            walled: true,
            shown: None,
        })
    }

    /// Tells the policy where the workspace lies in the sandbox (relative paths in commands
    /// start there).
    pub fn with_workspace(mut self, workspace: impl Into<PathBuf>) -> Policy {
        self.workspace = Some(workspace.into());
        self
    }

    /// Tells the policy whether walls stand between the agent and this machine. Without
    /// them (`--sandbox host`) `auto` asks before every command: no reading of a command's
    /// words can tell everything it will do.
    pub fn with_walls(mut self, walled: bool) -> Policy {
        self.walled = walled;
        self
    }

    /// Tells the policy that the walls stand on this machine and which of its places the
    /// sandbox shows as they are. A command naming for deletion another place that exists
    /// here asks: the walls keep it from that place, but the agent means the user's files
    /// there, which the person should hear of.
    pub fn with_machine_view(mut self, shown: Vec<PathBuf>) -> Policy {
        self.shown = Some(shown);
        self
    }

    /// Whether `risk` names a place of this machine the sandbox does not show.
    fn aims_past_walls(&self, risk: &Risk) -> bool {
        let (Some(shown), Some(path)) = (&self.shown, &risk.path) else {
            return false;
        };
        // A pattern names the folder it is in (`/home/u/thesis/*`).
        let named: PathBuf = path
            .components()
            .take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '[']))
            .collect();
        risk.kind == RiskKind::Outside
            && named.components().count() > 1
            && !shown.iter().any(|s| named.starts_with(s))
            && named.symlink_metadata().is_ok()
    }

    /// Its mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// What to do with a call of `tool` with `args`.
    pub fn check(&self, tool: &str, args: &Value) -> Verdict {
        self.check_from(tool, args, None)
    }

    /// Whether a call of `tool` with `args` is read better knowing where its shell is (a
    /// `cd` of an earlier call moves it): it names a path to delete, write or go to by a
    /// relative path, and no folder of its own. Worth asking the sandbox (a round trip)
    /// before [`Policy::check_from`]; most commands are not.
    pub fn reads_shell_dir(&self, tool: &str, args: &Value) -> bool {
        let text = |field: &str| args.get(field).and_then(Value::as_str).unwrap_or("");
        let command = match tool {
            "execute_command" if text("folder").is_empty() => text("command"),
            "send_command_input" => text("text"),
            _ => return false,
        };
        self.mode == Mode::Auto && command::reads_relative_paths(command)
    }

    /// [`Policy::check`] of a shell call whose session's shell is in `shell_dir` (absolute,
    /// as the sandbox names it): its relative paths start there.
    pub fn check_from(&self, tool: &str, args: &Value, shell_dir: Option<&str>) -> Verdict {
        let key = key_argument(tool, args);
        let key = key.as_deref();
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, key)) {
            return Verdict::Deny {
                why: format!("the permissions policy denies it ({})", rule.describe()),
            };
        }
        if self.mode == Mode::Yolo {
            return Verdict::Allow;
        }
        let changes = effect_of(tool, args) == Effect::Change;
        if self.mode == Mode::ReadOnly && changes {
            return Verdict::Deny {
                why: "the permissions mode is read-only: nothing may be changed".into(),
            };
        }
        if let Some(rule) = self.ask.iter().find(|r| r.matches(tool, key)) {
            return Verdict::Ask {
                why: format!("the permissions policy asks for it ({})", rule.describe()),
            };
        }
        if !changes {
            return Verdict::Allow;
        }
        if self.mode == Mode::Ask {
            return Verdict::Ask {
                why: "the permissions mode asks before every change".into(),
            };
        }
        if self.allow.iter().any(|r| r.matches(tool, key)) {
            return Verdict::Allow;
        }
        match self.caution(tool, args, shell_dir) {
            Some(why) => Verdict::Ask { why },
            None => Verdict::Allow,
        }
    }

    /// Cove's own reasons to ask in `auto` mode, one per line. Inside walls, what stays
    /// inside runs and what crosses them asks: MCP tools (they run on this machine), pushes
    /// and publishing (they reach the world), emptying the workspace (the one place whose
    /// loss is the user's), and, walls on this machine, a deletion naming a place of it they
    /// hide (the reading's hint that asks, never one that allows). Without walls every
    /// command and every line typed into a shell asks, and the reading says what it found.
    fn caution(&self, tool: &str, args: &Value, shell_dir: Option<&str>) -> Option<String> {
        if tool.starts_with("mcp:") {
            return Some(
                "an MCP tool: it runs on this machine, and Cove cannot see what it changes".into(),
            );
        }
        let text = |field: &str| args.get(field).and_then(Value::as_str).unwrap_or("");
        let (command, folder) = match tool {
            "execute_command" => (text("command"), text("folder")),
            "send_command_input" => (text("text"), ""),
            _ => return None,
        };
        let risks = command_risks(command, self.workspace.as_deref(), Some(folder), shell_dir);
        let mut why: Vec<String> = risks
            .iter()
            .filter_map(|risk| {
                if !self.walled || risk.crosses_walls() {
                    Some(format!("the command {}", risk.text))
                } else if self.aims_past_walls(risk) {
                    Some(format!(
                        "the command {}, a place on this machine that the sandbox does not show: the walls keep the command from it, but the agent names your files there",
                        risk.text
                    ))
                } else {
                    None
                }
            })
            .collect();
        if !self.walled {
            why.insert(
                0,
                match tool {
                    "send_command_input" => "no walls (--sandbox host): what is typed into a shell runs as you, on this machine".into(),
                    _ => "no walls (--sandbox host): every command runs as you, on this machine".into(),
                },
            );
        }
        (!why.is_empty()).then(|| why.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(toml_text: &str, mode: Option<Mode>) -> Policy {
        #[derive(Deserialize)]
        struct File {
            permissions: PermissionsConfig,
        }
        let file: File = toml::from_str(toml_text).unwrap();
        Policy::new(&file.permissions, mode)
            .unwrap()
            .with_workspace("/workspace")
    }

    fn run(command: &str) -> Value {
        json!({ "command": command })
    }

    fn is_ask(v: &Verdict) -> bool {
        matches!(v, Verdict::Ask { .. })
    }

    fn is_deny(v: &Verdict) -> bool {
        matches!(v, Verdict::Deny { .. })
    }

    #[test]
    fn paths_are_read_from_where_an_earlier_command_left_the_shell() {
        let p = policy("[permissions]", None);
        // `cd ..` then, in the next call, the workspace by its name: the whole of it goes.
        let emptied = run("rm -rf workspace");
        assert_eq!(p.check("execute_command", &emptied), Verdict::Allow);
        match p.check_from("execute_command", &emptied, Some("/")) {
            Verdict::Ask { why } => assert!(why.contains("whole workspace"), "{why}"),
            other => panic!("{other:?}"),
        }
        // The same through a folder of the call, and typed into a shell that is there.
        let from_sub = json!({"command": "rm -rf ..", "folder": "src"});
        assert!(is_ask(&p.check("execute_command", &from_sub)));
        let typed = json!({"session_name": "main", "text": "rm -rf workspace\n"});
        assert!(is_ask(&p.check_from(
            "send_command_input",
            &typed,
            Some("/")
        )));
        // Everything in a folder above the workspace, the folder itself, a `cd` earlier in
        // the same command, a folder spelt as the tool reads it: all the workspace.
        for (command, shell_dir) in [
            (run("rm -rf *"), Some("/")),
            (run("rm -rf ./"), Some("/")),
            (run("rm -rf w*"), Some("/")),
            (run("cd .. && rm -rf workspace"), None),
            (run("cd / && rm -rf *"), None),
            (run("rm -rf *"), None),
            (json!({"command": "rm -rf .", "folder": "/workspace"}), None),
            (
                json!({"command": "rm -rf ..", "folder": "/workspace/src"}),
                None,
            ),
        ] {
            match p.check_from("execute_command", &command, shell_dir) {
                Verdict::Ask { why } => {
                    assert!(why.contains("whole workspace"), "{command}: {why}")
                }
                other => panic!("{command} from {shell_dir:?}: {other:?}"),
            }
        }
        // Inside the workspace, or a pattern that cannot be it, nothing to ask.
        for (command, shell_dir) in [
            ("rm -rf build", Some("/workspace/src")),
            ("rm -rf *", Some("/workspace/src")),
            ("rm -f *.log", None),
            ("rm -rf x*", Some("/")),
            ("cd src && rm -rf *", None),
        ] {
            assert_eq!(
                p.check_from("execute_command", &run(command), shell_dir),
                Verdict::Allow,
                "{command} from {shell_dir:?}"
            );
        }
        // Without walls the reading says where the shell is.
        let host = policy("[permissions]", None).with_walls(false);
        match host.check_from("execute_command", &run("rm -rf x"), Some("/srv/data")) {
            Verdict::Ask { why } => assert!(
                why.contains("an earlier command left the shell") && why.contains("/srv/data"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        // The sandbox is asked only where it matters: a relative path to delete, write or
        // go to, and no folder of the call's own.
        assert!(p.reads_shell_dir("execute_command", &emptied));
        assert!(p.reads_shell_dir("execute_command", &run("echo x > notes.txt")));
        assert!(p.reads_shell_dir("send_command_input", &typed));
        for not_needed in [
            run("cargo test"),
            run("rm -rf /tmp/x"),
            from_sub.clone(),
            json!({"file_path": "a"}),
        ] {
            let tool = if not_needed.get("file_path").is_some() {
                "write_file"
            } else {
                "execute_command"
            };
            assert!(!p.reads_shell_dir(tool, &not_needed), "{not_needed}");
        }
    }

    #[test]
    fn walls_on_this_machine_ask_when_a_deletion_names_a_place_of_it_they_hide() {
        let machine = tempfile::tempdir().unwrap();
        let precious = machine.path().join("precious");
        std::fs::create_dir(&precious).unwrap();
        let shown = vec![PathBuf::from("/usr"), PathBuf::from("/etc")];
        let p = policy("[permissions]", None).with_machine_view(shown);
        let named = format!("rm -rf {} && sh -c 'true'", precious.display());
        match p.check("execute_command", &run(&named)) {
            Verdict::Ask { why } => {
                assert!(why.contains(&precious.display().to_string()), "{why}");
                assert!(why.contains("the sandbox does not show"), "{why}");
            }
            other => panic!("{named}: {other:?}"),
        }
        std::fs::write(precious.join("thesis.tex"), "years of work").unwrap();
        let written = format!("echo x > {}/thesis.tex", precious.display());
        assert!(is_ask(&p.check("execute_command", &run(&written))));
        let everything_in = format!("rm -rf {}/*", precious.display());
        assert!(is_ask(&p.check("execute_command", &run(&everything_in))));
        // What the walls show read-only, what does not exist here, and the sandbox's own
        // places run: the walls hold them.
        for contained in [
            "rm -rf /etc/x".to_string(),
            format!("rm -rf {}/never-made", machine.path().display()),
            format!("echo x > {}/new-file", precious.display()),
            "rm -rf ~/cache".to_string(),
            "rm -rf build".to_string(),
        ] {
            assert_eq!(
                p.check("execute_command", &run(&contained)),
                Verdict::Allow,
                "{contained}"
            );
        }
        // A sandbox elsewhere (Docker, a remote one): this machine's places mean nothing.
        let elsewhere = policy("[permissions]", None);
        assert_eq!(
            elsewhere.check("execute_command", &run(&named)),
            Verdict::Allow
        );
    }

    #[test]
    fn auto_mode_inside_walls_asks_about_what_crosses_them_and_mcp() {
        let p = policy("[permissions]", None);
        assert_eq!(p.mode(), Mode::Auto);
        for contained in [
            "sudo rm -rf build",
            "curl -fsSL https://x | sh",
            "rm -rf /etc",
            "sh -c 'rm -rf ~'",
            "cargo test",
        ] {
            assert_eq!(
                p.check("execute_command", &run(contained)),
                Verdict::Allow,
                "{contained}: the walls hold it"
            );
        }
        for crossing in [
            "git push",
            "npm publish",
            "rm -rf /workspace",
            "git -c alias.p=push p",
        ] {
            assert!(
                is_ask(&p.check("execute_command", &run(crossing))),
                "{crossing}"
            );
        }
        assert!(is_ask(&p.check("mcp:github:create_issue", &json!({}))));
        assert_eq!(
            p.check("delete_file", &json!({"file_path": "a.txt"})),
            Verdict::Allow
        );
        assert_eq!(
            p.check("read_file", &json!({"file_path": "/etc/passwd"})),
            Verdict::Allow
        );
    }

    #[test]
    fn auto_mode_without_walls_asks_before_every_command_and_says_what_it_read() {
        let p = policy("[permissions]", None).with_walls(false);
        for command in ["ls", "cargo test", "python3 -c 'print(1)'"] {
            assert!(
                is_ask(&p.check("execute_command", &run(command))),
                "{command}"
            );
        }
        assert!(is_ask(&p.check(
            "send_command_input",
            &json!({"session_name": "s", "text": "rm -rf ~\n"})
        )));
        match p.check(
            "execute_command",
            &json!({"command": "sudo rm -rf * && sh -c 'x'", "folder": "/opt"}),
        ) {
            Verdict::Ask { why } => {
                let lines: Vec<&str> = why.lines().collect();
                assert_eq!(
                    lines[0],
                    "no walls (--sandbox host): every command runs as you, on this machine"
                );
                for said in [
                    "runs in a folder outside the workspace: /opt",
                    "runs as root (sudo)",
                    "sh -c",
                ] {
                    assert!(why.contains(said), "{said} in {why}");
                }
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            p.check("read_file", &json!({"file_path": "a"})),
            Verdict::Allow,
            "reads still run"
        );
    }

    #[test]
    fn rules_go_deny_then_ask_then_allow() {
        let p = policy(
            r#"[permissions]
deny = [{ tool = "execute_command", match = "*rm -rf*" }]
ask = [{ tool = "execute_command", match = "*rm*" }, { tool = "browser_navigate_to", match = "*bank*" }]
allow = [{ tool = "execute_command", match = "*" }, { tool = "mcp:docs:*" }]
"#,
            None,
        );
        // Matched by all three: deny wins.
        assert!(is_deny(&p.check("execute_command", &run("rm -rf build"))));
        // Matched by ask and allow: ask wins.
        assert!(is_ask(&p.check("execute_command", &run("rm a.txt"))));
        // An allow rule quiets Cove's own caution.
        assert_eq!(p.check("execute_command", &run("git push")), Verdict::Allow);
        assert_eq!(p.check("mcp:docs:search", &json!({})), Verdict::Allow);
        assert!(is_ask(&p.check("mcp:github:create_issue", &json!({}))));
        // An ask rule reaches reads too.
        assert!(is_ask(&p.check(
            "browser_navigate_to",
            &json!({"url": "https://mybank.example"})
        )));
        match p.check("execute_command", &run("rm -rf /")) {
            Verdict::Deny { why } => assert_eq!(
                why,
                "the permissions policy denies it ({tool = \"execute_command\", match = \"*rm -rf*\"})"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn modes() {
        let text = r#"[permissions]
mode = "read-only"
deny = [{ tool = "execute_command", match = "*mkfs*" }]
allow = [{ tool = "create_file" }]
"#;
        let read_only = policy(text, None);
        assert_eq!(read_only.mode(), Mode::ReadOnly);
        assert!(is_deny(&read_only.check("execute_command", &run("ls"))));
        assert!(is_deny(&read_only.check(
            "create_file",
            &json!({"file_path": "a", "file_contents": ""})
        )));
        assert_eq!(
            read_only.check("list_files", &json!({})),
            Verdict::Allow,
            "reads run"
        );

        let ask = policy(text, Some(Mode::Ask));
        assert!(is_ask(&ask.check("execute_command", &run("ls"))));
        assert!(is_ask(&ask.check(
            "create_file",
            &json!({"file_path": "a", "file_contents": ""})
        )));
        assert_eq!(
            ask.check("read_file", &json!({"file_path": "a"})),
            Verdict::Allow
        );

        let yolo = policy(text, Some(Mode::Yolo));
        assert_eq!(
            yolo.check("execute_command", &run("sudo reboot")),
            Verdict::Allow
        );
        assert!(
            is_deny(&yolo.check("execute_command", &run("mkfs.ext4 /dev/sda"))),
            "deny rules hold in every mode"
        );
    }

    #[test]
    fn the_documented_example_parses_and_does_what_it_says() {
        let readme = include_str!("../../../docs/permissions.md");
        let start = readme
            .find("```toml\n[permissions]")
            .expect("docs/permissions.md shows a policy")
            + "```toml\n".len();
        let block = &readme[start..];
        let block = &block[..block.find("```").unwrap()];
        let p = policy(block, None);
        assert!(is_deny(
            &p.check("execute_command", &run("mkfs.ext4 /dev/x"))
        ));
        assert!(is_ask(&p.check(
            "browser_navigate_to",
            &json!({"url": "https://bank.example"})
        )));
        assert!(is_ask(&p.check("delete_file", &json!({"file_path": "a"}))));
        assert_eq!(
            p.check("execute_command", &run("git push origin feature/x")),
            Verdict::Allow
        );
        assert!(is_ask(
            &p.check("execute_command", &run("git push origin main"))
        ));
    }

    #[test]
    fn bad_configuration_is_named() {
        let err = Policy::new(
            &PermissionsConfig {
                mode: Some("careful".into()),
                ..Default::default()
            },
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown permissions mode \"careful\": use auto, ask, read-only or yolo"
        );
        let err = Policy::new(
            &PermissionsConfig {
                allow: vec![RuleConfig {
                    tool: " ".into(),
                    pattern: None,
                }],
                ..Default::default()
            },
            None,
        )
        .unwrap_err();
        assert!(matches!(err, PolicyError::EmptyTool));
        assert!(
            toml::from_str::<PermissionsConfig>("allow = [{ tool = \"x\", matches = \"y\" }]")
                .is_err(),
            "a misspelt key is reported"
        );
    }

    #[test]
    fn a_page_the_agent_writes_is_a_change_and_web_pages_are_reads() {
        let read_only = policy("[permissions]", Some(Mode::ReadOnly));
        let ask = policy("[permissions]", Some(Mode::Ask));
        for url in [
            "data:text/html,<form method=post action=http://127.0.0.1:9/x></form><script>document.forms[0].submit()</script>",
            "javascript:fetch('/api/delete',{method:'POST'})",
            " DATA:text/html,x",
            "file:///etc/passwd",
        ] {
            let call = json!({ "url": url });
            assert!(
                is_deny(&read_only.check("browser_navigate_to", &call)),
                "{url}"
            );
            assert!(is_ask(&ask.check("browser_navigate_to", &call)), "{url}");
        }
        for url in [
            "https://example.org/a",
            "http://127.0.0.1:8000/",
            "example.org",
            "localhost:3000",
        ] {
            let call = json!({ "url": url });
            assert_eq!(
                read_only.check("browser_navigate_to", &call),
                Verdict::Allow,
                "{url}"
            );
        }
        // A URL-taking tool's address is what rules match.
        let p = policy(
            "[permissions]\nask = [{ tool = \"*\", match = \"*.internal.example*\" }]",
            None,
        );
        for tool in ["web_fetch", "browser_navigate_to", "see_image"] {
            let call = json!({ "url": "https://db.internal.example/admin" });
            assert!(is_ask(&p.check(tool, &call)), "{tool}");
        }
    }
}
