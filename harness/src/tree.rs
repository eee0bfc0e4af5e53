//! A folder's whole tree as the checkpoint tests compare it: every path with its kind,
//! permission bits and content (short text as itself, else its length and a hash) or link
//! target, links never followed.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Path → (`f`ile, `d`ir or `l`ink, mode, content or target).
pub type Tree = BTreeMap<String, (char, u32, String)>;

/// Content as a test shows it: short text as itself, else its length and a hash.
fn summary(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if text.len() <= 64 => text.to_string(),
        _ => {
            let mut h = DefaultHasher::new();
            h.write(bytes);
            format!("{} bytes #{:016x}", bytes.len(), h.finish())
        }
    }
}

/// Every path under `root` (read as its owner or root reads it: a file of mode 000 still
/// has content to compare). Panics on what it cannot read: a test's tree must be whole.
pub fn tree(root: &Path) -> Tree {
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Tree) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let meta =
            std::fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mode = meta.mode() & 0o7777;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).unwrap_or_default();
            out.insert(rel, ('l', 0, target.to_string_lossy().into_owned()));
        } else if meta.is_dir() {
            out.insert(rel, ('d', mode, String::new()));
            walk(root, &path, out);
        } else {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.insert(rel, ('f', mode, summary(&bytes)));
        }
    }
}
