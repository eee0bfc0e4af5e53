//! The content-addressed store beside the workspace: objects named by their BLAKE3 hash
//! (file contents and folder trees, each kept once), a record per checkpoint, the index of
//! what each path looked like at the last checkpoint, and the store's size.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::CheckpointError;
use super::index::{Index, decode_index, encode_index};
use super::pack::{PACKED_MAX, PackWriter, Packs};
use super::tree::{self, Hash, Kind, Tree};

/// Files up to this size are read whole; larger ones are cloned or streamed.
const SMALL_FILE: u64 = 1 << 20;

/// One checkpoint as the store keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub id: u64,
    pub parent: Option<u64>,
    pub label: Option<String>,
    pub created_at: String,
    /// The workspace root's tree, as hex.
    pub root: String,
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    pub keep: bool,
}

impl Record {
    /// The root tree's hash.
    pub fn root(&self) -> Result<Hash, CheckpointError> {
        tree::from_hex(&self.root).ok_or(CheckpointError::Damaged("a record's root"))
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    next_id: u64,
    /// Bytes of every object.
    bytes: u64,
    /// The checkpoint the workspace was last recorded as or restored to.
    #[serde(default)]
    head: Option<u64>,
}

/// The store, opened (and locked against a second daemon).
pub struct Store {
    dir: PathBuf,
    _lock: OwnedFd,
    state: State,
    pub records: BTreeMap<u64, Record>,
    pub index: Index,
    /// Bytes of every object (puts run on several threads at once).
    bytes: AtomicU64,
    /// Object folders known to exist.
    fanout: [AtomicBool; 256],
    /// Names temporary files apart.
    temps: AtomicU64,
    /// Small objects, packed.
    packs: Packs,
    /// The pack a scan is filling.
    writer: Mutex<Option<PackWriter>>,
}

/// An object opened for reading: a file of its own, or its place in a pack.
pub enum Object {
    Loose(File),
    Packed(io::Take<File>),
}

impl Read for Object {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Object::Loose(file) => file.read(buf),
            Object::Packed(part) => part.read(buf),
        }
    }
}

