//! A checkpoint as a tar, and a tar taken in as a checkpoint: how a workspace moves to a
//! sandbox of another provider. What comes in is checked before anything is kept: no name
//! that leaves the workspace, no link that points out of it.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use super::CheckpointError;
use super::scan::{display, push_name};
use super::store::Store;
use super::tree::{self, Entry, Hash, Kind, Tree};

/// Writes the tree `root` as a tar to `out`.
pub fn export(store: &Store, root: &Hash, out: impl Write) -> Result<(), CheckpointError> {
    let mut builder = tar::Builder::new(out);
    builder.mode(tar::HeaderMode::Deterministic);
    let tree = store.tree(root)?;
    write_tree(store, &mut builder, &mut Vec::new(), &tree)?;
    builder
        .into_inner()
        .map_err(broken)?
        .flush()
        .map_err(broken)
}

fn broken(e: io::Error) -> CheckpointError {
    CheckpointError::ArchiveWrite(e)
}

fn write_tree<W: Write>(
    store: &Store,
    builder: &mut tar::Builder<W>,
    rel: &mut Vec<u8>,
    tree: &Tree,
) -> Result<(), CheckpointError> {
    for entry in &tree.entries {
        let cut = push_name(rel, &entry.name);
        let done = write_entry(store, builder, rel, entry);
        rel.truncate(cut);
        done?;
    }
    Ok(())
}

fn write_entry<W: Write>(
    store: &Store,
    builder: &mut tar::Builder<W>,
    rel: &mut Vec<u8>,
    entry: &Entry,
) -> Result<(), CheckpointError> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(rel));
    let mut header = tar::Header::new_gnu();
    header.set_mode(entry.mode);
    header.set_mtime(0);
    match entry.kind {
        Kind::Dir => {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_size(0);
            builder
                .append_data(&mut header, path, io::empty())
                .map_err(broken)?;
            let tree = store.tree(&entry.hash)?;
            write_tree(store, builder, rel, &tree)?;
        }
        Kind::File => {
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(entry.size);
            let object = store.open_object(&entry.hash)?;
            builder
                .append_data(&mut header, path, object)
                .map_err(broken)?;
        }
        Kind::Symlink => {
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            let target = std::path::Path::new(std::ffi::OsStr::from_bytes(&entry.target));
            builder
                .append_link(&mut header, path, target)
                .map_err(broken)?;
        }
    }
    Ok(())
}

/// A folder being built from an archive.
#[derive(Default)]
struct Folder {
    mode: u32,
    children: BTreeMap<Vec<u8>, Node>,
}

enum Node {
    Folder(Folder),
    Leaf(Entry),
}

/// What an import kept: the root tree and what it holds.
#[derive(Debug, Default)]
pub struct Imported {
    pub root: Hash,
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    pub bytes_added: u64,
}

/// Reads a tar from `input` into the store, refusing names and links that leave the
/// workspace; nothing in the workspace is touched.
pub fn import(store: &mut Store, input: impl Read) -> Result<Imported, CheckpointError> {
    store.begin_pack()?;
    match import_into(store, input) {
        Ok(imported) => {
            store.finish_pack()?;
            Ok(imported)
        }
        Err(e) => {
            store.abandon_pack();
            Err(e)
        }
    }
}

fn import_into(store: &Store, input: impl Read) -> Result<Imported, CheckpointError> {
    let mut archive = tar::Archive::new(input);
    let mut root = Folder {
        mode: 0o755,
        children: BTreeMap::new(),
    };
    let mut out = Imported::default();
    let entries = archive.entries().map_err(unreadable)?;
    for entry in entries {
        let mut entry = entry.map_err(unreadable)?;
        let raw = entry.path_bytes().into_owned();
        let Some(parts) = clean(&raw) else {
            return Err(refused(&raw, "names a path that is absolute or uses `..`"));
        };
        let mode = entry.header().mode().map_err(unreadable)? & 0o7777;
        let leaf = match entry.header().entry_type() {
            tar::EntryType::Directory => None,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.size();
                let (hash, added) = if size <= super::pack::PACKED_MAX as u64 {
                    let mut bytes = Vec::with_capacity(size as usize);
                    entry.read_to_end(&mut bytes).map_err(unreadable)?;
                    store.put_bytes(&bytes)?
                } else {
                    store.put_reader(&mut entry)?
                };
                out.bytes_added += added;
                Some(Entry {
                    name: Vec::new(),
                    kind: Kind::File,
                    mode,
                    size,
                    hash,
                    target: Vec::new(),
                })
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                if !stays_inside(&parts, &target) {
                    return Err(refused(&raw, "is a link that points out of the workspace"));
                }
                Some(Entry {
                    name: Vec::new(),
                    kind: Kind::Symlink,
                    mode: 0o777,
                    size: target.len() as u64,
                    hash: tree::hash(&target),
                    target,
                })
            }
            // Global and per-file extended headers are read by the tar reader itself.
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => continue,
            _ => return Err(refused(&raw, "is neither a file, a folder nor a symlink")),
        };
        place(&mut root, &parts, mode, leaf).map_err(|why| refused(&raw, why))?;
    }
    let (hash, bytes) = keep(store, &mut out, root)?;
    out.root = hash;
    out.bytes = bytes;
    Ok(out)
}

