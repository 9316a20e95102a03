//! The SQLite session store beyond the store conformance suite (`store_conformance.rs`): the
//! columns, reopening, WAL and schema versions, and every failure a user can meet (newer
//! schema, corrupt file, unwritable path, a lock held by another connection) as a clear error
//! naming the file, with nothing lost.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_core::{
    Message, MessageStatus, MessageUpdate, NewMessage, SessionStore, SqliteOptions, SqliteStore,
    StoreError, StoreErrorKind,
};
use tests::conformance::{assistant_with_calls, every_kind};

/// A fresh directory under the system temp dir, removed (permissions restored first) on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "agent-store-sqlite-{}-{name}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        set_mode(&self.0, 0o700);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) {}

fn assert_names(error: &StoreError, path: &Path, words: &[&str]) {
    let text = error.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "error does not name {}: {text}",
        path.display()
    );
    for word in words {
        assert!(
            text.to_lowercase().contains(&word.to_lowercase()),
            "error does not say `{word}`: {text}"
        );
    }
}

fn open_error(path: &Path) -> StoreError {
    match SqliteStore::open(path) {
        Ok(store) => panic!("{} opened: {store:?}", path.display()),
        Err(error) => error,
    }
}

#[tokio::test]
async fn columns_hold_each_part_of_the_message() {
    let dir = TempDir::new("columns");
    let path = dir.join("sessions.db");
    let store = SqliteStore::open(&path).expect("open");
    for row in every_kind() {
        store.insert("s1", row).await.expect("insert");
    }
    drop(store);
    let conn = rusqlite::Connection::open(&path).expect("plain connection");
    let mut statement = conn
        .prepare(
            "SELECT role, content, tool_calls, tool_call_id, name, reasoning, reasoning_signature, \
             status, silent, tool_status, request_sent_at FROM messages ORDER BY id",
        )
        .expect("prepare");
    type Columns = (
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        bool,
        Option<String>,
        Option<i64>,
    );
    let rows: Vec<Columns> = statement
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
                r.get(10)?,
            ))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let (role, content, tool_calls, call_id, name, reasoning, signature, status, silent, ts, sent) =
        &rows[2];
    assert_eq!(
        (role.as_str(), content.as_str(), status.as_str(), *silent),
        ("assistant", "Let me look — ünïcödé ✓", "pending", false)
    );
    let calls: serde_json::Value = serde_json::from_str(tool_calls.as_deref().expect("tool calls"))
        .expect("tool_calls is JSON");
    assert_eq!(calls[0]["name"], "weather");
    assert_eq!(calls[1]["arguments"], "{not json");
    assert_eq!(
        (call_id, name, ts),
        (&None::<String>, &None::<String>, &None::<String>)
    );
    assert!(
        reasoning
            .as_deref()
            .is_some_and(|r| r.starts_with("The user"))
    );
    assert_eq!(signature.as_deref(), Some("sig-abc123=="));
    assert_eq!(*sent, Some(1_700_000_000_123_456));

    let tool = &rows[4];
    assert_eq!(
        (
            tool.0.as_str(),
            tool.3.as_deref(),
            tool.4.as_deref(),
            tool.9.as_deref()
        ),
        ("tool", Some("call_2"), Some("clock"), Some("error"))
    );
    assert_eq!(tool.2, None);
    assert_eq!(rows[3].9.as_deref(), Some("success"));
    assert!(rows[5].8, "silent");
    assert_eq!((rows[0].0.as_str(), rows[0].9.as_deref()), ("system", None));
}

#[tokio::test]
async fn rows_survive_reopening_the_file() {
    let dir = TempDir::new("reopen");
    let path = dir.join("s.db");
    let store = SqliteStore::open(&path).expect("open");
    let mut written = Vec::new();
    for row in every_kind() {
        written.push(store.insert("s", row).await.expect("insert"));
    }
    store
        .update(
            "s",
            written[2].id,
            MessageUpdate {
                status: Some(MessageStatus::Completed),
                response_completed_at: Some(9),
                ..MessageUpdate::default()
            },
        )
        .await
        .expect("update");
    written[2].status = MessageStatus::Completed;
    written[2].response_completed_at = Some(9);
    drop(store);

    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(store.load("s").await.expect("load"), written);
    let next = store
        .insert("s", NewMessage::completed(Message::user("again")))
        .await
        .expect("insert");
    assert!(next.id > written[written.len() - 1].id);
}

