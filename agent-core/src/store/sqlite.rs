//! The embedded default store: one SQLite file in WAL mode, opened from a path.
//!
//! Every database call runs on Tokio's blocking pool (the connection sits behind a mutex), so a
//! slow disk or another process's lock never stalls the async runtime. Every failure is a
//! [`StoreError`] naming the file and, when it can, what to do.

mod error;
mod lease;
mod row;
mod schema;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, params};

use self::error::DbFile;
use super::{
    MessageColumns, MessageUpdate, NewMessage, SessionStore, StoreError, StoreErrorKind,
    StoredMessage, SuspendedCall, ToolStatus, TurnLease, TurnLocks, now_micros,
};
use crate::util::BoxFuture;

/// How durable a commit is: SQLite's `synchronous` setting (the store always runs in WAL mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SqliteSync {
    /// `FULL`, the default: each commit syncs the write-ahead log before it returns, so a row the
    /// store has reported as written survives a power loss or an OS crash, not only a crash of
    /// the process. It costs one `fsync` per write.
    #[default]
    Full,
    /// `NORMAL`: commits survive a crash of the process, but the last ones before a power loss or
    /// an OS crash may be lost (the log is synced only at checkpoints). Cheaper per write.
    Normal,
}

impl SqliteSync {
    /// The pragma's value: `FULL` or `NORMAL`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SqliteSync::Full => "FULL",
            SqliteSync::Normal => "NORMAL",
        }
    }
}

/// Options of [`SqliteStore::open_with`]; the defaults are what [`SqliteStore::open`] uses.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// How long a call waits for another connection's lock before it fails as "locked"
    /// (default 5 s).
    pub busy_timeout: Duration,
    /// How durable a commit is (default [`SqliteSync::Full`]).
    pub synchronous: SqliteSync,
    /// How long a turn's lease on its session lasts unless renewed (default 30 s). A running
    /// turn renews it every third of this; a process that dies mid-turn holds its sessions for
    /// at most this long, then the next turn takes over and repairs what it left.
    pub turn_lease: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            busy_timeout: Duration::from_secs(5),
            synchronous: SqliteSync::Full,
            turn_lease: Duration::from_secs(30),
        }
    }
}

impl SqliteOptions {
    /// These options with another busy timeout.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// These options with another durability.
    pub fn synchronous(mut self, synchronous: SqliteSync) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// These options with another turn lease length (at least 3 ms; a shorter one is taken
    /// as 3 ms).
    pub fn turn_lease(mut self, length: Duration) -> Self {
        self.turn_lease = length.max(Duration::from_millis(3));
        self
    }
}

/// Sessions in one SQLite file: the embedded default store (docs/design.md §7). Rows keep their order
/// and survive the process; several processes may share the file (a writer waits up to the busy
/// timeout for another's lock). Clones share one connection.
///
/// Turns of one session never overlap, whichever agent, store or process on this machine runs
/// them: a turn holds a lease row in the file (see [`SqliteOptions::turn_lease`]).
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    file: DbFile,
    /// The turn locks of this store and its clones, within the process.
    locks: Arc<TurnLocks>,
    /// How long a turn's lease lasts unless renewed.
    lease: Duration,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.file.path)
            .field("busy_timeout", &self.file.busy_timeout)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// The schema version this build writes (`PRAGMA user_version` of its files): the number of
    /// migration steps. A file with a higher version is refused.
    pub const SCHEMA_VERSION: i64 = schema::LATEST_VERSION;

    /// Opens the store at `path` with the default [`SqliteOptions`], creating the file and its
    /// schema if needed and migrating an older schema. A file written by a newer version, a file
    /// that is not a database, or a path that cannot be written is an error naming the path.
    ///
    /// This touches the disk on the calling thread; from async code, call it once at start-up
    /// or inside `tokio::task::spawn_blocking`.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, SqliteOptions::default())
    }

    /// Opens the store at `path` with `options` (see [`SqliteStore::open`]).
    pub fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let file = DbFile {
            path: Arc::from(path.as_ref()),
            busy_timeout: options.busy_timeout,
        };
        let raw = file.path.as_os_str();
        if raw.is_empty() || raw == ":memory:" {
            return Err(
                file.at("not a file path; give the path of a database file (or use a MemoryStore)")
            );
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn =
            Connection::open_with_flags(&file.path, flags).map_err(|e| file.sqlite(&e))?;
        configure(&conn, &options)
            .map_err(|e| file.sqlite(&e))
            .and_then(|mode| {
                if mode.eq_ignore_ascii_case("wal") {
                    Ok(())
                } else {
                    Err(file.no_wal(&mode))
                }
            })?;
        schema::migrate(&mut conn).map_err(|e| file.migrate(&e))?;
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            file,
            locks: Arc::default(),
            lease: options.turn_lease.max(Duration::from_millis(3)),
        })
    }

    /// The path the store was opened at.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Runs `work` on the connection on Tokio's blocking pool (inline when no Tokio runtime is
    /// running, as there is nothing to block then).
    async fn run<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &DbFile) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let file = self.file.clone();
        let job = move || work(&mut lock(&conn), &file);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.spawn_blocking(job).await.map_err(|e| {
                self.file
                    .at(format_args!("the database task did not finish: {e}"))
            })?,
            Err(_) => job(),
        }
    }
}

