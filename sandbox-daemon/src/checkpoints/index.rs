//! The index: what each recorded path (files, symlinks and folders) looked like at the
//! last checkpoint, so a file whose size, times and inode are unchanged is not read again.
//! Kept beside the store in a compact binary form; a damaged one only costs a full read.

use std::collections::HashMap;

use super::tree::{Hash, Kind};

/// What a path looked like when its content was last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub kind: Kind,
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub hash: Hash,
    /// Changed so close to the scan that a later change could keep the same times: read
    /// again next time.
    pub racy: bool,
}

/// Every recorded path (files, symlinks and folders) as the last checkpoint saw it.
pub type Index = HashMap<Vec<u8>, Seen>;

/// The index's bytes.
pub fn encode_index(index: &Index) -> Vec<u8> {
    let mut out = Vec::with_capacity(index.len() * 100);
    out.extend_from_slice(b"CVI1");
    for (path, seen) in index {
        out.extend_from_slice(&(path.len() as u32).to_le_bytes());
        out.extend_from_slice(path);
        out.push(match seen.kind {
            Kind::File => 0,
            Kind::Dir => 1,
            Kind::Symlink => 2,
        });
        out.extend_from_slice(&seen.mode.to_le_bytes());
        out.extend_from_slice(&seen.size.to_le_bytes());
        out.extend_from_slice(&seen.mtime_ns.to_le_bytes());
        out.extend_from_slice(&seen.ctime_ns.to_le_bytes());
        out.extend_from_slice(&seen.ino.to_le_bytes());
        out.extend_from_slice(&seen.hash);
        out.push(u8::from(seen.racy));
    }
    out
}

/// An index from its bytes; none when they are damaged.
pub fn decode_index(mut bytes: &[u8]) -> Option<Index> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if bytes.len() < n {
            return None;
        }
        let (head, rest) = bytes.split_at(n);
        *bytes = rest;
        Some(head)
    }
    fn array<const N: usize>(bytes: &mut &[u8]) -> Option<[u8; N]> {
        take(bytes, N)?.try_into().ok()
    }
    if take(&mut bytes, 4)? != b"CVI1" {
        return None;
    }
    let mut index = Index::new();
    while !bytes.is_empty() {
        let len = u32::from_le_bytes(array(&mut bytes)?) as usize;
        let path = take(&mut bytes, len)?.to_vec();
        let kind = match take(&mut bytes, 1)?[0] {
            0 => Kind::File,
            1 => Kind::Dir,
            _ => Kind::Symlink,
        };
        let seen = Seen {
            kind,
            mode: u32::from_le_bytes(array(&mut bytes)?),
            size: u64::from_le_bytes(array(&mut bytes)?),
            mtime_ns: i64::from_le_bytes(array(&mut bytes)?),
            ctime_ns: i64::from_le_bytes(array(&mut bytes)?),
            ino: u64::from_le_bytes(array(&mut bytes)?),
            hash: array(&mut bytes)?,
            racy: take(&mut bytes, 1)?[0] != 0,
        };
        index.insert(path, seen);
    }
    Some(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoints::tree;

    #[test]
    fn the_index_reads_back_and_a_damaged_one_is_refused() {
        let mut index = Index::new();
        index.insert(
            b"a/b.txt".to_vec(),
            Seen {
                kind: Kind::File,
                mode: 0o644,
                size: 7,
                mtime_ns: 1_700_000_000_123_456_789,
                ctime_ns: 1_700_000_000_987_654_321,
                ino: 42,
                hash: tree::hash(b"content"),
                racy: true,
            },
        );
        let bytes = encode_index(&index);
        assert_eq!(decode_index(&bytes), Some(index));
        assert_eq!(decode_index(&bytes[..bytes.len() - 3]), None);
    }
}
