//! `.coveignore` at the workspace root: paths checkpoints leave out, in gitignore syntax.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::CheckpointError;

/// The file's name, at the workspace root.
pub const FILE: &str = ".coveignore";

/// The rules of one `.coveignore`.
pub struct Ignore {
    rules: Option<Gitignore>,
    /// Its patterns, as written (comments and blank lines left out).
    pub patterns: Vec<String>,
}

impl Ignore {
    /// Nothing left out.
    pub fn none() -> Ignore {
        Ignore {
            rules: None,
            patterns: Vec::new(),
        }
    }

    /// The rules of `root/.coveignore` (none when there is no such file).
    pub fn load(root: &Path) -> Result<Ignore, CheckpointError> {
        let path = root.join(FILE);
        let text = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => std::fs::read_to_string(&path)
                .map_err(|e| CheckpointError::BadIgnore(e.to_string()))?,
            _ => return Ok(Ignore::none()),
        };
        Ignore::parse(root, &text)
    }

    /// The rules of a `.coveignore` whose text is `text`.
    pub fn parse(root: &Path, text: &str) -> Result<Ignore, CheckpointError> {
        let mut builder = GitignoreBuilder::new(root);
        let mut patterns = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let trimmed = line.trim_end();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            builder
                .add_line(None, trimmed)
                .map_err(|e| CheckpointError::BadIgnore(format!("line {}: {e}", n + 1)))?;
            patterns.push(trimmed.to_string());
        }
        let rules = builder
            .build()
            .map_err(|e| CheckpointError::BadIgnore(e.to_string()))?;
        Ok(Ignore {
            rules: (!patterns.is_empty()).then_some(rules),
            patterns,
        })
    }

    /// Whether the path `rel` (from the workspace root) is left out.
    pub fn ignores(&self, rel: &[u8], is_dir: bool) -> bool {
        match &self.rules {
            Some(rules) => rules
                .matched(Path::new(OsStr::from_bytes(rel)), is_dir)
                .is_ignore(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_syntax_leaves_paths_out() {
        let root = Path::new("/w");
        let rules = Ignore::parse(
            root,
            "# caches\nnode_modules/\n*.log\n!keep.log\n/build\n\ntarget/debug\n",
        )
        .unwrap();
        assert_eq!(
            rules.patterns,
            [
                "node_modules/",
                "*.log",
                "!keep.log",
                "/build",
                "target/debug"
            ]
        );
        assert!(rules.ignores(b"node_modules", true));
        assert!(
            !rules.ignores(b"node_modules", false),
            "a file of that name stays"
        );
        assert!(rules.ignores(b"web/node_modules", true));
        assert!(rules.ignores(b"a/b/x.log", false));
        assert!(!rules.ignores(b"keep.log", false));
        assert!(rules.ignores(b"build", true));
        assert!(!rules.ignores(b"src/build", true), "anchored to the root");
        assert!(rules.ignores(b"target/debug", true));
        assert!(!Ignore::none().ignores(b"anything", false));
    }
}
