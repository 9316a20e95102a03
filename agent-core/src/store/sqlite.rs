//! The embedded default store: one SQLite file in WAL mode, opened from a path.
//!
//! Every database call runs on Tokio's blocking pool (the connection sits behind a mutex), so a
//! slow disk or another process's lock never stalls the async runtime. Every failure is a
//! [`StoreError`] naming the file and, when it can, what to do.

mod commit;
mod error;
mod lease;
mod row;
mod schema;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, params};

use self::commit::{Commit, Db, InTurn};
use self::error::DbFile;
use super::{
    MessageColumns, MessageUpdate, NewMessage, SessionStore, StoreError, StoreErrorKind,
    StoredMessage, SuspendedCall, ToolStatus, TurnLease, TurnLocks, now_micros,
};
use crate::util::BoxFuture;

/// How durable a commit is: SQLite's `synchronous` setting (the store always runs in WAL mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SqliteSync {
    /// `FULL`, the default: a commit syncs the write-ahead log before it returns, so a row the
    /// store has reported as written survives a power loss or an OS crash, not only a crash of
    /// the process. It costs one `fsync` per synced commit: each write made outside a turn, and
    /// once per step of a turn (the write that settles its reply, which also syncs the turn's
    /// writes before it; see [`SqliteStore`]).
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
    /// (default 5 s; SQLite waits at most `i32::MAX` ms, about 24.8 days, and a longer one is
    /// taken as that).
    pub busy_timeout: Duration,
    /// How durable a commit is (default [`SqliteSync::Full`]).
    pub synchronous: SqliteSync,
    /// How long a turn's lease on its session lasts unless renewed (default 30 s). A running
    /// turn renews it every third of this; a process that dies mid-turn holds its sessions for
    /// at most this long, then the next turn takes over and repairs what it left. On Linux a
    /// process of this machine that is gone, or a turn of this process whose Tokio runtime was
    /// dropped mid-turn, holds them not at all: the next turn sees it and takes over at once.
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

/// The longest busy timeout SQLite takes: `i32::MAX` ms, about 24.8 days.
const LONGEST_BUSY_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

impl SqliteOptions {
    /// These options with another busy timeout (at most about 24.8 days; a longer one, such as
    /// `Duration::MAX`, is taken as that).
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
/// them: a turn holds a lease row in the file (see [`SqliteOptions::turn_lease`]). Its queries
/// run on Tokio's blocking pool, or inline outside a Tokio runtime; taking a turn's lease
/// (`lock_turn`) needs a Tokio runtime, which renews the lease on a task.
///
/// With [`SqliteSync::Full`], a turn syncs the log once per step, not once per write: the write
/// that settles a reply (completed or failed) is synced, and so is the turn's last write (giving
/// its session back) when one before it was not; its other writes (its lease, the user's
/// message, a pending reply, tool results) commit without waiting for the disk and become
/// durable with the next synced commit. A crash of the process loses none of them; a power loss
/// may lose what a running turn wrote since its last synced commit, and the session then reads
/// as if the turn had been cut off there (the next turn repairs it as after any crash). Writes
/// made outside a turn are each synced.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Db>>,
    file: DbFile,
    /// The turn locks of this store and its clones, within the process.
    locks: Arc<TurnLocks>,
    /// The sessions a turn of this store holds, whose writes are deferred.
    turns: InTurn,
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
    /// that is not a database or is another program's database (its tables not those of the
    /// schema version it records), or a path or file that cannot be written is an error naming
    /// the path; such a file is left untouched.
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
        // Longer than SQLite takes, rusqlite would panic setting it.
        let options = SqliteOptions {
            busy_timeout: options.busy_timeout.min(LONGEST_BUSY_TIMEOUT),
            ..options
        };
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
        conn.busy_timeout(options.busy_timeout)
            .map_err(|e| file.sqlite(&e))?;
        // Checked before WAL mode is switched on, which changes the file for good: a file
        // refused for its schema version (newer, or another program's) is left as it was.
        let found = schema::check(&conn).map_err(|e| file.migrate(&e))?;
        configure(&conn, &options)
            .map_err(|e| file.sqlite(&e))
            .and_then(|mode| {
                if mode.eq_ignore_ascii_case("wal") {
                    Ok(())
                } else {
                    Err(file.no_wal(&mode))
                }
            })?;
        schema::migrate(&mut conn, found).map_err(|e| file.migrate(&e))?;
        // SQLite opens a file it may not write read-only, without an error: an up-to-date
        // schema writes nothing here, so it would otherwise surface at the first turn.
        if conn
            .is_readonly(rusqlite::MAIN_DB)
            .map_err(|e| file.sqlite(&e))?
        {
            return Err(file.read_only());
        }
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(Db::new(conn, options.synchronous))),
            file,
            locks: Arc::default(),
            turns: InTurn::default(),
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
        let job = move || work(&mut commit::lock(&conn).conn, &file);
        self.spawn(job).await
    }

    /// Runs `work`, a write, as [`run`](Self::run) does, committed as `commit` says.
    async fn write<T, F>(&self, commit: Commit, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &DbFile) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let file = self.file.clone();
        let job =
            move || commit::lock(&conn).write(commit, |conn| work(conn, &file), |e| file.sqlite(e));
        self.spawn(job).await
    }

    /// Runs `job` on Tokio's blocking pool, or inline without a runtime.
    async fn spawn<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.spawn_blocking(job).await.map_err(|e| {
                self.file
                    .at(format_args!("the database task did not finish: {e}"))
            })?,
            Err(_) => job(),
        }
    }
}

