//! The schema and its versions: each migration moves a database one `PRAGMA user_version`
//! up, in a transaction, so an upgrade either happens whole or not at all.

use rusqlite::Connection;

use super::StoreError;

/// The migrations, in order; a database at `user_version` N has had the first N applied.
///
/// Version 1 is the schema of Cove 0.1.0, which did not set `user_version`: its statements
/// keep `IF NOT EXISTS` so they adopt a 0.1.0 database as it is. Never edit a migration
/// that has shipped; add the next one.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: threads, runs, messages, waits, managed sandboxes, knowledge.
    "
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    model TEXT NOT NULL,
    tool_mode TEXT NOT NULL,
    sandbox TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL REFERENCES threads(id),
    status TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at INTEGER,
    iterations INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    pause_kind TEXT,
    pause_text TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs(thread_id, started_at);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL REFERENCES threads(id),
    run_id TEXT,
    kind TEXT NOT NULL,
    is_llm_message INTEGER NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_thread ON messages(thread_id, id);
CREATE TABLE IF NOT EXISTS waits (
    thread_id TEXT PRIMARY KEY REFERENCES threads(id),
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    pid INTEGER NOT NULL,
    since INTEGER NOT NULL,
    after_message INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sandboxes (
    name TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    container_id TEXT NOT NULL,
    url TEXT,
    token TEXT NOT NULL,
    image TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS knowledge (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT REFERENCES threads(id),
    name TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
",
    // 2: the newest summary of a thread is found without walking its whole history (it was
    // a backwards scan of every message of the thread, once per model call).
    "
CREATE INDEX messages_summaries ON messages(thread_id, id) WHERE kind = 'summary';
",
    // 3: one table of what a thread waits for from the user (requests: a permission, the
    // plan's approval, an answer, the browser handed back, with the process that waits live
    // and, for a takeover, the message replies follow; `applied_at` once the run acted on the
    // decision): the waits table's rows move there. Also the calls a user allowed for a whole
    // thread, and the versions of each thread's plan (as JSON, its status beside it).
    "
CREATE TABLE requests (
    id TEXT NOT NULL,
    thread_id TEXT NOT NULL REFERENCES threads(id),
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    summary TEXT NOT NULL,
    why TEXT NOT NULL,
    arguments TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    decision TEXT,
    reason TEXT,
    decided_at INTEGER,
    applied_at INTEGER,
    pid INTEGER,
    after_message INTEGER,
    PRIMARY KEY (thread_id, id)
);
CREATE INDEX requests_open ON requests(thread_id, created_at) WHERE applied_at IS NULL;
INSERT INTO requests (id, thread_id, run_id, kind, call_id, tool, summary, why, arguments,
                      fingerprint, created_at, pid, after_message)
    SELECT lower(hex(randomblob(4))), thread_id, run_id, kind, '', 'web_browser_takeover',
           'hand the browser back', 'a person has the browser', '{}', '', since, pid,
           after_message
    FROM waits;
DROP TABLE waits;
CREATE TABLE plans (
    thread_id TEXT NOT NULL REFERENCES threads(id),
    version INTEGER NOT NULL,
    plan TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    -- 0 while the user's decision on it has not been told in a run's events yet.
    announced INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (thread_id, version)
);
CREATE TABLE grants (
    thread_id TEXT NOT NULL REFERENCES threads(id),
    fingerprint TEXT NOT NULL,
    tool TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, fingerprint)
);
",
    // 4: the events of a thread's runs as `cove serve` streamed them, numbered through the
    // thread, so a client that reconnects gets exactly those it missed.
    "
CREATE TABLE events (
    thread_id TEXT NOT NULL REFERENCES threads(id),
    seq INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
",
    // 5: the browser as each browser tool call of a served thread left it (a JPEG), so the
    // page shows it beside the call, after the run and the sandbox are gone too.
    "
CREATE TABLE screenshots (
    thread_id TEXT NOT NULL REFERENCES threads(id),
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    jpeg BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, run_id, call_id)
);
",
    // 6: what a provider needs to make a sandbox again (a Kubernetes Pod's plan, as JSON).
    "
ALTER TABLE sandboxes ADD COLUMN spec TEXT;
",
    // 7: each model call of a run, with the tokens the provider billed and what they cost
    // (NULL when the model's price is unknown).
    "
CREATE TABLE model_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    iteration INTEGER NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd REAL,
    created_at INTEGER NOT NULL
);
CREATE INDEX model_calls_by_run ON model_calls(run_id, id);
",
    // 8: what this installation is (its id, which labels what it makes on shared clusters).
    "
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
",
    // 9: the workspace's checkpoints a thread's runs took (coved keeps the files; here, where
    // in the conversation each one was: after message `after_message`).
    "
CREATE TABLE checkpoints (
    thread_id TEXT NOT NULL REFERENCES threads(id),
    checkpoint TEXT NOT NULL,
    sandbox TEXT NOT NULL,
    run_id TEXT NOT NULL,
    after_message INTEGER NOT NULL,
    reason TEXT NOT NULL,
    files INTEGER NOT NULL,
    changed INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, sandbox, checkpoint)
);
CREATE INDEX checkpoints_by_thread ON checkpoints(thread_id, created_at);
-- 0: the thread's conversation; N: left by its Nth rewind (kept, never sent to the model).
ALTER TABLE messages ADD COLUMN branch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN branch INTEGER NOT NULL DEFAULT 0;
",
    // 10: the watches a thread's agent set in its sandbox (coved fires them; here, whether
    // their event reached the model yet), and the wait a run is in for them (at most one per
    // thread; gone once what fired is delivered, in the same transaction as its result);
    // the parent of a sub-agent's thread.
    "
