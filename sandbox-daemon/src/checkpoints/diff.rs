//! What differs between two recorded points: paths added, changed and deleted, with unified
//! diffs of text files, capped so an answer stays readable.

use cove_protocol::checkpoints::{Change, CheckpointDiff, EntryKind, PathChange};

use super::CheckpointError;
use super::scan::{display, push_name};
use super::store::Store;
use super::tree::{Entry, Hash, Kind, Tree};

/// Most paths listed.
const MAX_CHANGES: usize = 2_000;
/// Largest file (each side) a diff is made of.
const MAX_DIFF_INPUT: u64 = 512 * 1024;
/// Most characters of one file's diff.
const MAX_DIFF_CHARS: usize = 16 * 1024;
/// Most characters of all diffs together.
const MAX_DIFFS_CHARS: usize = 128 * 1024;

/// The differences from tree `from` to tree `to`.
pub fn diff(
    store: &Store,
    from: (&str, &Hash),
    to: (&str, &Hash),
) -> Result<CheckpointDiff, CheckpointError> {
    let mut differ = Differ {
        store,
        out: CheckpointDiff {
            from: from.0.to_string(),
            to: to.0.to_string(),
            added: 0,
            changed: 0,
            deleted: 0,
            changes: Vec::new(),
            truncated: false,
        },
        budget: MAX_DIFFS_CHARS,
    };
    if from.1 != to.1 {
        let a = store.tree(from.1)?;
        let b = store.tree(to.1)?;
        differ.dir(&mut Vec::new(), &a, &b)?;
    }
    Ok(differ.out)
}

struct Differ<'a> {
    store: &'a Store,
    out: CheckpointDiff,
    /// Characters of diff text still allowed.
    budget: usize,
}

fn kind(kind: Kind) -> EntryKind {
    match kind {
        Kind::File => EntryKind::File,
        Kind::Dir => EntryKind::Dir,
        Kind::Symlink => EntryKind::Symlink,
    }
}

fn octal(e: Option<&Entry>) -> Option<String> {
    e.map(|e| format!("{:04o}", e.mode))
}

impl Differ<'_> {
    fn dir(&mut self, rel: &mut Vec<u8>, a: &Tree, b: &Tree) -> Result<(), CheckpointError> {
        for name in a.names_with(b) {
            let cut = push_name(rel, name);
            let done = self.entry(rel, a.get(name), b.get(name));
            rel.truncate(cut);
            done?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        rel: &mut Vec<u8>,
        a: Option<&Entry>,
        b: Option<&Entry>,
    ) -> Result<(), CheckpointError> {
        match (a, b) {
            (Some(a), Some(b)) if a.kind == b.kind => {
                if a.hash == b.hash && a.mode == b.mode {
                    return Ok(());
                }
                if a.kind == Kind::Dir {
                    if a.mode != b.mode {
                        self.push(rel, Change::Changed, Some(a), Some(b))?;
                    }
                    if a.hash != b.hash {
                        let (ta, tb) = (self.store.tree(&a.hash)?, self.store.tree(&b.hash)?);
                        self.dir(rel, &ta, &tb)?;
                    }
                    return Ok(());
                }
                self.push(rel, Change::Changed, Some(a), Some(b))
            }
            (Some(a), Some(b)) => {
                // Its kind changed: the old thing went, the new one came.
                self.gone(rel, a)?;
                self.came(rel, b)
            }
            (Some(a), None) => self.gone(rel, a),
            (None, Some(b)) => self.came(rel, b),
            (None, None) => Ok(()),
        }
    }

    fn came(&mut self, rel: &mut Vec<u8>, b: &Entry) -> Result<(), CheckpointError> {
        self.push(rel, Change::Added, None, Some(b))?;
        if b.kind == Kind::Dir {
            let tree = self.store.tree(&b.hash)?;
            self.dir(rel, &Tree::default(), &tree)?;
        }
        Ok(())
    }

    fn gone(&mut self, rel: &mut Vec<u8>, a: &Entry) -> Result<(), CheckpointError> {
        self.push(rel, Change::Deleted, Some(a), None)?;
        if a.kind == Kind::Dir {
            let tree = self.store.tree(&a.hash)?;
            self.dir(rel, &tree, &Tree::default())?;
        }
        Ok(())
    }

    fn push(
        &mut self,
        rel: &[u8],
        change: Change,
        a: Option<&Entry>,
        b: Option<&Entry>,
    ) -> Result<(), CheckpointError> {
        match change {
            Change::Added => self.out.added += 1,
            Change::Changed => self.out.changed += 1,
            Change::Deleted => self.out.deleted += 1,
        }
        if self.out.changes.len() >= MAX_CHANGES {
            self.out.truncated = true;
            return Ok(());
        }
        let Some(shown) = b.or(a) else {
            return Ok(());
        };
        let (binary, diff) = match (change, shown.kind) {
            (Change::Deleted, _) | (_, Kind::Dir) => (false, None),
            (_, Kind::Symlink) => {
                let before = a.map(|a| display(&a.target));
                let after = display(&shown.target);
                let text = match before {
                    Some(before) if before != after => format!("-> {before}\n+> {after}\n"),
                    _ => format!("+> {after}\n"),
                };
                (false, Some(text))
            }
            (_, Kind::File) => self.text_diff(rel, a.filter(|a| a.kind == Kind::File), shown)?,
        };
        self.out.changes.push(PathChange {
            path: display(rel),
            change,
            kind: kind(shown.kind),
            mode_from: octal(a),
            mode_to: octal(b),
            binary,
            diff,
        });
        Ok(())
    }

    /// Whether the file is binary, and its diff when it is text and within the caps.
    fn text_diff(
        &mut self,
        rel: &[u8],
        a: Option<&Entry>,
        b: &Entry,
    ) -> Result<(bool, Option<String>), CheckpointError> {
        if a.is_some_and(|a| a.hash == b.hash) {
            return Ok((false, None));
        }
        if b.size > MAX_DIFF_INPUT || a.is_some_and(|a| a.size > MAX_DIFF_INPUT) {
            self.out.truncated = true;
            return Ok((false, None));
        }
        let new = self.store.read_object(&b.hash)?;
        let old = match a {
            Some(a) => self.store.read_object(&a.hash)?,
            None => Vec::new(),
        };
        let (Some(new), Some(old)) = (text(&new), text(&old)) else {
            return Ok((true, None));
        };
        if self.budget == 0 {
            self.out.truncated = true;
            return Ok((false, None));
        }
        let path = display(rel);
        let mut diff = similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        let cap = MAX_DIFF_CHARS.min(self.budget);
        if diff.len() > cap {
            let mut cut = cap;
            while !diff.is_char_boundary(cut) {
                cut -= 1;
            }
            diff.truncate(cut);
            diff.push_str("\n… (diff cut)\n");
            self.out.truncated = true;
        }
        self.budget = self.budget.saturating_sub(diff.len());
        Ok((false, Some(diff)))
    }
}

/// Bytes as text, when they are UTF-8 with no NUL.
fn text(bytes: &[u8]) -> Option<&str> {
    if bytes.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}