#[tokio::test]
async fn the_file_is_in_wal_mode_at_the_latest_schema_version() {
    let dir = TempDir::new("wal");
    let path = dir.join("s.db");
    let store = SqliteStore::open(&path).expect("open");
    store
        .insert("s", NewMessage::completed(Message::user("hi")))
        .await
        .expect("insert");
    let conn = rusqlite::Connection::open(&path).expect("plain connection");
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    assert_eq!(version, SqliteStore::SCHEMA_VERSION);
    assert_eq!(SqliteStore::SCHEMA_VERSION, 4);
    let index: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages'",
            [],
            |row| row.get(0),
        )
        .expect("index");
    assert!(index.contains("(session_id, id)"), "{index}");
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('messages')")
        .and_then(|mut s| s.query_map([], |row| row.get(0))?.collect())
        .expect("columns");
    assert_eq!(
        columns,
        [
            "id",
            "session_id",
            "role",
            "content",
            "tool_calls",
            "tool_call_id",
            "name",
            "reasoning",
            "reasoning_signature",
            "created_at",
            "request_sent_at",
            "response_completed_at",
            "status",
            "silent",
            "tool_status",
            "provider_blocks"
        ]
    );
}

#[tokio::test]
async fn a_version_1_file_is_migrated_and_keeps_its_rows() {
    let dir = TempDir::new("migrate-v1");
    let path = dir.join("v1.db");
    {
        // A file as the first release wrote it: its table, and one row.
        let conn = rusqlite::Connection::open(&path).expect("create");
        conn.execute_batch(
            "CREATE TABLE messages (
                id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,
                role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
                content TEXT NOT NULL, tool_calls TEXT, tool_call_id TEXT, name TEXT, reasoning TEXT,
                reasoning_signature TEXT, created_at INTEGER NOT NULL, request_sent_at INTEGER,
                response_completed_at INTEGER,
                status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
                silent INTEGER NOT NULL DEFAULT 0 CHECK (silent IN (0, 1)),
                tool_status TEXT CHECK (tool_status IN ('success', 'error')));
             CREATE INDEX messages_session_id ON messages (session_id, id);
             INSERT INTO messages (session_id, role, content, created_at, status)
                 VALUES ('s', 'assistant', 'from v1', 1, 'completed');
             PRAGMA user_version = 1;",
        )
        .expect("a version 1 file");
    }
    let store = SqliteStore::open(&path).expect("migrated");
    let rows = store.load("s").await.expect("load");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].message, Message::assistant("from v1"));
    store
        .insert("s", NewMessage::completed(assistant_with_calls()))
        .await
        .expect("a row with provider blocks");
    let rows = store.load("s").await.expect("load");
    assert_eq!(rows[1].message, assistant_with_calls());
    let conn = rusqlite::Connection::open(&path).expect("plain connection");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    assert_eq!(version, 4);
}

#[tokio::test]
async fn a_file_from_a_newer_version_is_refused_untouched() {
    let dir = TempDir::new("newer");
    let path = dir.join("s.db");
    drop(SqliteStore::open(&path).expect("open"));
    let conn = rusqlite::Connection::open(&path).expect("plain connection");
    conn.pragma_update(None, "user_version", SqliteStore::SCHEMA_VERSION + 1)
        .expect("set user_version");
    drop(conn);

    let error = open_error(&path);
    assert_names(&error, &path, &["newer version", "upgrade"]);
    assert_eq!(error.kind(), StoreErrorKind::NewerSchema);
    let conn = rusqlite::Connection::open(&path).expect("plain connection");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    assert_eq!(version, SqliteStore::SCHEMA_VERSION + 1);
}