/// Sets WAL mode (returning the journal mode now in force) and durability.
fn configure(conn: &Connection, options: &SqliteOptions) -> Result<String, rusqlite::Error> {
    // The switch answers "busy" at once, without the busy timeout, while another connection
    // reads the file (processes opening a new file together): it is tried again until the
    // timeout has passed.
    let deadline = Instant::now().checked_add(options.busy_timeout);
    let mode: String = loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)) {
            Err(error)
                if error.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && deadline.is_none_or(|deadline| Instant::now() < deadline) =>
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            mode => break mode?,
        }
    };
    conn.pragma_update(None, "synchronous", options.synchronous.as_str())?;
    Ok(mode)
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
        session_id: session.into(),
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

    fn has_rows<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let session = session.to_owned();
        Box::pin(self.run(move |conn, file| {
            let mut statement = conn
                .prepare_cached(row::HAS_ROWS)
                .map_err(|e| file.sqlite(&e))?;
            statement
                .query_row([session], |found| found.get(0))
                .map_err(|e| file.sqlite(&e))
        }))
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        let commit = self.turns.commit(session);
        let session = session.to_owned();
        Box::pin(self.write(commit, move |conn, file| {
            insert_row(conn, file, session, row)
        }))
    }

    fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        // Settling a reply ends a step: its one synced commit.
        let commit = match update.status {
            Some(_) => Commit::Synced,
            None => self.turns.commit(session),
        };
        let session = session.to_owned();
        Box::pin(self.write(commit, move |conn, file| {
            update_row(conn, file, &session, id, update)
        }))
    }

    fn delete<'a>(&'a self, session: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        let commit = self.turns.commit(session);
        let session = session.to_owned();
        Box::pin(self.write(commit, move |conn, file| {
            delete_row(conn, file, &session, id)
        }))
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
        Box::pin(self.write(Commit::Synced, move |conn, file| {
            store_suspended(conn, file, &session, &calls)
        }))
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
        Box::pin(self.write(Commit::Synced, move |conn, file| {
            store_approved(conn, file, &session, &tools)
        }))
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        Box::pin(lease::take(self, session, wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::store::MessageStatus;

    /// The connection's `synchronous` setting after a write, and whether a commit waits for a
    /// synced one.
    fn state(store: &SqliteStore) -> (SqliteSync, bool) {
        let db = commit::lock(&store.conn);
        (db.current(), db.unsynced())
    }

    /// The writes of a one-tool-call turn, as the engine makes them under the session's lease:
    /// each step's settled reply is the one synced commit (it syncs the deferred ones before it),
    /// the give-back is deferred when nothing waits, and writes outside a turn are each synced.
    /// Every row, deferred or not, is in the file when it is opened again.
    #[tokio::test]
    async fn a_turn_syncs_once_per_step_and_writes_outside_a_turn_each_sync() {
        let dir = std::env::temp_dir().join(format!(
            "agent-sqlite-commit-{}-{}",
            std::process::id(),
            now_micros()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("turns.db");
        let store = SqliteStore::open(&path).expect("open");
        let (full, normal) = (SqliteSync::Full, SqliteSync::Normal);
        let pending = || NewMessage {
            message: Message::assistant(""),
            status: MessageStatus::Pending,
            request_sent_at: Some(now_micros()),
            silent: false,
        };
        let completed = |text: &str| MessageUpdate {
            message: Some(Message::assistant(text)),
            status: Some(MessageStatus::Completed),
            response_completed_at: Some(now_micros()),
            silent: None,
        };
        let tool = Message::Tool {
            call_id: "c1".into(),
            name: "t".into(),
            content: "42".into(),
            is_error: false,
        };
        let mut trace = Vec::new();
        let write = |label: &'static str, store: &SqliteStore, trace: &mut Vec<_>| {
            trace.push((label, state(store)));
        };
        store
            .insert("other", NewMessage::completed(Message::user("outside")))
            .await
            .expect("insert");
        write("insert outside a turn", &store, &mut trace);
        let lease = store
            .lock_turn("s", true)
            .await
            .expect("lock")
            .expect("free");
        write("lease taken", &store, &mut trace);
        store
            .insert("s", NewMessage::completed(Message::user("hi")))
            .await
            .expect("user");
        write("user row", &store, &mut trace);
        let row = store.insert("s", pending()).await.expect("pending").id;
        write("reply pending", &store, &mut trace);
        store.update("s", row, completed("")).await.expect("done");
        write("reply completed", &store, &mut trace);
        store
            .insert("s", NewMessage::completed(tool))
            .await
            .expect("tool");
        write("tool result", &store, &mut trace);
        let row = store.insert("s", pending()).await.expect("pending").id;
        write("reply pending", &store, &mut trace);
        store
            .update("s", row, completed("done"))
            .await
            .expect("done");
        write("reply completed", &store, &mut trace);
        lease.release().await;
        write("lease given back", &store, &mut trace);
        let lease = store
            .lock_turn("s", true)
            .await
            .expect("lock")
            .expect("free");
        lease.release().await;
        write("empty turn given back", &store, &mut trace);
        store
            .insert("s", NewMessage::completed(Message::user("after")))
            .await
            .expect("insert");
        write("insert after the turn", &store, &mut trace);
        assert_eq!(
            trace,
            [
                ("insert outside a turn", (full, false)),
                ("lease taken", (normal, true)),
                ("user row", (normal, true)),
                ("reply pending", (normal, true)),
                ("reply completed", (full, false)),
                ("tool result", (normal, true)),
                ("reply pending", (normal, true)),
                ("reply completed", (full, false)),
                ("lease given back", (normal, true)),
                ("empty turn given back", (full, false)),
                ("insert after the turn", (full, false)),
            ]
        );
        drop(store);
        let reopened = SqliteStore::open(&path).expect("reopen");
        let rows = reopened.load("s").await.expect("load");
        let texts: Vec<(&str, MessageStatus)> = rows
            .iter()
            .map(|row| (row.message.text(), row.status))
            .collect();
        let done = MessageStatus::Completed;
        assert_eq!(
            texts,
            [
                ("hi", done),
                ("", done),
                ("42", done),
                ("done", done),
                ("after", done)
            ]
        );
        drop(reopened);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
