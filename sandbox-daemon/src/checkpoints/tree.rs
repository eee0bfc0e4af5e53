//! A folder as the store keeps it: its entries, sorted by name, encoded in one object whose
//! hash names it. Unchanged folders keep their hash, so a checkpoint shares them with the
//! one before.

/// A BLAKE3 hash, naming an object by its content.
pub type Hash = [u8; 32];

const MAGIC: &[u8; 4] = b"CVT1";

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::File => 0,
            Kind::Dir => 1,
            Kind::Symlink => 2,
        }
    }

    fn from_byte(b: u8) -> Option<Kind> {
        match b {
            0 => Some(Kind::File),
            1 => Some(Kind::Dir),
            2 => Some(Kind::Symlink),
            _ => None,
        }
    }
}

/// One entry of a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name's bytes (a Unix name need not be UTF-8).
    pub name: Vec<u8>,
    pub kind: Kind,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    /// A file's length; a symlink's target length; a folder's files' bytes, all levels.
    pub size: u64,
    /// A file's content, a folder's tree, a symlink's target.
    pub hash: Hash,
    /// A symlink's target (empty for the others).
    pub target: Vec<u8>,
}

/// A folder's entries, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    pub entries: Vec<Entry>,
}

/// A tree object that does not decode: the store is damaged.
#[derive(Debug, thiserror::Error)]
#[error("a folder object in the checkpoint store is damaged ({0})")]
pub struct Damaged(pub &'static str);

impl Tree {
    /// The entry named `name`.
    pub fn get(&self, name: &[u8]) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.name.as_slice().cmp(name))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The names of this tree and `other` together, sorted, each once.
    pub fn names_with<'a>(&'a self, other: &'a Tree) -> Vec<&'a [u8]> {
        let mut names: Vec<&[u8]> = self
            .entries
            .iter()
            .chain(&other.entries)
            .map(|e| e.name.as_slice())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The bytes stored for it.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.entries.len() * 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            out.push(e.kind.byte());
            out.extend_from_slice(&e.mode.to_le_bytes());
            out.extend_from_slice(&e.size.to_le_bytes());
            out.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
            out.extend_from_slice(&e.name);
            out.extend_from_slice(&e.hash);
            if e.kind == Kind::Symlink {
                out.extend_from_slice(&(e.target.len() as u32).to_le_bytes());
                out.extend_from_slice(&e.target);
            }
        }
        out
    }

    /// Reads what [`Tree::encode`] wrote.
    pub fn decode(bytes: &[u8]) -> Result<Tree, Damaged> {
        let mut r = Reader(bytes);
        if r.take(4)? != MAGIC {
            return Err(Damaged("not a folder object"));
        }
        let count = u32::from_le_bytes(r.array()?) as usize;
        let mut entries = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            let kind = Kind::from_byte(r.take(1)?[0]).ok_or(Damaged("unknown entry kind"))?;
            let mode = u32::from_le_bytes(r.array()?);
            let size = u64::from_le_bytes(r.array()?);
            let name_len = u16::from_le_bytes(r.array()?) as usize;
            let name = r.take(name_len)?.to_vec();
            // A restore opens entries by name beneath their folder: a name that is empty, a
            // step up or a path of its own would reach out of it (a store tampered with).
            if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
                return Err(Damaged("an entry's name is not a name"));
            }
            let hash: Hash = r.array()?;
            let target = if kind == Kind::Symlink {
                let len = u32::from_le_bytes(r.array()?) as usize;
                r.take(len)?.to_vec()
            } else {
                Vec::new()
            };
            entries.push(Entry {
                name,
                kind,
                mode,
                size,
                hash,
                target,
            });
        }
        Ok(Tree { entries })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Damaged> {
        if self.0.len() < n {
            return Err(Damaged("cut short"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Damaged> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
}

/// The hash of some bytes.
pub fn hash(bytes: &[u8]) -> Hash {
    *blake3::hash(bytes).as_bytes()
}

/// A hash as 64 hex digits.
pub fn hex(hash: &Hash) -> String {
    use std::fmt::Write as _;
    hash.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// 64 hex digits as a hash.
pub fn from_hex(text: &str) -> Option<Hash> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0; 32];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        let digits = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_reads_back_as_written() {
        let tree = Tree {
            entries: vec![
                Entry {
                    name: b"a.txt".to_vec(),
                    kind: Kind::File,
                    mode: 0o644,
                    size: 3,
                    hash: hash(b"abc"),
                    target: vec![],
                },
                Entry {
                    name: b"link".to_vec(),
                    kind: Kind::Symlink,
                    mode: 0o777,
                    size: 5,
                    hash: hash(b"a.txt"),
                    target: b"a.txt".to_vec(),
                },
            ],
        };
        let bytes = tree.encode();
        assert_eq!(Tree::decode(&bytes).unwrap(), tree);
        assert!(Tree::decode(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(tree.get(b"link").unwrap().target, b"a.txt");
        assert!(tree.get(b"nope").is_none());
        for bad in [&b".."[..], b"a/b", b""] {
            let mut evil = tree.clone();
            evil.entries[0].name = bad.to_vec();
            assert!(Tree::decode(&evil.encode()).is_err(), "{bad:?}");
        }
        let h = hash(b"x");
        assert_eq!(from_hex(&hex(&h)), Some(h));
        assert_eq!(from_hex("zz"), None);
    }
}