#[tokio::test]
async fn a_corrupt_file_is_a_clear_error() {
    let dir = TempDir::new("corrupt");
    let path = dir.join("s.db");
    let garbage: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&path, &garbage).expect("write garbage");
    let error = open_error(&path);
    assert_names(&error, &path, &["file is not a database"]);
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    assert_eq!(
        std::fs::read(&path).expect("read back"),
        garbage,
        "left as it was"
    );

    // A database of another program (same table name, no version) is not taken over either.
    let other = dir.join("other.db");
    let conn = rusqlite::Connection::open(&other).expect("plain connection");
    conn.execute_batch("CREATE TABLE messages (x)")
        .expect("create");
    drop(conn);
    let error = open_error(&other);
    assert_names(&error, &other, &["already exists", "another program"]);
}

#[tokio::test]
async fn another_programs_database_with_a_schema_version_is_refused_untouched() {
    let dir = TempDir::new("foreign");
    let tables = |path: &Path| -> (i64, Vec<String>) {
        let conn = rusqlite::Connection::open(path).expect("plain connection");
        let version = conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .expect("user_version");
        let mut names = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .expect("prepare");
        let names = names
            .query_map([], |row| row.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("names");
        (version, names)
    };
    // A file of another program that keeps its own `user_version`: at this build's version
    // (nothing to migrate) and at an older one (which would be migrated).
    for version in [SqliteStore::SCHEMA_VERSION, 2] {
        let path = dir.join(&format!("users-{version}.db"));
        let conn = rusqlite::Connection::open(&path).expect("plain connection");
        conn.execute_batch(&format!(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); PRAGMA user_version = {version};"
        ))
        .expect("create");
        drop(conn);
        let error = open_error(&path);
        assert_names(
            &error,
            &path,
            &[
                "not an agent-core session store",
                "`messages`",
                "another program",
            ],
        );
        assert_eq!(
            tables(&path),
            (version, vec!["users".to_owned()]),
            "untouched"
        );
    }

    // A store's own file missing a table of its version.
    let path = dir.join("s.db");
    drop(SqliteStore::open(&path).expect("open"));
    let conn = rusqlite::Connection::open(&path).expect("plain connection");
    conn.execute_batch("DROP TABLE approved_tools")
        .expect("drop");
    drop(conn);
    let error = open_error(&path);
    assert_names(&error, &path, &["`approved_tools`", "schema version 4"]);
}

/// A file refused at open is left byte for byte as it was, its journal mode too: another
/// program's database (with a `user_version` of its own, or a table named as one of the
/// store's) or one from a newer version, in SQLite's default rollback-journal mode, is not
/// switched to WAL mode (which would stay in its header for good).
#[tokio::test]
async fn a_refused_file_keeps_its_bytes_and_journal_mode() {
    let dir = TempDir::new("refused-journal");
    let cases = [
        (
            "users.db",
            "CREATE TABLE users (id INTEGER PRIMARY KEY); PRAGMA user_version = 4;",
        ),
        (
            "newer.db",
            "CREATE TABLE users (id INTEGER PRIMARY KEY); PRAGMA user_version = 99;",
        ),
        ("messages.db", "CREATE TABLE messages (x);"),
    ];
    for (name, sql) in cases {
        let path = dir.join(name);
        let conn = rusqlite::Connection::open(&path).expect("plain connection");
        conn.execute_batch(sql).expect("create");
        drop(conn);
        let before = std::fs::read(&path).expect("read");
        let error = open_error(&path);
        assert_names(&error, &path, &[]);
        let after = std::fs::read(&path).expect("read back");
        // The header's bytes 18 and 19 say the journal mode: 1 rollback, 2 WAL.
        assert!(
            after == before,
            "{name}: changed (header bytes 18-19 {:?} -> {:?})",
            &before[18..20],
            &after[18..20]
        );
        let conn = rusqlite::Connection::open(&path).expect("plain connection");
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .expect("journal_mode");
        assert_eq!(mode, "delete", "{name}: still in rollback-journal mode");
    }
}