/// Sets the busy timeout, WAL mode (returning the journal mode now in force) and durability.
fn configure(conn: &Connection, options: &SqliteOptions) -> Result<String, rusqlite::Error> {
    conn.busy_timeout(options.busy_timeout)?;
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    conn.pragma_update(None, "synchronous", options.synchronous.as_str())?;
    Ok(mode)
}

/// The connection, also after a panic on another thread poisoned the lock: a transaction that
/// panic left open is rolled back (its caller got an error), and the connection serves on.
fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|poisoned: PoisonError<_>| {
        let guard = poisoned.into_inner();
        if !guard.is_autocommit() {
            // Nothing to report to: should the rollback fail, the next statement reports the state.
            let _ = guard.execute_batch("ROLLBACK");
        }
        conn.clear_poison();
        guard
    })
}

/// Reads a session's rows, oldest first.
fn load_rows(
    conn: &mut Connection,
    file: &DbFile,
    session: &str,
) -> Result<Vec<StoredMessage>, StoreError> {
    let mut statement = conn
        .prepare_cached(row::SELECT_SESSION)
        .map_err(|e| file.sqlite(&e))?;
    let mut rows = statement.query([session]).map_err(|e| file.sqlite(&e))?;
    let mut out = Vec::new();
    while let Some(found) = rows.next().map_err(|e| file.sqlite(&e))? {
        out.push(row::stored(found).map_err(|e| file.row(&e))?);
    }
    Ok(out)
}

/// Inserts a row and returns it as stored.
fn insert_row(
    conn: &mut Connection,
    file: &DbFile,
    session: String,
    new: NewMessage,
) -> Result<StoredMessage, StoreError> {
    let created_at = now_micros();
    {
        let c = MessageColumns::of(&new.message)
            .map_err(|e| file.at(format_args!("cannot encode tool calls: {e}")))?;
        let mut statement = conn
            .prepare_cached(row::INSERT)
            .map_err(|e| file.sqlite(&e))?;
        statement
            .execute(params![
                session,
                c.role,
                c.content,
                c.tool_calls,
                c.tool_call_id,
                c.name,
                c.reasoning,
                c.reasoning_signature,
                c.tool_status,
                created_at,
                new.request_sent_at,
                new.status.as_str(),
                new.silent,
                c.provider_blocks,
            ])
            .map_err(|e| file.sqlite(&e))?;
    }
    Ok(StoredMessage {
        id: conn.last_insert_rowid(),
        session_id: session,
        tool_status: ToolStatus::of(&new.message),
        message: new.message,
        created_at,
        request_sent_at: new.request_sent_at,
        response_completed_at: None,
        status: new.status,
        silent: new.silent,
    })
}

/// Updates row `id` of `session`; a row that is not there is an error.
fn update_row(
    conn: &mut Connection,
    file: &DbFile,
    session: &str,
    id: i64,
    update: MessageUpdate,
) -> Result<(), StoreError> {
    let status = update.status.map(|status| status.as_str());
    let completed = update.response_completed_at;
    let silent = update.silent;
    let changed = match &update.message {
        Some(message) => {
            let c = MessageColumns::of(message)
                .map_err(|e| file.at(format_args!("cannot encode tool calls: {e}")))?;
            let mut statement = conn
                .prepare_cached(row::UPDATE_MESSAGE)
                .map_err(|e| file.sqlite(&e))?;
            statement.execute(params![
                id,
                session,
                c.role,
                c.content,
                c.tool_calls,
                c.tool_call_id,
                c.name,
                c.reasoning,
                c.reasoning_signature,
                c.tool_status,
                status,
                completed,
                silent,
                c.provider_blocks,
            ])
        }
        None => {
            let mut statement = conn
                .prepare_cached(row::UPDATE_STATE)
                .map_err(|e| file.sqlite(&e))?;
            statement.execute(params![id, session, status, completed, silent])
        }
    }
    .map_err(|e| file.sqlite(&e))?;
    if changed == 0 {
        return Err(file.of(
            StoreErrorKind::NotFound,
            format_args!("no message {id} in session `{session}`"),
        ));
    }
    Ok(())
}