/// Temporary files are named so, beside the objects they become.
const TEMP: &str = ".tmp-";

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Store {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// Opens (creating) the store at `dir`.
    pub fn open(dir: &Path) -> Result<Store, CheckpointError> {
        for sub in ["objects", "records", "tmp", "packs"] {
            fs::create_dir_all(dir.join(sub)).map_err(io_at(dir))?;
        }
        let lock_path = dir.join("lock");
        let lock: OwnedFd = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_at(&lock_path))?
            .into();
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|_| CheckpointError::InUse(dir.to_path_buf()))?;
        // Left by a write cut short: never named by a record.
        let tmp = dir.join("tmp");
        for entry in fs::read_dir(&tmp).map_err(io_at(&tmp))?.flatten() {
            let _ = fs::remove_file(entry.path());
        }
        let mut records = BTreeMap::new();
        let records_dir = dir.join("records");
        for entry in fs::read_dir(&records_dir).map_err(io_at(&records_dir))? {
            let path = entry.map_err(io_at(&records_dir))?.path();
            if path.extension().is_some_and(|e| e == "json") {
                let bytes = fs::read(&path).map_err(io_at(&path))?;
                let record: Record = serde_json::from_slice(&bytes)
                    .map_err(|_| CheckpointError::Damaged("a checkpoint record"))?;
                records.insert(record.id, record);
            }
        }
        let mut store = Store {
            dir: dir.to_path_buf(),
            _lock: lock,
            state: State::default(),
            records,
            index: Index::new(),
            bytes: AtomicU64::new(0),
            fanout: [const { AtomicBool::new(false) }; 256],
            temps: AtomicU64::new(0),
            packs: Packs::load(&dir.join("packs")).map_err(io_at(dir))?,
            writer: Mutex::new(None),
        };
        match fs::read(dir.join("state.json")) {
            Ok(bytes) => {
                store.state = serde_json::from_slice(&bytes)
                    .map_err(|_| CheckpointError::Damaged("the store's state"))?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                store.state.bytes = store.measure()?;
            }
            Err(e) => return Err(io_at(dir)(e)),
        }
        store.bytes = AtomicU64::new(store.state.bytes);
        let next = store.records.keys().next_back().map_or(1, |id| id + 1);
        store.state.next_id = store.state.next_id.max(next);
        // A missing or damaged index only costs reading every file once more.
        if let Ok(bytes) = fs::read(dir.join("index.bin")) {
            store.index = decode_index(&bytes).unwrap_or_default();
        }
        Ok(store)
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes of every object.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The id the next checkpoint gets.
    pub fn take_id(&mut self) -> u64 {
        let id = self.state.next_id;
        self.state.next_id += 1;
        id
    }

    /// The newest checkpoint.
    pub fn latest(&self) -> Option<&Record> {
        self.records.values().next_back()
    }

    fn object_path(&self, hash: &Hash) -> PathBuf {
        let hex = tree::hex(hash);
        self.dir.join("objects").join(&hex[..2]).join(&hex[2..])
    }

    /// Whether the store holds `hash`.
    pub fn has(&self, hash: &Hash) -> bool {
        self.packs.index.contains_key(hash)
            || self.pack_writer().as_ref().is_some_and(|w| w.holds(hash))
            || self.object_path(hash).exists()
    }

    fn pack_writer(&self) -> std::sync::MutexGuard<'_, Option<PackWriter>> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Small objects stored from now on go into one new pack.
    pub fn begin_pack(&mut self) -> Result<(), CheckpointError> {
        let dir = self.dir.join("packs");
        let writer = PackWriter::begin(&dir, self.packs.next_id()).map_err(io_at(&dir))?;
        if let Some(old) = self.pack_writer().replace(writer) {
            old.abandon();
        }
        Ok(())
    }

    /// Puts the pack being filled in place (before any record names its objects).
    pub fn finish_pack(&mut self) -> Result<(), CheckpointError> {
        let Some(writer) = self.pack_writer().take() else {
            return Ok(());
        };
        let dir = self.dir.join("packs");
        let done = writer.finish(&dir).map_err(io_at(&dir))?;
        if done.size > 0 {
            for (hash, offset, len) in done.entries {
                let loc = super::pack::Loc {
                    pack: done.id,
                    offset,
                    len,
                };
                self.packs.index.insert(hash, loc);
            }
            self.packs.sizes.insert(done.id, done.size);
        }
        Ok(())
    }

    /// Drops the pack being filled (what it held is named by no record).
    pub fn abandon_pack(&mut self) {
        if let Some(writer) = self.pack_writer().take() {
            let used = writer.len();
            writer.abandon();
            self.bytes
                .fetch_sub(used.min(self.bytes()), Ordering::Relaxed);
        }
    }

    /// A temporary file in `hash`'s object folder, to be renamed to its name there.
    fn temp(&self, hash_hint: u8) -> Result<(File, PathBuf), CheckpointError> {
        let fan = self.dir.join("objects").join(format!("{hash_hint:02x}"));
        if !self.fanout[usize::from(hash_hint)].load(Ordering::Relaxed) {
            fs::create_dir_all(&fan).map_err(io_at(&fan))?;
            self.fanout[usize::from(hash_hint)].store(true, Ordering::Relaxed);
        }
        let n = self.temps.fetch_add(1, Ordering::Relaxed);
        let path = fan.join(format!("{TEMP}{}-{n}", std::process::id()));
        let file = File::options()
            .write(true)
            .read(true)
            .create_new(true)
            .open(&path)
            .map_err(io_at(&path))?;
        Ok((file, path))
    }

    /// Moves a finished temporary file to `hash`'s name; bytes added (0 when it was there).
    fn settle(&self, temp: &Path, hash: &Hash, len: u64) -> Result<u64, CheckpointError> {
        let target = self.object_path(hash);
        if target.exists() {
            let _ = fs::remove_file(temp);
            return Ok(0);
        }
        if temp.parent() != target.parent()
            && let Some(parent) = target.parent()
        {
            fs::create_dir_all(parent).map_err(io_at(parent))?;
        }
        fs::rename(temp, &target).map_err(io_at(&target))?;
        self.bytes.fetch_add(len, Ordering::Relaxed);
        Ok(len)
    }

    /// Stores `bytes`; their hash and the bytes added.
    pub fn put_bytes(&self, bytes: &[u8]) -> Result<(Hash, u64), CheckpointError> {
        let hash = tree::hash(bytes);
        if self.has(&hash) {
            return Ok((hash, 0));
        }
        if bytes.len() <= PACKED_MAX {
            let mut writer = self.pack_writer();
            if let Some(writer) = writer.as_mut() {
                let path = self.dir.join("packs");
                let added = if writer.append(hash, bytes).map_err(io_at(&path))? {
                    bytes.len() as u64
                } else {
                    0
                };
                self.bytes.fetch_add(added, Ordering::Relaxed);
                return Ok((hash, added));
            }
        }
        let (mut file, path) = self.temp(hash[0])?;
        file.write_all(bytes).map_err(io_at(&path))?;
        drop(file);
        let added = self.settle(&path, &hash, bytes.len() as u64)?;
        Ok((hash, added))
    }

    /// Stores an open file's content: cloned where the filesystem shares blocks (reflinks),
    /// else copied, and hashed from the copy so the hash is of what was kept.
    pub fn put_file(&self, src: &File, len: u64) -> Result<(Hash, u64), CheckpointError> {
        if len <= SMALL_FILE {
            let mut bytes = Vec::with_capacity(len as usize);
            (&*src).read_to_end(&mut bytes).map_err(io_at(&self.dir))?;
            return self.put_bytes(&bytes);
        }
        // Its hash is not known yet: the temporary file goes in a folder of its own.
        let (mut copy, path) = self.temp(0)?;
        if rustix::fs::ioctl_ficlone(copy.as_fd(), src.as_fd()).is_err() {
            io::copy(&mut &*src, &mut copy).map_err(io_at(&path))?;
        }
        let mut hasher = blake3::Hasher::new();
        let mut reader = File::open(&path).map_err(io_at(&path))?;
        let mut buf = vec![0; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = reader.read(&mut buf).map_err(io_at(&path))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            total += n as u64;
        }
        let hash = *hasher.finalize().as_bytes();
        let added = self.settle(&path, &hash, total)?;
        Ok((hash, added))
    }

    /// Stores what `reader` gives until its end; the hash and the bytes added.
    pub fn put_reader(&self, reader: &mut impl Read) -> Result<(Hash, u64), CheckpointError> {
        let (mut file, path) = self.temp(0)?;
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0; 256 * 1024];
        let mut total = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = fs::remove_file(&path);
                    return Err(CheckpointError::InvalidArchive(format!(
                        "cannot read it: {e}"
                    )));
                }
            };
            hasher.update(&buf[..n]);
            file.write_all(&buf[..n]).map_err(io_at(&path))?;
            total += n as u64;
        }
        drop(file);
        let hash = *hasher.finalize().as_bytes();
        let added = self.settle(&path, &hash, total)?;
        Ok((hash, added))
    }

    /// An object, opened for reading.
    pub fn open_object(&self, hash: &Hash) -> Result<Object, CheckpointError> {
        let packs = self.dir.join("packs");
        if let Some(loc) = self.packs.index.get(hash) {
            return self
                .packs
                .reader(&packs, *loc)
                .map(Object::Packed)
                .map_err(io_at(&packs));
        }
        let path = self.object_path(hash);
        File::open(&path)
            .map(Object::Loose)
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => CheckpointError::Damaged("an object is missing"),
                _ => io_at(&path)(e),
            })
    }

    /// An object's bytes.
    pub fn read_object(&self, hash: &Hash) -> Result<Vec<u8>, CheckpointError> {
        let packs = self.dir.join("packs");
        if let Some(loc) = self.packs.index.get(hash) {
            return self.packs.read(&packs, *loc).map_err(io_at(&packs));
        }
        if let Some(read) = self.pack_writer().as_ref().and_then(|w| w.read(hash)) {
            return read.map_err(io_at(&packs));
        }
        let mut bytes = Vec::new();
        self.open_object(hash)?
            .read_to_end(&mut bytes)
            .map_err(io_at(&self.dir))?;
        Ok(bytes)
    }

    /// A folder's tree.
    pub fn tree(&self, hash: &Hash) -> Result<Tree, CheckpointError> {
        Ok(Tree::decode(&self.read_object(hash)?)?)
    }

    /// Stores a tree; its hash and the bytes added.
    pub fn put_tree(&self, tree: &Tree) -> Result<(Hash, u64), CheckpointError> {
        self.put_bytes(&tree.encode())
    }

    /// Writes `bytes` to `name` in the store's folder, whole or not at all.
    fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        let n = self.temps.fetch_add(1, Ordering::Relaxed);
        let temp = self
            .dir
            .join("tmp")
            .join(format!("{TEMP}{}-{n}", std::process::id()));
        fs::write(&temp, bytes).map_err(io_at(&temp))?;
        let target = self.dir.join(name);
        fs::rename(&temp, &target).map_err(io_at(&target))
    }

    /// Keeps a new checkpoint of the workspace: its record, the index, and it as the head.
    pub fn commit(&mut self, record: Record, index: Index) -> Result<(), CheckpointError> {
        self.state.head = Some(record.id);
        self.index = index;
        self.save_index()?;
        self.add_record(record)
    }

    /// Keeps a checkpoint's record (and the state).
    pub fn add_record(&mut self, record: Record) -> Result<(), CheckpointError> {
        let bytes = serde_json::to_vec_pretty(&record).unwrap_or_default();
        self.write_atomic(&format!("records/{}.json", record.id), &bytes)?;
        self.records.insert(record.id, record);
        self.save_state()
    }

    /// The checkpoint the workspace was last recorded as or restored to.
    pub fn head(&self) -> Option<u64> {
        self.state.head.filter(|id| self.records.contains_key(id))
    }

    /// The workspace now equals checkpoint `id`.
    pub fn set_head(&mut self, id: u64) -> Result<(), CheckpointError> {
        self.state.head = Some(id);
        self.save_state()
    }

    /// Writes the index as it is now.
    pub fn save_index(&self) -> Result<(), CheckpointError> {
        self.write_atomic("index.bin", &encode_index(&self.index))
    }

    fn save_state(&mut self) -> Result<(), CheckpointError> {
        self.state.bytes = self.bytes();
        let bytes = serde_json::to_vec(&self.state).unwrap_or_default();
        self.write_atomic("state.json", &bytes)
    }

    /// Adds up every object's size (a store without its state file).
    fn measure(&self) -> Result<u64, CheckpointError> {
        let mut total = 0;
        for_each_object(&self.dir.join("objects"), |path, len| {
            if !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(TEMP))
            {
                total += len;
            }
        })?;
        Ok(total + self.packs.bytes())
    }

    /// Drops checkpoint `id`'s record (its objects go at the next collection).
    pub fn drop_record(&mut self, id: u64) -> Result<(), CheckpointError> {
        let path = self.dir.join(format!("records/{id}.json"));
        fs::remove_file(&path).map_err(io_at(&path))?;
        self.records.remove(&id);
        Ok(())
    }

    /// Removes every object no kept checkpoint reaches; bytes freed.
    pub fn collect_garbage(&mut self) -> Result<u64, CheckpointError> {
        let mut live: HashSet<Hash> = HashSet::new();
        let roots: Vec<Hash> = self
            .records
            .values()
            .map(Record::root)
            .collect::<Result<_, _>>()?;
        let mut pending = roots;
        while let Some(hash) = pending.pop() {
            if !live.insert(hash) {
                continue;
            }
            for entry in self.tree(&hash)?.entries {
                match entry.kind {
                    Kind::Dir => pending.push(entry.hash),
                    Kind::File => {
                        live.insert(entry.hash);
                    }
                    Kind::Symlink => {}
                }
            }
        }
        let mut dead = Vec::new();
        let mut stale = Vec::new();
        for_each_object(&self.dir.join("objects"), |path, len| {
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(TEMP))
            {
                // Left by a write cut short (nothing writes while this runs).
                stale.push(path.to_path_buf());
                return;
            }
            let name = path
                .parent()
                .and_then(Path::file_name)
                .zip(path.file_name())
                .map(|(a, b)| format!("{}{}", a.to_string_lossy(), b.to_string_lossy()));
            if let Some(hash) = name.as_deref().and_then(tree::from_hex)
                && !live.contains(&hash)
            {
                dead.push((path.to_path_buf(), len));
            }
        })?;
        for path in stale {
            let _ = fs::remove_file(path);
        }
        let packs = self.dir.join("packs");
        let mut freed = self.packs.sweep(&packs, &live).map_err(io_at(&packs))?;
        for (path, len) in dead {
            if fs::remove_file(&path).is_ok() {
                freed += len;
            }
        }
        let left = self.bytes().saturating_sub(freed);
        self.bytes.store(left, Ordering::Relaxed);
        self.save_state()?;
        Ok(freed)
    }
}