fn unreadable(e: io::Error) -> CheckpointError {
    CheckpointError::InvalidArchive(format!("it is not a tar this daemon can read: {e}"))
}

fn refused(raw: &[u8], why: &str) -> CheckpointError {
    CheckpointError::InvalidArchive(format!("{:?} {why}; nothing was kept", display(raw)))
}

/// The parts of a name within the workspace (`./` and empty parts dropped); none when it is
/// absolute or climbs out with `..`.
fn clean(raw: &[u8]) -> Option<Vec<Vec<u8>>> {
    if raw.starts_with(b"/") {
        return None;
    }
    let mut parts = Vec::new();
    for part in raw.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return None,
            name => parts.push(name.to_vec()),
        }
    }
    Some(parts)
}

/// Whether a link at `parts` pointing to `target` resolves inside the workspace.
fn stays_inside(parts: &[Vec<u8>], target: &[u8]) -> bool {
    if target.is_empty() || target.starts_with(b"/") {
        return false;
    }
    // The link's own folder is where its target starts.
    let mut depth = parts.len().saturating_sub(1) as i64;
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => depth += 1,
        }
    }
    true
}

/// Puts an entry (a folder when `leaf` is none) at `parts` in the tree being built.
fn place(
    root: &mut Folder,
    parts: &[Vec<u8>],
    mode: u32,
    leaf: Option<Entry>,
) -> Result<(), &'static str> {
    let Some((last, above)) = parts.split_last() else {
        // The root itself (`./`): nothing to place.
        return Ok(());
    };
    let mut folder = root;
    for part in above {
        let node = folder.children.entry(part.clone()).or_insert_with(|| {
            Node::Folder(Folder {
                mode: 0o755,
                children: BTreeMap::new(),
            })
        });
        folder = match node {
            Node::Folder(f) => f,
            Node::Leaf(_) => return Err("is beneath a file or a link"),
        };
    }
    match leaf {
        Some(mut entry) => {
            entry.name = last.clone();
            if let Some(Node::Folder(_)) = folder.children.get(last) {
                return Err("is also a folder");
            }
            folder.children.insert(last.clone(), Node::Leaf(entry));
        }
        None => match folder.children.get_mut(last) {
            Some(Node::Folder(f)) => f.mode = mode,
            Some(Node::Leaf(_)) => return Err("is also a file or a link"),
            None => {
                folder.children.insert(
                    last.clone(),
                    Node::Folder(Folder {
                        mode,
                        children: BTreeMap::new(),
                    }),
                );
            }
        },
    }
    Ok(())
}

/// Stores a built folder's trees, deepest first; its hash and its files' bytes.
fn keep(store: &Store, out: &mut Imported, folder: Folder) -> Result<(Hash, u64), CheckpointError> {
    let mut entries = Vec::with_capacity(folder.children.len());
    let mut total = 0;
    for (name, node) in folder.children {
        match node {
            Node::Folder(child) => {
                let mode = child.mode;
                let (hash, size) = keep(store, out, child)?;
                out.dirs += 1;
                total += size;
                entries.push(Entry {
                    name,
                    kind: Kind::Dir,
                    mode,
                    size,
                    hash,
                    target: Vec::new(),
                });
            }
            Node::Leaf(entry) => {
                match entry.kind {
                    Kind::File => {
                        out.files += 1;
                        total += entry.size;
                    }
                    _ => out.symlinks += 1,
                }
                entries.push(entry);
            }
        }
    }
    let (hash, added) = store.put_tree(&Tree { entries })?;
    out.bytes_added += added;
    Ok((hash, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_links_that_leave_the_workspace_are_caught() {
        assert_eq!(clean(b"./a//b/"), Some(vec![b"a".to_vec(), b"b".to_vec()]));
        assert_eq!(clean(b"/etc/passwd"), None);
        assert_eq!(clean(b"a/../../x"), None);
        assert!(stays_inside(&[b"a".to_vec(), b"link".to_vec()], b"../b"));
        assert!(!stays_inside(
            &[b"a".to_vec(), b"link".to_vec()],
            b"../../b"
        ));
        assert!(!stays_inside(&[b"link".to_vec()], b"/etc"));
        assert!(stays_inside(&[b"link".to_vec()], b"x/../y"));
    }
}