/// Deletes row `id` of `session`; a row that is not there is an error.
fn delete_row(
    conn: &mut Connection,
    file: &DbFile,
    session: &str,
    id: i64,
) -> Result<(), StoreError> {
    let mut statement = conn
        .prepare_cached(row::DELETE)
        .map_err(|e| file.sqlite(&e))?;
    let changed = statement
        .execute(params![id, session])
        .map_err(|e| file.sqlite(&e))?;
    if changed == 0 {
        return Err(file.of(
            StoreErrorKind::NotFound,
            format_args!("no message {id} in session `{session}`"),
        ));
    }
    Ok(())
}

/// Reads a session's waiting calls, in call order.
fn load_suspended(
    conn: &mut Connection,
    file: &DbFile,
    session: &str,
) -> Result<Vec<SuspendedCall>, StoreError> {
    let mut statement = conn
        .prepare_cached(
            "SELECT record FROM suspended_calls WHERE session_id = ?1 ORDER BY position",
        )
        .map_err(|e| file.sqlite(&e))?;
    let mut rows = statement.query([session]).map_err(|e| file.sqlite(&e))?;
    let mut out = Vec::new();
    while let Some(found) = rows.next().map_err(|e| file.sqlite(&e))? {
        let record: String = found.get(0).map_err(|e| file.sqlite(&e))?;
        let call = serde_json::from_str(&record).map_err(|e| {
            file.of(
                StoreErrorKind::Corrupt,
                format_args!("a suspended call of session `{session}` does not read: {e}"),
            )
        })?;
        out.push(call);
    }
    Ok(out)
}

/// Replaces a session's waiting calls, in one transaction.
fn store_suspended(
    conn: &mut Connection,
    file: &DbFile,
    session: &str,
    calls: &[SuspendedCall],
) -> Result<(), StoreError> {
    let tx = conn.transaction().map_err(|e| file.sqlite(&e))?;
    tx.execute(
        "DELETE FROM suspended_calls WHERE session_id = ?1",
        [session],
    )
    .map_err(|e| file.sqlite(&e))?;
    for (position, call) in calls.iter().enumerate() {
        let record = serde_json::to_string(call)
            .map_err(|e| file.at(format_args!("cannot encode a suspended call: {e}")))?;
        tx.execute(
            "INSERT INTO suspended_calls (session_id, position, call_id, record) \
             VALUES (?1, ?2, ?3, ?4)",
            params![session, position as i64, call.call.id, record],
        )
        .map_err(|e| file.sqlite(&e))?;
    }
    tx.commit().map_err(|e| file.sqlite(&e))
}

/// Reads a session's tools approved for good, by name.
fn load_approved(
    conn: &mut Connection,
    file: &DbFile,
    session: &str,
) -> Result<Vec<String>, StoreError> {
    let mut statement = conn
        .prepare_cached("SELECT tool FROM approved_tools WHERE session_id = ?1 ORDER BY tool")
        .map_err(|e| file.sqlite(&e))?;
    let rows = statement
        .query_map([session], |row| row.get(0))
        .map_err(|e| file.sqlite(&e))?;
    rows.collect::<Result<_, _>>().map_err(|e| file.sqlite(&e))
}

/// Replaces a session's tools approved for good, in one transaction.
fn store_approved(
    conn: &mut Connection,
    file: &DbFile,
    session: &str,
    tools: &[String],
) -> Result<(), StoreError> {
    let tx = conn.transaction().map_err(|e| file.sqlite(&e))?;
    tx.execute(
        "DELETE FROM approved_tools WHERE session_id = ?1",
        [session],
    )
    .map_err(|e| file.sqlite(&e))?;
    for tool in tools {
        tx.execute(
            "INSERT OR IGNORE INTO approved_tools (session_id, tool) VALUES (?1, ?2)",
            params![session, tool],
        )
        .map_err(|e| file.sqlite(&e))?;
    }
    tx.commit().map_err(|e| file.sqlite(&e))
}

impl SessionStore for SqliteStore {
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| load_rows(conn, file, &session)))
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| insert_row(conn, file, session, row)))
    }

    fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| update_row(conn, file, &session, id, update)))
    }

    fn delete<'a>(&'a self, session: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| delete_row(conn, file, &session, id)))
    }

    fn suspended<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SuspendedCall>, StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| load_suspended(conn, file, &session)))
    }

    fn set_suspended<'a>(
        &'a self,
        session: &'a str,
        calls: Vec<SuspendedCall>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| store_suspended(conn, file, &session, &calls)))
    }

    fn approved_tools<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| load_approved(conn, file, &session)))
    }

    fn set_approved_tools<'a>(
        &'a self,
        session: &'a str,
        tools: Vec<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| store_approved(conn, file, &session, &tools)))
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        Box::pin(lease::take(self, session, wait))
    }
}
