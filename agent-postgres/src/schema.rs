//! The schema and its versioned migrations, recorded in table `agent_schema`.

use std::collections::HashMap;

use agent_core::{ExpectedTable, missing_from_schema};
use deadpool_postgres::Object;
use tokio_postgres::GenericClient;

/// The migration steps, applied in order: step `i` brings the schema from version `i` to `i + 1`.
/// Append new steps; never edit a released one.
const MIGRATIONS: &[&str] = &[
    // 1: the messages (docs/design.md §7) and the turn lease of each session with a turn running
    // (see `lease.rs`). Plain `CREATE` so that a database with another program's table of the
    // same name is an error rather than a silent mix.
    "CREATE TABLE messages (
        id                    BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id            TEXT    NOT NULL,
        role                  TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content               TEXT    NOT NULL,
        tool_calls            TEXT,
        tool_call_id          TEXT,
        name                  TEXT,
        reasoning             TEXT,
        reasoning_signature   TEXT,
        created_at            BIGINT  NOT NULL,
        request_sent_at       BIGINT,
        response_completed_at BIGINT,
        status                TEXT    NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
        silent                BOOLEAN NOT NULL DEFAULT FALSE,
        tool_status           TEXT             CHECK (tool_status IN ('success', 'error')),
        provider_blocks       TEXT
    );
    CREATE INDEX messages_session_id ON messages (session_id, id);
    CREATE TABLE turn_leases (
        session_id TEXT        PRIMARY KEY,
        holder     TEXT        NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
    );",
    // 2: the tool calls a suspended turn left waiting, in call order (`SuspendedCall` as JSON,
    // with its answer and execution record), and each session's tools approved for good (see
    // `suspended.rs`).
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
pub(crate) const LATEST_VERSION: i64 = MIGRATIONS.len() as i64;

/// The advisory lock every process migrating the database takes first, so that two processes
/// connecting to a new database at once do not both create its tables.
const MIGRATION_LOCK: i64 = 0x6167_656e_7473_6d31; // "agentsm1"

/// Whether the version table is there (in a schema of the connection's search path). A query
/// of the catalog rather than `to_regclass`, which reads the backend's catalog cache: after
/// waiting for the migration lock, that cache may still say the table is missing when the
/// process that held the lock has just created it.
const HAS_VERSION_TABLE: &str = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c \
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
     WHERE c.relname = 'agent_schema' AND n.nspname = ANY (current_schemas(false)))";
/// The schema version recorded in the database.
const VERSION: &str = "SELECT version FROM agent_schema";

/// Why the schema could not be brought up to date.
#[derive(Debug)]
pub(crate) enum MigrateError {
    /// The server says so.
    Postgres(tokio_postgres::Error),
    /// The database was written by a newer build (or holds a version no build writes).
    Unsupported(i64),
    /// The step to this version failed (on another program's database, say).
    Step(i64, tokio_postgres::Error),
    /// The database records a schema version without the tables that version has: another
    /// program's `agent_schema`, or tables dropped by hand. Holds the version and what is
    /// missing.
    Foreign(i64, String),
    /// The connection may not write the session tables (a read-only role or database): what
    /// it may not do.
    ReadOnly(String),
}

impl From<tokio_postgres::Error> for MigrateError {
    fn from(error: tokio_postgres::Error) -> Self {
        MigrateError::Postgres(error)
    }
}

/// The schema version recorded in the database (0 when it has none).
async fn version(conn: &impl GenericClient) -> Result<i64, MigrateError> {
    let present: bool = conn.query_one(HAS_VERSION_TABLE, &[]).await?.try_get(0)?;
    if !present {
        return Ok(0);
    }
    match conn.query_opt(VERSION, &[]).await? {
        Some(row) => Ok(row.try_get(0)?),
        None => Ok(0),
    }
}

/// The tables and columns each schema version has (the key ones of each step): a database
/// whose `agent_schema` claims a version without them is not a session store of this crate.
const EXPECTED: &[ExpectedTable] = &[
    table(
        1,
        "messages",
        &["session_id", "role", "content", "status", "provider_blocks"],
    ),
    table(1, "turn_leases", &["session_id", "holder", "expires_at"]),
    table(2, "suspended_calls", &["session_id", "position", "record"]),
    table(2, "approved_tools", &["session_id", "tool"]),
];

