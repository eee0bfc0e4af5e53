//! Packs: small objects written one after another into one file per scan, with an index of
//! where each is. Ten thousand small files become one file of the store, not ten thousand:
//! creating files, not copying bytes, is what a filesystem under load is slow at.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::tree::Hash;

/// Objects up to this size are packed; larger ones are files of their own (cloned or
/// copied whole on restore).
pub const PACKED_MAX: usize = 256 * 1024;

const INDEX_MAGIC: &[u8; 4] = b"CVP1";

/// Where a packed object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub pack: u64,
    pub offset: u64,
    pub len: u64,
}

/// The finished packs: every packed object's place.
#[derive(Debug, Default)]
pub struct Packs {
    pub index: HashMap<Hash, Loc>,
    /// Each pack's size in bytes.
    pub sizes: HashMap<u64, u64>,
}

/// A pack put in place: its number, where each object is, its size.
#[derive(Debug)]
pub struct Finished {
    pub id: u64,
    pub entries: Vec<(Hash, u64, u64)>,
    pub size: u64,
}

/// The pack a scan is writing.
#[derive(Debug)]
pub struct PackWriter {
    pub id: u64,
    file: File,
    temp: PathBuf,
    offset: u64,
    entries: Vec<(Hash, u64, u64)>,
    written: HashSet<Hash>,
}

fn pack_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id}.pack"))
}

fn index_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id}.idx"))
}

impl Packs {
    /// Reads every pack's index in `dir`; packs without one (a scan cut short) and
    /// temporary files are removed.
    pub fn load(dir: &Path) -> io::Result<Packs> {
        fs::create_dir_all(dir)?;
        let mut packs = Packs::default();
        let mut orphans = Vec::new();
        for entry in fs::read_dir(dir)?.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(id) = name
                .strip_suffix(".idx")
                .and_then(|n| n.parse::<u64>().ok())
            {
                let bytes = fs::read(&path)?;
                let Some(entries) = decode_index(&bytes) else {
                    orphans.push(path);
                    continue;
                };
                for (hash, offset, len) in entries {
                    packs.index.insert(
                        hash,
                        Loc {
                            pack: id,
                            offset,
                            len,
                        },
                    );
                }
                let size = fs::metadata(pack_path(dir, id))
                    .map(|m| m.len())
                    .unwrap_or(0);
                packs.sizes.insert(id, size);
            } else if name.ends_with(".pack") {
                let id = name.trim_end_matches(".pack").parse::<u64>().ok();
                if id.is_none_or(|id| !index_path(dir, id).exists()) {
                    orphans.push(path);
                }
            } else {
                orphans.push(path);
            }
        }
        for path in orphans {
            let _ = fs::remove_file(path);
        }
        Ok(packs)
    }

    /// The next pack's number.
    pub fn next_id(&self) -> u64 {
        self.sizes.keys().max().map_or(1, |id| id + 1)
    }

    /// Bytes of every pack.
    pub fn bytes(&self) -> u64 {
        self.sizes.values().sum()
    }

    /// A packed object's bytes.
    pub fn read(&self, dir: &Path, loc: Loc) -> io::Result<Vec<u8>> {
        let file = File::open(pack_path(dir, loc.pack))?;
        let mut bytes = vec![0; loc.len as usize];
        file.read_exact_at(&mut bytes, loc.offset)?;
        Ok(bytes)
    }

    /// A packed object as a reader.
    pub fn reader(&self, dir: &Path, loc: Loc) -> io::Result<io::Take<File>> {
        let mut file = File::open(pack_path(dir, loc.pack))?;
        file.seek(SeekFrom::Start(loc.offset))?;
        Ok(file.take(loc.len))
    }

    /// Keeps only the objects `live` names: packs with nothing live go, packs with some
    /// dead objects are written again with the live ones; bytes freed.
    pub fn sweep(&mut self, dir: &Path, live: &HashSet<Hash>) -> io::Result<u64> {
        let mut by_pack: HashMap<u64, Vec<(Hash, Loc)>> = HashMap::new();
        for (hash, loc) in &self.index {
            by_pack.entry(loc.pack).or_default().push((*hash, *loc));
        }
        let mut freed = 0;
        let mut next = self.next_id();
        for (id, objects) in by_pack {
            if objects.iter().all(|(h, _)| live.contains(h)) {
                continue;
            }
            let old_size = self.sizes.get(&id).copied().unwrap_or(0);
            let keep: Vec<_> = objects.iter().filter(|(h, _)| live.contains(h)).collect();
            if !keep.is_empty() {
                let mut writer = PackWriter::begin(dir, next)?;
                next += 1;
                for (hash, loc) in &keep {
                    let bytes = self.read(dir, *loc)?;
                    writer.append(*hash, &bytes)?;
                }
                let done = writer.finish(dir)?;
                for (hash, offset, len) in done.entries {
                    self.index.insert(
                        hash,
                        Loc {
                            pack: done.id,
                            offset,
                            len,
                        },
                    );
                }
                self.sizes.insert(done.id, done.size);
                freed += old_size.saturating_sub(done.size);
            } else {
                freed += old_size;
            }
            // The live ones now point into the new pack.
            for (hash, _) in &objects {
                if !live.contains(hash) {
                    self.index.remove(hash);
                }
            }
            self.sizes.remove(&id);
            let _ = fs::remove_file(index_path(dir, id));
            let _ = fs::remove_file(pack_path(dir, id));
        }
        Ok(freed)
    }
}