/// Makes a file immutable (`chattr +i`) until dropped: even root then opens it read-only.
struct Immutable<'a>(&'a Path);

impl Immutable<'_> {
    fn set(path: &Path) -> Option<Immutable<'_>> {
        let status = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .stderr(std::process::Stdio::null())
            .status();
        status.is_ok_and(|s| s.success()).then_some(Immutable(path))
    }
}

impl Drop for Immutable<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(self.0)
            .status();
    }
}

#[tokio::test]
async fn a_read_only_file_is_refused_at_open() {
    let dir = TempDir::new("read-only-file");
    let path = dir.join("s.db");
    let store = SqliteStore::open(&path).expect("open");
    store
        .insert("s", NewMessage::completed(Message::user("kept")))
        .await
        .expect("insert");
    drop(store);
    set_mode(&path, 0o444);
    // Root ignores the mode; an immutable file is read-only for root too (where the file
    // system and the process allow `chattr`; with neither, there is nothing to check).
    let immutable = match std::fs::OpenOptions::new().append(true).open(&path) {
        Ok(_) => Immutable::set(&path),
        Err(_) => None,
    };
    if std::fs::OpenOptions::new().append(true).open(&path).is_ok() {
        return;
    }
    let error = open_error(&path);
    assert_names(&error, &path, &["read-only"]);
    assert_eq!(error.kind(), StoreErrorKind::Unwritable);
    drop(immutable);
    set_mode(&path, 0o644);
    let store = SqliteStore::open(&path).expect("writable again");
    assert_eq!(
        store.load("s").await.expect("load").len(),
        1,
        "nothing lost"
    );
}

#[tokio::test]
async fn an_unwritable_location_is_a_clear_error() {
    let dir = TempDir::new("unwritable");
    // The parent is a regular file.
    let file = dir.join("plain-file");
    std::fs::write(&file, b"not a directory").expect("write");
    let path = file.join("s.db");
    let error = open_error(&path);
    assert_names(&error, &path, &["cannot open", "not a directory"]);
    assert_eq!(error.kind(), StoreErrorKind::Io);

    // The directory does not exist.
    let path = dir.join("missing").join("s.db");
    let error = open_error(&path);
    assert_names(&error, &path, &["does not exist"]);
    assert_eq!(error.kind(), StoreErrorKind::Io);

    // The directory is read-only (root ignores the mode; nothing to check then).
    let locked = dir.join("read-only");
    std::fs::create_dir(&locked).expect("mkdir");
    set_mode(&locked, 0o500);
    let path = locked.join("s.db");
    if std::fs::write(locked.join("probe"), b"").is_err() {
        let error = open_error(&path);
        assert_names(&error, &path, &["permission denied"]);
        assert_eq!(error.kind(), StoreErrorKind::Unwritable);
    }

    // Not a file path at all.
    for path in ["", ":memory:"] {
        let error = open_error(Path::new(path));
        assert!(error.to_string().contains("file path"), "{error}");
    }
}

#[test]
fn a_database_locked_by_another_connection_fails_after_the_busy_timeout_and_loses_nothing() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let dir = TempDir::new("locked");
    let path = dir.join("s.db");
    let timeout = Duration::from_millis(200);
    let store = SqliteStore::open_with(&path, SqliteOptions::default().busy_timeout(timeout))
        .expect("open");
    let first = runtime
        .block_on(store.insert("s", NewMessage::completed(Message::user("first"))))
        .expect("insert");

    let other = rusqlite::Connection::open(&path).expect("second connection");
    other.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    let started = Instant::now();
    let error = runtime
        .block_on(store.insert("s", NewMessage::completed(Message::user("blocked"))))
        .expect_err("locked");
    assert!(
        started.elapsed() >= timeout,
        "waited {:?}",
        started.elapsed()
    );
    assert_names(&error, &path, &["locked", "another process"]);
    assert_eq!(error.kind(), StoreErrorKind::Locked);
    // Readers are not blocked in WAL mode.
    assert_eq!(
        runtime.block_on(store.load("s")).expect("load"),
        std::slice::from_ref(&first)
    );
    other.execute_batch("COMMIT").expect("unlock");

    let second = runtime
        .block_on(store.insert("s", NewMessage::completed(Message::user("after"))))
        .expect("insert after the lock");
    assert_eq!(
        runtime.block_on(store.load("s")).expect("load"),
        [first, second]
    );
}