const fn table(since: i64, table: &'static str, columns: &'static [&'static str]) -> ExpectedTable {
    ExpectedTable {
        since,
        table,
        columns,
    }
}

/// The columns of a table of the connection's search path.
const COLUMNS: &str = "SELECT column_name::text FROM information_schema.columns \
     WHERE table_name = $1 AND table_schema = ANY (current_schemas(false))";

/// Checks that the database holds what schema version `found` has, before anything is written.
async fn check_tables(conn: &impl GenericClient, found: i64) -> Result<(), MigrateError> {
    let mut columns = HashMap::new();
    for expected in EXPECTED.iter().filter(|expected| expected.since <= found) {
        let present: Vec<String> = conn
            .query(COLUMNS, &[&expected.table])
            .await?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()?;
        columns.insert(expected.table, present);
    }
    let present = |table: &str| columns.get(table).cloned().unwrap_or_default();
    match missing_from_schema(EXPECTED, found, present) {
        Some(missing) => Err(MigrateError::Foreign(found, missing)),
        None => Ok(()),
    }
}

/// Whether this connection may write every session table: a read-only database (or
/// transaction default) or a role without the privileges is refused here rather than at the
/// first turn. (`has_table_privilege` with a list is true when any one is held: each is
/// asked apart.)
const WRITABLE: &str = "SELECT current_setting('transaction_read_only') = 'off', \
     bool_and(has_table_privilege(t, 'SELECT') AND has_table_privilege(t, 'INSERT') \
     AND has_table_privilege(t, 'UPDATE') AND has_table_privilege(t, 'DELETE')) \
     FROM unnest(ARRAY['messages', 'turn_leases', 'suspended_calls', 'approved_tools']) AS t";

/// Checks that the session tables, as migrated, can be written.
pub(crate) async fn check_writable(conn: &impl GenericClient) -> Result<(), MigrateError> {
    let row = conn.query_one(WRITABLE, &[]).await?;
    let (read_write, privileged): (bool, Option<bool>) = (row.try_get(0)?, row.try_get(1)?);
    if !read_write {
        return Err(MigrateError::ReadOnly(
            "the database (or the role's default transaction) is read-only".to_owned(),
        ));
    }
    if privileged != Some(true) {
        return Err(MigrateError::ReadOnly(
            "the role may not select, insert, update and delete in every session table \
             (messages, turn_leases, suspended_calls, approved_tools)"
                .to_owned(),
        ));
    }
    Ok(())
}

/// Applies every missing migration step in one transaction, under an advisory lock (DDL is
/// transactional in PostgreSQL: a failed step leaves nothing behind). A database from a newer
/// version, or one lacking the tables of the version it records, is refused untouched.
pub(crate) async fn migrate(conn: &mut Object) -> Result<(), MigrateError> {
    let found = version(&***conn).await?;
    if !(0..=LATEST_VERSION).contains(&found) {
        return Err(MigrateError::Unsupported(found));
    }
    check_tables(&***conn, found).await?;
    if found == LATEST_VERSION {
        return Ok(());
    }
    let tx = conn.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    // Another process may have migrated the database between the read above and the lock.
    let found = version(&*tx).await?;
    if !(0..=LATEST_VERSION).contains(&found) {
        return Err(MigrateError::Unsupported(found));
    }
    if found == 0 {
        tx.batch_execute("CREATE TABLE agent_schema (version BIGINT NOT NULL)")
            .await
            .map_err(|error| MigrateError::Step(1, error))?;
        tx.execute("INSERT INTO agent_schema (version) VALUES (0)", &[])
            .await?;
    }
    let start = usize::try_from(found).map_err(|_| MigrateError::Unsupported(found))?;
    for (to, step) in (1..).zip(MIGRATIONS).skip(start) {
        tx.batch_execute(step)
            .await
            .map_err(|error| MigrateError::Step(to, error))?;
    }
    tx.execute("UPDATE agent_schema SET version = $1", &[&LATEST_VERSION])
        .await?;
    tx.commit().await?;
    Ok(())
}