impl PackWriter {
    /// Starts pack `id` in `dir` (under a temporary name until it is finished).
    pub fn begin(dir: &Path, id: u64) -> io::Result<PackWriter> {
        let temp = dir.join(format!(".tmp-{}-{id}.pack", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)?;
        Ok(PackWriter {
            id,
            file,
            temp,
            offset: 0,
            entries: Vec::new(),
            written: HashSet::new(),
        })
    }

    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// Whether this pack already holds `hash`.
    pub fn holds(&self, hash: &Hash) -> bool {
        self.written.contains(hash)
    }

    /// Appends an object; false when it was already in this pack.
    pub fn append(&mut self, hash: Hash, bytes: &[u8]) -> io::Result<bool> {
        if !self.written.insert(hash) {
            return Ok(false);
        }
        self.file.write_all(bytes)?;
        self.entries.push((hash, self.offset, bytes.len() as u64));
        self.offset += bytes.len() as u64;
        Ok(true)
    }

    /// The bytes of an object appended to this pack, before it is finished.
    pub fn read(&self, hash: &Hash) -> Option<io::Result<Vec<u8>>> {
        let (_, offset, len) = self.entries.iter().find(|(h, _, _)| h == hash)?;
        let mut bytes = vec![0; *len as usize];
        Some(self.file.read_exact_at(&mut bytes, *offset).map(|()| bytes))
    }

    /// Puts the pack and its index in place (the index last: a pack counts only with it);
    /// its id, entries and size. An empty pack leaves nothing.
    pub fn finish(self, dir: &Path) -> io::Result<Finished> {
        if self.entries.is_empty() {
            let _ = fs::remove_file(&self.temp);
            return Ok(Finished {
                id: self.id,
                entries: Vec::new(),
                size: 0,
            });
        }
        drop(self.file);
        fs::rename(&self.temp, pack_path(dir, self.id))?;
        let mut index = Vec::with_capacity(4 + self.entries.len() * 48);
        index.extend_from_slice(INDEX_MAGIC);
        for (hash, offset, len) in &self.entries {
            index.extend_from_slice(hash);
            index.extend_from_slice(&offset.to_le_bytes());
            index.extend_from_slice(&len.to_le_bytes());
        }
        let temp = dir.join(format!(".tmp-{}-{}.idx", std::process::id(), self.id));
        fs::write(&temp, &index)?;
        fs::rename(&temp, index_path(dir, self.id))?;
        Ok(Finished {
            id: self.id,
            entries: self.entries,
            size: self.offset,
        })
    }

    /// Drops an unfinished pack.
    pub fn abandon(self) {
        let _ = fs::remove_file(&self.temp);
    }
}

fn decode_index(bytes: &[u8]) -> Option<Vec<(Hash, u64, u64)>> {
    let body = bytes.strip_prefix(INDEX_MAGIC)?;
    if body.len() % 48 != 0 {
        return None;
    }
    Some(
        body.chunks_exact(48)
            .map(|c| {
                let mut hash = [0; 32];
                hash.copy_from_slice(&c[..32]);
                let offset = u64::from_le_bytes(c[32..40].try_into().unwrap_or([0; 8]));
                let len = u64::from_le_bytes(c[40..48].try_into().unwrap_or([0; 8]));
                (hash, offset, len)
            })
            .collect(),
    )
}
