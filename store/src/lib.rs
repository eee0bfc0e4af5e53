//! Persistence in SQLite: threads, their runs and waits, their messages, knowledge and the
//! sandboxes providers made.
//!
//! Messages follow Suna's split: LLM messages (what the model is sent) and status messages
//! (what happened, for people and tools). Every message is committed on its own as soon as it
//! exists, in WAL mode, so a controller killed mid-run loses nothing it had already said.
//! The schema is versioned (`schema.rs`): opening a database upgrades it, and a database
//! written by a newer Cove is refused rather than touched.

pub mod private_files;

mod checkpoints;
mod events;
mod figures;
mod knowledge;
mod messages;
mod plans;
mod pools;
mod requests;
mod runs;
mod sandboxes;
mod schema;
mod screenshots;
mod spawns;
mod threads;
mod usage;
mod watches;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::Connection;

pub use checkpoints::{RUN_START, Rewound, ThreadCheckpoint};
pub use events::StoredEvent;
pub use figures::{Figures, ModelFigures};
pub use knowledge::Knowledge;
pub use messages::{MessageKind, StoredMessage, Summary};
pub use plans::{PlanDraft, PlanError};
pub use pools::PoolMember;
pub use requests::{DecideError, Decided, Decision, NewRequest, Request, RequestKind};
pub use runs::{PauseKind, Run, RunState, Wait};
pub use sandboxes::ManagedSandbox;
pub use spawns::{Spawn, SpawnedChild};
pub use threads::{NewThread, Thread, ThreadStatus};
pub use usage::{ModelCall, RunUsage};
pub use watches::{EventWait, NewWatch, ThreadWatch, WatchState};

/// What went wrong with the database, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Check the path and its permissions.
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    /// The database was written by a newer Cove: use that version, or another `--db`.
    #[error(
        "the database is at schema version {found}, newer than this cove understands ({supported}); \
         it was left as it is: use the newer cove, or point --db (COVE_DB) at another file"
    )]
    TooNew { found: u32, supported: u32 },
    /// Upgrading the schema failed; the database is as it was before (copy it aside and
    /// report this).
    #[error(
        "cannot upgrade the database to schema version {version} (it was left as it was): {source}"
    )]
    Migration {
        version: usize,
        source: rusqlite::Error,
    },
    /// The named thread does not exist.
    #[error("no thread {0:?}; `cove threads` lists them")]
    NoThread(String),
    /// A query failed (disk full, database locked by another writer).
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A stored row could not be read back.
    #[error("a stored row is unreadable: {0}")]
    Corrupt(String),
}

/// Makes the database (created empty if missing) and its WAL readable by its owner only:
/// SQLite gives the WAL and shared-memory files the mode of the database. A database an
/// older Cove left readable to others is tightened, and said.
fn keep_private(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path);
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let file = std::path::PathBuf::from(file);
        if let Ok(true) = private_files::tighten(&file, 0o600) {
            tracing::warn!(file = %file.display(), "the database was readable by other users; it is now 0600");
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Switches the database to WAL. SQLite answers "busy" at once, without waiting on the busy
/// timeout, when another connection is in the middle of the same switch (several controllers
/// opening a new database together), so this waits for it the same 5 s.
fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            done => return done,
        }
    }
}

/// A short random id.
pub fn new_id(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if getrandom::fill(&mut buf).is_err() {
        let n = now_ms().to_le_bytes();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = n[i % n.len()] ^ (i as u8).wrapping_mul(31);
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A closed set of names stored as text: `as_str` and `FromStr` agree, and so do serde and
/// SQLite, so the strings in the database and in `--json` output never drift apart.
macro_rules! stored_names {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vmeta])* $variant,)+ }

        impl $name {
            /// Every value, in declaration order.
            #[allow(dead_code)]
            pub const ALL: &[$name] = &[$($name::$variant,)+];

            /// The stored name.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!("{other:?} is not a {}", stringify!($name))),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                value.as_str()?.parse().map_err(|e: String| rusqlite::types::FromSqlError::Other(e.into()))
            }
        }
    };
}
pub(crate) use stored_names;

/// The database.
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, upgrading its schema.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = private_files::dir_all(dir);
        }
        let open_error = |source| StoreError::Open {
            path: path.display().to_string(),
            source,
        };
        keep_private(path);
        let mut conn = Connection::open(path).map_err(open_error)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_error)?;
        // Before anything writes: a newer database must not even be switched to WAL.
        schema::migrate(&mut conn, schema::MIGRATIONS)?;
        use_wal(&conn).map_err(open_error)?;
        // NORMAL in WAL mode: a commit survives the process dying; only an OS crash can lose
        // the last commits.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_error)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_error)?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    /// The database's file; none in memory.
    pub fn path(&self) -> Option<PathBuf> {
        let file: String = self
            .conn()
            .query_row(
                "SELECT file FROM pragma_database_list WHERE name = 'main'",
                [],
                |r| r.get(0),
            )
            .ok()?;
        (!file.is_empty()).then(|| PathBuf::from(file))
    }

    /// An in-memory database (tests, benchmarks).
    pub fn in_memory() -> Result<Store, StoreError> {
        let mut conn = Connection::open_in_memory()?;
        schema::migrate(&mut conn, schema::MIGRATIONS)?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    /// The schema version of this build's databases.
    pub fn schema_version() -> u32 {
        schema::current_version()
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}
