//! The schema and its versioned migrations, recorded in `PRAGMA user_version`.

use rusqlite::{Connection, TransactionBehavior};

use crate::store::{ExpectedTable, missing_from_schema};

/// The migration steps, applied in order: step `i` brings the schema from version `i` to `i + 1`.
/// Append new steps; never edit a released one.
const MIGRATIONS: &[&str] = &[
    // 1: the messages table (docs/design.md §7). Plain `CREATE` so that a foreign database with a table of
    // the same name is an error rather than a silent mix.
    "CREATE TABLE messages (
        id                    INTEGER PRIMARY KEY,
        session_id            TEXT    NOT NULL,
        role                  TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content               TEXT    NOT NULL,
        tool_calls            TEXT,
        tool_call_id          TEXT,
        name                  TEXT,
        reasoning             TEXT,
        reasoning_signature   TEXT,
        created_at            INTEGER NOT NULL,
        request_sent_at       INTEGER,
        response_completed_at INTEGER,
        status                TEXT    NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
        silent                INTEGER NOT NULL DEFAULT 0 CHECK (silent IN (0, 1)),
        tool_status           TEXT             CHECK (tool_status IN ('success', 'error'))
    );
    CREATE INDEX messages_session_id ON messages (session_id, id);",
    // 2: an assistant's provider blocks (a JSON list), such as Anthropic's server-tool blocks.
    "ALTER TABLE messages ADD COLUMN provider_blocks TEXT;",
    // 3: the turn lease of each session with a turn running (see `lease.rs`).
    "CREATE TABLE turn_leases (
        session_id TEXT    PRIMARY KEY,
        holder     TEXT    NOT NULL,
        expires_at INTEGER NOT NULL
    );",
    // 4: the tool calls a suspended turn left waiting, in call order (`SuspendedCall` as JSON),
    // and each session's tools approved for good.
    "CREATE TABLE suspended_calls (
        session_id TEXT    NOT NULL,
        position   INTEGER NOT NULL,
        call_id    TEXT    NOT NULL,
        record     TEXT    NOT NULL,
        PRIMARY KEY (session_id, position)
    );
    CREATE TABLE approved_tools (
        session_id TEXT NOT NULL,
        tool       TEXT NOT NULL,
        PRIMARY KEY (session_id, tool)
    );",
];

/// The schema version this build writes: the number of migration steps.
pub(super) const LATEST_VERSION: i64 = MIGRATIONS.len() as i64;

/// Why the schema could not be brought up to date.
#[derive(Debug)]
pub(super) enum MigrateError {
    /// The database says so.
    Sqlite(rusqlite::Error),
    /// The file was written by a newer build (or holds a version no build writes).
    Unsupported(i64),
    /// The step to this version failed (on a file of another program, say).
    Step(i64, rusqlite::Error),
    /// The file records a schema version without the tables that version has: another
    /// program's database, with a `user_version` of its own. Holds the version and what is
    /// missing.
    Foreign(i64, String),
    /// The file records no schema version but has a table the schema creates: another
    /// program's database. Holds the table.
    Taken(&'static str),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(error: rusqlite::Error) -> Self {
        MigrateError::Sqlite(error)
    }
}

/// The schema version recorded in the file.
fn version(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// The tables and columns each schema version has (the key ones of each step): a file whose
/// `user_version` claims a version without them is another program's.
const EXPECTED: &[ExpectedTable] = &[
    table(1, "messages", &["session_id", "role", "content", "status"]),
    table(2, "messages", &["provider_blocks"]),
    table(3, "turn_leases", &["session_id", "holder", "expires_at"]),
    table(4, "suspended_calls", &["session_id", "position", "record"]),
    table(4, "approved_tools", &["session_id", "tool"]),
];

const fn table(since: i64, table: &'static str, columns: &'static [&'static str]) -> ExpectedTable {
    ExpectedTable {
        since,
        table,
        columns,
    }
}

/// Checks that the file holds what schema version `found` has, before anything is written to it.
fn check_tables(conn: &Connection, found: i64) -> Result<(), MigrateError> {
    let mut columns = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let mut failed = None;
    let missing = missing_from_schema(EXPECTED, found, |table| {
        let present = columns
            .query_map([table], |row| row.get(0))
            .and_then(|rows| rows.collect::<Result<_, _>>());
        present.unwrap_or_else(|error| {
            failed = Some(error);
            Vec::new()
        })
    });
    if let Some(error) = failed {
        return Err(error.into());
    }
    match missing {
        Some(missing) => Err(MigrateError::Foreign(found, missing)),
        None => Ok(()),
    }
}

/// The schema version of the file, once it is one this build can open: a file from a newer
/// version, one that lacks the tables its version has, or one with no version that has a
/// table of the schema, is refused. It only reads the file, in one read transaction (another
/// process may migrate it meanwhile).
pub(super) fn check(conn: &Connection) -> Result<i64, MigrateError> {
    let read = conn.unchecked_transaction()?;
    let found = version(&read)?;
    if !(0..=LATEST_VERSION).contains(&found) {
        return Err(MigrateError::Unsupported(found));
    }
    check_tables(&read, found)?;
    if found == 0 {
        check_free(&read)?;
    }
    read.commit()?;
    Ok(found)
}

/// Checks that a file with no schema version has none of the schema's tables (the migration
/// would fail on one, after WAL mode was switched on).
fn check_free(conn: &Connection) -> Result<(), MigrateError> {
    let mut exists = conn.prepare("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?1)")?;
    for expected in EXPECTED {
        if exists.query_row([expected.table], |row| row.get(0))? {
            return Err(MigrateError::Taken(expected.table));
        }
    }
    Ok(())
}

/// Applies every migration step missing from a file [`check`] found at version `found`, in one
/// immediate transaction (so two processes opening a new file at once do not both migrate it).
pub(super) fn migrate(conn: &mut Connection, found: i64) -> Result<(), MigrateError> {
    if found == LATEST_VERSION {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have migrated the file between the read above and the lock.
    let found = version(&tx)?;
    if !(0..=LATEST_VERSION).contains(&found) {
        return Err(MigrateError::Unsupported(found));
    }
    let start = usize::try_from(found).map_err(|_| MigrateError::Unsupported(found))?;
    for (to, step) in (1..).zip(MIGRATIONS).skip(start) {
        tx.execute_batch(step)
            .map_err(|error| MigrateError::Step(to, error))?;
    }
    tx.pragma_update(None, "user_version", LATEST_VERSION)?;
    tx.commit()?;
    Ok(())
}