fn for_each_object(
    objects: &Path,
    mut each: impl FnMut(&Path, u64),
) -> Result<(), CheckpointError> {
    for fan in fs::read_dir(objects).map_err(io_at(objects))? {
        let fan = fan.map_err(io_at(objects))?.path();
        let Ok(entries) = fs::read_dir(&fan) else {
            continue;
        };
        for entry in entries.flatten() {
            if let Ok(meta) = entry.metadata() {
                each(&entry.path(), meta.len());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_objects_are_packed_read_back_after_reopening_and_repacked_when_some_die() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.begin_pack().unwrap();
        let (a, added) = store.put_bytes(b"alpha").unwrap();
        assert_eq!(added, 5);
        assert_eq!(store.put_bytes(b"alpha").unwrap(), (a, 0), "once per pack");
        assert_eq!(
            store.read_object(&a).unwrap(),
            b"alpha",
            "readable before it is finished"
        );
        let tree = Tree {
            entries: vec![tree::Entry {
                name: b"a".to_vec(),
                kind: Kind::File,
                mode: 0o644,
                size: 5,
                hash: a,
                target: Vec::new(),
            }],
        };
        let (root, _) = store.put_tree(&tree).unwrap();
        let (b, _) = store.put_bytes(b"beta, which no record names").unwrap();
        store.finish_pack().unwrap();
        let record = Record {
            id: store.take_id(),
            parent: None,
            label: None,
            created_at: String::new(),
            root: tree::hex(&root),
            files: 1,
            dirs: 0,
            symlinks: 0,
            bytes: 5,
            keep: false,
        };
        store.commit(record, Index::new()).unwrap();
        let packs: Vec<_> = fs::read_dir(dir.path().join("packs"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(packs.len(), 2, "one pack and its index: {packs:?}");
        assert!(
            fs::read_dir(dir.path().join("objects"))
                .unwrap()
                .next()
                .is_none(),
            "no loose objects"
        );
        drop(store);

        let mut store = Store::open(dir.path()).unwrap();
        assert!(store.has(&a) && store.has(&b));
        let mut read = Vec::new();
        store
            .open_object(&a)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert_eq!(read, b"alpha");
        let before = store.bytes();
        let freed = store.collect_garbage().unwrap();
        assert_eq!(freed, 27, "beta's bytes");
        assert_eq!(store.bytes(), before - 27);
        assert!(store.has(&a) && !store.has(&b));
        assert_eq!(store.tree(&root).unwrap(), tree);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.read_object(&a).unwrap(), b"alpha");
        assert!(!store.has(&b));
    }

    #[test]
    fn content_is_kept_once_and_collected_when_nothing_reaches_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let (h1, added) = store.put_bytes(b"hello").unwrap();
        assert_eq!(added, 5);
        assert_eq!(store.put_bytes(b"hello").unwrap(), (h1, 0));
        let big = vec![7u8; (SMALL_FILE + 10) as usize];
        let path = dir.path().join("big");
        fs::write(&path, &big).unwrap();
        let (h2, added) = store
            .put_file(&File::open(&path).unwrap(), big.len() as u64)
            .unwrap();
        assert_eq!((h2, added), (tree::hash(&big), big.len() as u64));
        assert_eq!(store.bytes(), 5 + big.len() as u64);
        assert!(
            Store::open(dir.path()).is_err(),
            "a second opener is refused while the first holds it"
        );
        assert_eq!(store.collect_garbage().unwrap(), 5 + big.len() as u64);
        assert!(!store.has(&h1) && !store.has(&h2));
        assert_eq!(store.bytes(), 0);
    }
}