/// A busy timeout longer than SQLite takes (`i32::MAX` ms), such as `Duration::MAX` for "wait
/// as long as it takes", opens the store (SQLite then waits as long as it can) instead of
/// panicking.
#[tokio::test]
async fn a_busy_timeout_longer_than_sqlite_takes_opens_the_store() {
    let dir = TempDir::new("busy-timeout");
    let path = dir.join("s.db");
    for timeout in [Duration::MAX, Duration::from_secs(30 * 24 * 60 * 60)] {
        let options = SqliteOptions::default().busy_timeout(timeout);
        let store = SqliteStore::open_with(&path, options)
            .unwrap_or_else(|error| panic!("{timeout:?}: {error}"));
        store
            .insert("s", NewMessage::completed(Message::user("hi")))
            .await
            .expect("insert");
    }
    assert_eq!(
        SqliteStore::open(&path)
            .expect("open")
            .load("s")
            .await
            .expect("load")
            .len(),
        2
    );
}

#[tokio::test]
async fn a_malformed_row_is_an_error_naming_the_row() {
    let dir = TempDir::new("malformed");
    let path = dir.join("s.db");
    let store = SqliteStore::open(&path).expect("open");
    let conn = rusqlite::Connection::open(&path).expect("plain connection");
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at, status, tool_status) \
         VALUES ('s', 'tool', 'result', 1, 'completed', 'success')",
        [],
    )
    .expect("raw insert");
    let error = store.load("s").await.expect_err("malformed");
    assert_names(&error, &path, &["malformed", "tool_call_id"]);
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
}

/// SQLite keeps whatever value a column is given: a row another program wrote with invalid
/// UTF-8 or a blob where text belongs, or text where a number belongs, is malformed too, an
/// error naming the row and the column.
#[tokio::test]
async fn a_row_holding_a_value_of_another_type_is_malformed() {
    let dir = TempDir::new("ill-typed");
    let path = dir.join("s.db");
    let store = SqliteStore::open(&path).expect("open");
    let conn = rusqlite::Connection::open(&path).expect("plain connection");
    let cases = [
        ("utf8", "content", "CAST(X'FF' AS TEXT)", "1"),
        ("blob", "content", "X'6869'", "1"),
        ("time", "created_at", "'hi'", "'yesterday'"),
    ];
    for (session, column, content, created_at) in cases {
        conn.execute(
            &format!(
                "INSERT INTO messages (session_id, role, content, created_at, status) \
                 VALUES ('{session}', 'user', {content}, {created_at}, 'completed')"
            ),
            [],
        )
        .expect("raw insert");
        let id = conn.last_insert_rowid();
        let error = store.load(session).await.expect_err("ill-typed");
        assert_names(
            &error,
            &path,
            &[
                &format!("message {id} is malformed"),
                &format!("`{column}`"),
            ],
        );
        assert_eq!(error.kind(), StoreErrorKind::Corrupt, "{session}");
    }
}

#[test]
fn works_without_a_tokio_runtime() {
    use std::task::{Context, Poll, Waker};

    let dir = TempDir::new("no-runtime");
    let store = SqliteStore::open(dir.join("s.db")).expect("open");
    let mut cx = Context::from_waker(Waker::noop());
    let mut insert = store.insert("s", NewMessage::completed(Message::user("hi")));
    let Poll::Ready(row) = insert.as_mut().poll(&mut cx) else {
        panic!("inline insert pending")
    };
    let row = row.expect("insert");
    drop(insert);
    let mut load = store.load("s");
    let Poll::Ready(rows) = load.as_mut().poll(&mut cx) else {
        panic!("inline load pending")
    };
    assert_eq!(rows.expect("load"), [row]);
}
