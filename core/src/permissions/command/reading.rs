//! One reading of a command line, simple command by simple command: what each risks, where
//! its relative paths start (the workspace, the call's folder, where the shell was left, or
//! where a `cd` earlier in the line moved it), and whether any path it judged was relative.

use std::path::{Path, PathBuf};

use super::{
    DELETERS, DOWNLOADERS, OVERWRITERS, Place, Program, Risk, RiskKind, SHELLS, Simple,
    destroyed_paths, expand_braces, lexical, place, program, publish_of, runs_a_string,
    simple_commands,
};

/// The reading in progress.
pub(super) struct Reading<'a> {
    workspace: Option<&'a Path>,
    found: Vec<Risk>,
    /// A path judged was relative: where it lies depends on where the shell is.
    relative: bool,
    /// Where relative paths start now: a `cd` earlier in the command moves it.
    here_dir: Option<PathBuf>,
}

impl<'a> Reading<'a> {
    /// The risks of `command` run in `folder` (or where the shell was left, `shell_dir`, or
    /// the workspace), and whether any path it judged was relative.
    pub(super) fn of(
        command: &str,
        workspace: Option<&'a Path>,
        folder: Option<&str>,
        shell_dir: Option<&str>,
    ) -> (Vec<Risk>, bool) {
        let mut reading = Reading {
            workspace,
            found: Vec::new(),
            relative: false,
            here_dir: None,
        };
        reading.here_dir = reading.start(folder, shell_dir);
        reading.whole_line(command);
        let commands = simple_commands(command);
        // Whether a command earlier in the current pipeline downloads.
        let mut pipeline_downloads = false;
        for (i, simple) in commands.iter().enumerate() {
            if !simple.piped_in {
                pipeline_downloads = false;
            }
            let Some(prog) = program(&simple.words) else {
                continue;
            };
            if prog.as_root {
                reading.note(RiskKind::Root, "runs as root (sudo)".into(), None);
            }
            reading.downloads(&commands, i, &prog, pipeline_downloads);
            pipeline_downloads |= DOWNLOADERS.contains(&prog.name);
            reading.runs_text(&prog);
            if prog.name == "alias" || prog.name == "function" {
                reading.note(
                    RiskKind::CannotTell,
                    "defines an alias or a function that later commands may run".into(),
                    None,
                );
            }
            reading.moves_the_shell(&prog);
            if let Some(sub) = publish_of(&prog) {
                reading.note(RiskKind::Publish, sub, None);
            }
            reading.deletions(&commands, i, simple, &prog);
            reading.redirects(simple);
        }
        (reading.found, reading.relative)
    }

    /// Notes a risk once.
    fn note(&mut self, kind: RiskKind, text: String, path: Option<PathBuf>) {
        if !self.found.iter().any(|r| r.text == text) {
            self.found.push(Risk { kind, text, path });
        }
    }

    /// Where a path read from where the shell is now lies, noting a relative one.
    fn judge(&mut self, path: &str) -> Place {
        if !(path.starts_with('/') || path.starts_with('~') || path.starts_with('$')) {
            self.relative = true;
        }
        place(path, self.here_dir.as_deref(), self.workspace)
    }

    /// Where a path the command names lies, when the words tell.
    fn at(&self, path: &str) -> Option<PathBuf> {
        lexical(path, self.here_dir.as_deref().unwrap_or(Path::new("/")))
            .filter(|p| p.is_absolute())
    }

    /// Where relative paths start: the folder the call names, else where an earlier
    /// command left the shell, else the workspace; a start outside the workspace is a risk.
    fn start(&mut self, folder: Option<&str>, shell_dir: Option<&str>) -> Option<PathBuf> {
        let workspace = self.workspace;
        if let Some(f) = folder.filter(|f| !f.is_empty()) {
            if place(&cove_tools::workspace_path(f), None, workspace).is_outside() {
                self.note(
                    RiskKind::Outside,
                    format!("runs in a folder outside the workspace: {f}"),
                    None,
                );
            }
            // As the shell tool reads it: `/workspace/...` is the workspace's own.
            return workspace.map(|w| w.join(cove_tools::workspace_path(f)));
        }
        match shell_dir.filter(|d| d.starts_with('/')) {
            Some(d) => {
                if place(d, None, workspace).is_outside() {
                    self.note(
                        RiskKind::Outside,
                        format!(
                            "runs where an earlier command left the shell, outside the workspace: {d}"
                        ),
                        None,
                    );
                }
                Some(PathBuf::from(d))
            }
            None => workspace.map(Path::to_path_buf),
        }
    }

    /// What the line as a whole hides from a reading word by word.
    fn whole_line(&mut self, command: &str) {
        if command.contains("()") {
            self.note(
                RiskKind::CannotTell,
                "defines an alias or a function that later commands may run".into(),
                None,
            );
        }
        if command.contains("$'") {
            self.note(
                RiskKind::CannotTell,
                "spells words in escapes ($'…'), which Cove cannot read".into(),
                None,
            );
        }
    }

