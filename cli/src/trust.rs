//! Whether a run uses the settings of the folder it starts in (`.mcp.json`, `.cove/`):
//! trusted before, as they are now; `--trust` (remembered); or a yes from the person at the
//! terminal, who is shown what they would run. Otherwise they are left out, and said so.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Invocation;
use cove_core::mcp::Transport;
use cove_core::session;
use cove_core::trust::{self, ProjectSettings};

/// Set by `cove serve`: its runs never ask at the terminal it was started from (a run would
/// hold the server until someone answered there).
static NEVER_ASK: AtomicBool = AtomicBool::new(false);
/// Set once the person said no: not asked again in this process.
static DECLINED: AtomicBool = AtomicBool::new(false);

/// Runs of this process never ask whether to trust the folder.
pub(super) fn never_ask() {
    NEVER_ASK.store(true, Ordering::SeqCst);
}

/// Whether this run uses the current folder's settings, as they are now (checked at every
/// run: settings changed since they were trusted are not).
pub(super) fn project_trusted(inv: &Invocation, trust_flag: bool, may_ask: bool) -> bool {
    let may_ask = may_ask && !NEVER_ASK.load(Ordering::SeqCst) && !DECLINED.load(Ordering::SeqCst);
    decide(inv, trust_flag, may_ask)
}

fn decide(inv: &Invocation, trust_flag: bool, may_ask: bool) -> bool {
    let (yes, said) = session::project_trust(trust_flag, |settings| {
        (may_ask && !inv.printer.json() && std::io::stdin().is_terminal()).then(|| ask(settings))
    });
    // A no, or nobody there to say yes: not asked again in this process.
    if !yes && may_ask {
        DECLINED.store(true, Ordering::SeqCst);
    }
    inv.printer.say(said.as_slice());
    yes
}

/// Shows the person what the folder's settings would do and asks.
fn ask(settings: &ProjectSettings) -> bool {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "\n? {} has settings of its own. Trusting it lets them:",
        settings.dir.display()
    );
    let files: Vec<PathBuf> = trust::PROJECT_MCP_FILES
        .iter()
        .map(|f| settings.dir.join(f))
        .collect();
    // Read without expanding anything: the person sees what is written.
    let (servers, _) = cove_core::mcp::config::load(&files, &|_| Some(String::new()));
    for server in &servers {
        let what = match &server.transport {
            Transport::Stdio { command, args, .. } => {
                format!("run `{} {}` on this machine", command, args.join(" "))
            }
            Transport::Http { url, .. } => format!("connect to {url}"),
        };
        let _ = writeln!(err, "  - MCP server {}: {what}", server.name);
    }
    let skills: Vec<&String> = settings
        .files
        .iter()
        .filter(|f| f.starts_with(trust::PROJECT_SKILLS))
        .collect();
    if !skills.is_empty() {
        let _ = writeln!(
            err,
            "  - give the agent the instructions in {} file(s) under {}",
            skills.len(),
            trust::PROJECT_SKILLS
        );
    }
    let _ = write!(err, "Trust this folder? [y/N] ");
    let _ = err.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
}