CREATE TABLE watches (
    thread_id TEXT NOT NULL REFERENCES threads(id),
    id TEXT NOT NULL,
    label TEXT,
    description TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    state TEXT NOT NULL,
    event TEXT,
    PRIMARY KEY (thread_id, id)
);
CREATE TABLE event_waits (
    thread_id TEXT PRIMARY KEY REFERENCES threads(id),
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    summary TEXT NOT NULL,
    watches TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    deadline INTEGER NOT NULL
);
-- The thread whose agent started this one (spawn_agents), if any, and the fork of the
-- sandbox's workspace it works in, if it has one.
ALTER TABLE threads ADD COLUMN parent_id TEXT;
ALTER TABLE threads ADD COLUMN fork TEXT;
-- A spawn_agents call whose sub-agents work: gone once its result is stored.
CREATE TABLE spawns (
    thread_id TEXT PRIMARY KEY REFERENCES threads(id),
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    children TEXT NOT NULL,
    max_parallel INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
",
    // 11: why the sub-agents of a spawn_agents call that could not start did not, kept with
    // the call while a sub-agent's question pauses it.
    "ALTER TABLE spawns ADD COLUMN failed TEXT NOT NULL DEFAULT '[]';",
    // 12: the token a sandbox's container or Pod starts with (its daemon is given the
    // sandbox's own token after each start, so what its environment shows is dead), the
    // name its resources were made under (a pool member's), and the pools' members: made
    // ahead of use, handed out whole to one sandbox name each.
    "
ALTER TABLE sandboxes ADD COLUMN boot_token TEXT;
ALTER TABLE sandboxes ADD COLUMN made_as TEXT;
CREATE TABLE pool_members (
    name TEXT PRIMARY KEY,
    pool TEXT NOT NULL,
    provider TEXT NOT NULL,
    container_id TEXT NOT NULL,
    url TEXT,
    boot_token TEXT NOT NULL,
    image TEXT NOT NULL,
    spec TEXT,
    ready INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE INDEX pool_members_by_pool ON pool_members(pool, ready, created_at);
",
];

/// The version this build writes.
pub(crate) fn current_version() -> u32 {
    u32::try_from(MIGRATIONS.len()).unwrap_or(u32::MAX)
}

/// Brings the database up to this build's version with `migrations`; a database newer than
/// this build is left untouched and refused.
pub(crate) fn migrate(conn: &mut Connection, migrations: &[&str]) -> Result<(), StoreError> {
    let target = u32::try_from(migrations.len()).unwrap_or(u32::MAX);
    // Read and upgrade in one write transaction, so two controllers opening an old database
    // at once cannot both apply the same migration.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let found: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > target {
        return Err(StoreError::TooNew {
            found,
            supported: target,
        });
    }
    for (index, sql) in migrations.iter().enumerate().skip(found as usize) {
        let version = index + 1;
        tx.execute_batch(sql)
            .map_err(|source| StoreError::Migration { version, source })?;
        // PRAGMA takes no bound parameters; `version` is a number we made.
        tx.execute_batch(&format!("PRAGMA user_version = {version}"))
            .map_err(|source| StoreError::Migration { version, source })?;
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(conn: &Connection) -> u32 {
        conn.query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn migrations_apply_in_order_once() {
        let mut conn = Connection::open_in_memory().unwrap();
        let steps = [
            "CREATE TABLE a (x INTEGER)",
            "INSERT INTO a VALUES (1)",
            "INSERT INTO a VALUES (2)",
        ];
        migrate(&mut conn, &steps[..2]).unwrap();
        assert_eq!(version(&conn), 2);
        migrate(&mut conn, &steps).unwrap();
        migrate(&mut conn, &steps).unwrap();
        assert_eq!(version(&conn), 3);
        let rows: Vec<i64> = conn
            .prepare("SELECT x FROM a ORDER BY x")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, [1, 2], "each step ran exactly once");
    }

    #[test]
    fn a_failing_migration_changes_nothing() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, &["CREATE TABLE a (x INTEGER)"]).unwrap();
        let error = migrate(
            &mut conn,
            &[
                "CREATE TABLE a (x INTEGER)",
                "CREATE TABLE b (y INTEGER)",
                "INSERT INTO nowhere VALUES (1)",
            ],
        )
        .unwrap_err();
        assert!(
            matches!(error, StoreError::Migration { version: 3, .. }),
            "{error}"
        );
        assert_eq!(version(&conn), 1);
        let b: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'b'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(b, 0, "step 2 was rolled back with step 3");
    }

    #[test]
    fn a_newer_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        let newer = current_version() + 1;
        conn.execute_batch(&format!("PRAGMA user_version = {newer}"))
            .unwrap();
        let error = migrate(&mut conn, MIGRATIONS).unwrap_err();
        assert!(
            matches!(error, StoreError::TooNew { found, .. } if found == newer),
            "{error}"
        );
        let tables: i64 = conn
            .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tables, 0, "nothing was created in it");
    }
}