    /// A shell that runs what a download brought: piped into it (`pipeline_downloads`), or
    /// inside its words (`bash <(curl …)`, `sh -c "$(curl …)"`).
    fn downloads(
        &mut self,
        commands: &[Simple],
        i: usize,
        prog: &Program<'_>,
        pipeline_downloads: bool,
    ) {
        if !SHELLS.contains(&prog.name) {
            return;
        }
        if pipeline_downloads {
            self.note(
                RiskKind::Download,
                "runs code downloaded from the network (a download piped into a shell)".into(),
                None,
            );
        }
        let next_downloads = commands.get(i + 1).is_some_and(|next| {
            next.substituted && program(&next.words).is_some_and(|p| DOWNLOADERS.contains(&p.name))
        });
        let quoted_download = prog.args.iter().any(|a| {
            DOWNLOADERS
                .iter()
                .any(|d| a.contains(&format!("$({d} ")) || a.contains(&format!("`{d} ")))
        });
        if next_downloads || quoted_download {
            self.note(
                RiskKind::Download,
                "runs code downloaded from the network".into(),
                None,
            );
        }
    }

    /// Code given as text (`sh -c`, `python3 -c`, `eval`), which no reading can see into;
    /// what it runs may reach the world, which is said where walls would otherwise hold it.
    fn runs_text(&mut self, prog: &Program<'_>) {
        let Some(how) = runs_a_string(prog) else {
            return;
        };
        self.note(
            RiskKind::CannotTell,
            format!("runs code it is given as text ({how}), which Cove cannot read"),
            None,
        );
        let text = prog.args.join(" ");
        if ["push", "publish", "upload", "deploy"]
            .iter()
            .any(|verb| text.contains(verb))
        {
            self.note(
                RiskKind::Publish,
                format!("may send work out of the sandbox from the text it runs ({how})"),
                None,
            );
        }
    }

    /// A `cd` (or `pushd`): outside the workspace is a risk, and later paths start there.
    fn moves_the_shell(&mut self, prog: &Program<'_>) {
        if !(prog.name == "cd" || prog.name == "pushd") {
            return;
        }
        let Some(dir) = prog.args.iter().find(|a| !a.starts_with('-')) else {
            return;
        };
        if self.judge(dir).is_outside() {
            self.note(
                RiskKind::Outside,
                format!("moves the shell to a folder outside the workspace: {dir}"),
                None,
            );
        }
        if let Some(moved) = self.here_dir.as_deref().and_then(|from| lexical(dir, from)) {
            self.here_dir = Some(moved);
        }
    }

    /// What the command deletes or overwrites: paths printed by another command, each path
    /// it names (by where it lies), and paths it reads from its input.
    fn deletions(&mut self, commands: &[Simple], i: usize, simple: &Simple, prog: &Program<'_>) {
        let deletes = DELETERS.contains(&prog.name) || OVERWRITERS.contains(&prog.name);
        let before = i.checked_sub(1).and_then(|b| program(&commands[b].words));
        if simple.substituted
            && before.is_some_and(|b| DELETERS.contains(&b.name) || OVERWRITERS.contains(&b.name))
        {
            self.note(
                RiskKind::CannotTell,
                "deletes paths another command prints ($(…)), which Cove cannot read".into(),
                None,
            );
        }
        for path in destroyed_paths(prog) {
            for path in expand_braces(&path) {
                self.deletion(prog, &path);
            }
        }
        if deletes && prog.args_from_input {
            self.note(
                RiskKind::Outside,
                format!("deletes paths it reads from its input ({})", prog.name),
                None,
            );
        }
    }

    /// One path the command deletes or overwrites, by where it lies.
    fn deletion(&mut self, prog: &Program<'_>, path: &str) {
        match self.judge(path) {
            Place::Inside => {}
            // `find . -delete` deletes what it matches, not the workspace.
            Place::Workspace if prog.name == "find" => {}
            Place::Workspace => self.note(
                RiskKind::Workspace,
                format!("deletes the whole workspace: {path}"),
                None,
            ),
            Place::Outside => {
                let at = self.at(path);
                self.note(
                    RiskKind::Outside,
                    format!("deletes or overwrites outside the workspace: {path}"),
                    at,
                );
            }
            Place::Holder => {
                let at = self.at(path);
                self.note(
                    RiskKind::Outside,
                    format!("deletes or overwrites outside the workspace: {path}"),
                    at,
                );
                // `find / -name x -delete` deletes what it matches.
                if prog.name != "find" {
                    self.note(
                        RiskKind::Workspace,
                        format!("deletes the whole workspace with {path}"),
                        None,
                    );
                }
            }
        }
    }

    /// Output redirected to a file outside the workspace.
    fn redirects(&mut self, simple: &Simple) {
        let pairs = simple
            .words
            .iter()
            .zip(simple.words.iter().skip(1).map(Some).chain([None]));
        for (word, next) in pairs {
            let target = match word.as_str() {
                ">" | ">>" | ">|" => next.map_or("", String::as_str),
                _ => word
                    .strip_prefix(">>")
                    .or_else(|| word.strip_prefix('>'))
                    .unwrap_or(""),
            };
            if !target.is_empty()
                && !target.starts_with('&')
                && target != "/dev/null"
                && self.judge(target).is_outside()
            {
                let at = self.at(target);
                self.note(
                    RiskKind::Outside,
                    format!("writes outside the workspace: {target}"),
                    at,
                );
            }
        }
    }
}
