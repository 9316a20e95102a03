//! The PostgreSQL session store beyond the store conformance suite (`store_conformance.rs`), on
//! the test cluster: the schema and its version, migrations run once by concurrent processes,
//! an older schema migrated with its rows kept, a newer or foreign schema refused untouched (and
//! one whose recorded version lacks its tables), a user or database that may not write refused, connections the server dropped replaced, and
//! every failure a user can meet (unreachable server, refused password, missing database, bad
//! URL, malformed row) as an error of its kind naming the server, never the password.

use std::sync::Arc;

use agent_core::{Message, NewMessage, SessionStore, StoreError, StoreErrorKind};
use agent_postgres::{PostgresOptions, PostgresStore};
use tests::postgres::{PASSWORD, USER, cluster};

/// The name errors give the server of `url` (a database of the test cluster).
fn server_of(database: &str) -> String {
    format!("postgres://{USER}@127.0.0.1:{}/{database}", cluster().port)
}

/// The database a URL of the test cluster names.
fn database_of(url: &str) -> &str {
    url.rsplit('/').next().expect("a database")
}

async fn connect_error(url: &str) -> StoreError {
    let options = PostgresOptions::default().connect_timeout(std::time::Duration::from_secs(2));
    match PostgresStore::connect_with(url, options).await {
        Ok(store) => panic!("connected: {store:?}"),
        Err(error) => error,
    }
}

/// Panics unless `error` is of `kind`, names `server`, says each of `words` and does not print
/// the password.
fn assert_error(error: &StoreError, kind: StoreErrorKind, server: &str, words: &[&str]) {
    let text = error.to_string();
    assert_eq!(error.kind(), kind, "{text}");
    assert!(!text.contains(PASSWORD), "the password is printed: {text}");
    assert!(
        text.contains(&format!("session store {server}:")),
        "{server} is not named: {text}"
    );
    for word in words {
        assert!(
            text.to_lowercase().contains(&word.to_lowercase()),
            "does not say `{word}`: {text}"
        );
    }
}

/// The tables of `database`'s public schema, by name.
async fn tables(database: &str) -> Vec<String> {
    cluster()
        .client(database)
        .await
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
            &[],
        )
        .await
        .expect("tables")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test]
async fn failures_name_the_server_and_their_kind_but_never_the_password() {
    let url = cluster().database("failures").await;
    let database = database_of(&url);

    let wrong = url.replace(PASSWORD, "not-the-password");
    assert_error(
        &connect_error(&wrong).await,
        StoreErrorKind::Auth,
        &server_of(database),
        &["refused the credentials", "password authentication failed"],
    );

    let missing = url.replace(database, "no_such_database");
    assert_error(
        &connect_error(&missing).await,
        StoreErrorKind::Other,
        &server_of("no_such_database"),
        &["does not exist"],
    );

    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let unreachable = url.replace(&format!(":{}/", cluster().port), &format!(":{port}/"));
    let error = connect_error(&unreachable).await;
    let expected = format!("postgres://{USER}@127.0.0.1:{port}/{database}");
    assert_error(
        &error,
        StoreErrorKind::Unreachable,
        &expected,
        &["cannot reach the server", "refused"],
    );

    let bad = format!("postgres://{USER}:{PASSWORD}@127.0.0.1:notaport/{database}");
    let error = connect_error(&bad).await;
    assert_eq!(error.kind(), StoreErrorKind::Other, "{error}");
    assert!(
        error.to_string().contains("not a PostgreSQL URL"),
        "{error}"
    );
    assert!(!error.to_string().contains(PASSWORD), "{error}");

    let store = PostgresStore::connect(&url).await.expect("connect");
    assert_eq!(store.server(), server_of(database));
    let debug = format!("{store:?}");
    assert!(
        debug.contains(&server_of(database)) && !debug.contains(PASSWORD),
        "{debug}"
    );
}

#[tokio::test]
async fn a_new_database_gets_the_latest_schema_once_however_many_processes_connect() {
    let url = cluster().database("schema").await;
    // Eight stores connect at once to the empty database: one migrates, the others wait and
    // find it done.
    let connects = (0..8).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { PostgresStore::connect(&url).await })
    });
    let mut stores = Vec::new();
    for connect in connects {
        stores.push(connect.await.expect("task").expect("connect"));
    }
    let row = stores[0]
        .insert("s", NewMessage::completed(Message::user("hi")))
        .await
        .expect("insert");
    assert_eq!(
        stores[7].load("s").await.expect("load"),
        std::slice::from_ref(&row)
    );

    let client = cluster().client(database_of(&url)).await;
    let versions: Vec<i64> = client
        .query("SELECT version FROM agent_schema", &[])
        .await
        .expect("versions")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(versions, [PostgresStore::SCHEMA_VERSION]);
    assert_eq!(PostgresStore::SCHEMA_VERSION, 2);
    let columns: Vec<(String, String)> = client
        .query(
            "SELECT table_name::text, column_name::text || ' ' || data_type::text \
             FROM information_schema.columns WHERE table_schema = 'public' \
             ORDER BY table_name, ordinal_position",
            &[],
        )
        .await
        .expect("columns")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let expected: Vec<(String, String)> = [
        ("agent_schema", "version bigint"),
        ("approved_tools", "session_id text"),
        ("approved_tools", "tool text"),
        ("messages", "id bigint"),
        ("messages", "session_id text"),
        ("messages", "role text"),
        ("messages", "content text"),
        ("messages", "tool_calls text"),
        ("messages", "tool_call_id text"),
        ("messages", "name text"),
        ("messages", "reasoning text"),
        ("messages", "reasoning_signature text"),
        ("messages", "created_at bigint"),
        ("messages", "request_sent_at bigint"),
        ("messages", "response_completed_at bigint"),
        ("messages", "status text"),
        ("messages", "silent boolean"),
        ("messages", "tool_status text"),
        ("messages", "provider_blocks text"),
        ("suspended_calls", "session_id text"),
        ("suspended_calls", "position integer"),
        ("suspended_calls", "call_id text"),
        ("suspended_calls", "record text"),
        ("turn_leases", "session_id text"),
        ("turn_leases", "holder text"),
        ("turn_leases", "expires_at timestamp with time zone"),
    ]
    .into_iter()
    .map(|(table, column)| (table.to_owned(), column.to_owned()))
    .collect();
    assert_eq!(columns, expected);
    let index: String = client
        .query_one(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'messages_session_id'",
            &[],
        )
        .await
        .expect("index")
        .get(0);
    assert!(index.contains("(session_id, id)"), "{index}");
}

/// A database at schema version 1 (before suspended calls were stored) is migrated to the
/// latest by the next store that connects: the new tables are made, the rows already there
/// are kept, and the suspended calls and approvals are stored from then on.
#[tokio::test]
async fn a_version_one_database_is_migrated_and_keeps_its_rows() {
    let url = cluster().database("version-one").await;
    let store = PostgresStore::connect(&url).await.expect("connect");
    let row = store
        .insert("s", NewMessage::completed(Message::user("kept")))
        .await
        .expect("insert");
    drop(store);
    let database = database_of(&url);
    // What version 1 had: the tables of step 2 were not there.
    cluster()
        .sql(
            database,
            "DROP TABLE suspended_calls; DROP TABLE approved_tools; \
             UPDATE agent_schema SET version = 1",
        )
        .await;

    let store = PostgresStore::connect(&url).await.expect("migrate");
    let version: i64 = cluster()
        .client(database)
        .await
        .query_one("SELECT version FROM agent_schema", &[])
        .await
        .expect("version")
        .get(0);
    assert_eq!(version, PostgresStore::SCHEMA_VERSION);
    assert_eq!(store.load("s").await.expect("load"), [row]);
    store
        .set_approved_tools("s", vec!["delete".to_owned()])
        .await
        .expect("a standing approval");
    assert_eq!(store.approved_tools("s").await.expect("read"), ["delete"]);
    assert_eq!(store.suspended("s").await.expect("read"), []);
}

#[tokio::test]
async fn a_database_from_a_newer_version_is_refused_untouched() {
    let url = cluster().database("newer").await;
    drop(PostgresStore::connect(&url).await.expect("connect"));
    let newer = PostgresStore::SCHEMA_VERSION + 1;
    let database = database_of(&url);
    cluster()
        .sql(
            database,
            &format!("UPDATE agent_schema SET version = {newer}"),
        )
        .await;
    let error = connect_error(&url).await;
    assert_error(
        &error,
        StoreErrorKind::NewerSchema,
        &server_of(database),
        &[
            "newer version",
            &format!("schema version {newer}"),
            "upgrade",
        ],
    );
    let version: i64 = cluster()
        .client(database)
        .await
        .query_one("SELECT version FROM agent_schema", &[])
        .await
        .expect("version")
        .get(0);
    assert_eq!(version, newer, "left as it was");
}

#[tokio::test]
async fn another_programs_database_is_not_taken_over() {
    let url = cluster().database("foreign").await;
    let database = database_of(&url);
    cluster()
        .sql(
            database,
            "CREATE TABLE messages (x TEXT); INSERT INTO messages VALUES ('theirs')",
        )
        .await;
    let error = connect_error(&url).await;
    assert_error(
        &error,
        StoreErrorKind::Other,
        &server_of(database),
        &["already exists", "another program"],
    );
    // The failed migration left nothing behind: no version table, their table as it was.
    assert_eq!(tables(database).await, ["messages"]);
}

#[tokio::test]
async fn a_recorded_version_without_its_tables_is_refused_untouched() {
    // Another program's `agent_schema` (or one whose tables were dropped by hand): at an
    // older version nothing is migrated into it, at the latest nothing is taken for granted.
    for version in [1, PostgresStore::SCHEMA_VERSION] {
        let url = cluster().database("foreignver").await;
        let database = database_of(&url);
        cluster()
            .sql(
                database,
                &format!(
                    "CREATE TABLE agent_schema (version BIGINT NOT NULL); \
                     INSERT INTO agent_schema VALUES ({version})"
                ),
            )
            .await;
        let error = connect_error(&url).await;
        assert_error(
            &error,
            StoreErrorKind::Other,
            &server_of(database),
            &[
                "not an agent-postgres session store",
                &format!("schema version {version}"),
                "`messages`",
                "another program",
            ],
        );
        assert_eq!(tables(database).await, ["agent_schema"], "left as it was");
    }
}

#[tokio::test]
async fn a_user_or_database_that_may_not_write_is_refused_at_connect() {
    let url = cluster().database("readonly").await;
    drop(PostgresStore::connect(&url).await.expect("connect"));
    let database = database_of(&url);
    // A role that may only read the session tables.
    let reader = format!("{database}_reader");
    cluster()
        .sql(
            database,
            &format!(
                "CREATE ROLE {reader} LOGIN PASSWORD '{PASSWORD}'; \
                 GRANT CONNECT ON DATABASE {database} TO {reader}; \
                 GRANT USAGE ON SCHEMA public TO {reader}; \
                 GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}"
            ),
        )
        .await;
    let as_reader = url.replacen(&format!("{USER}:"), &format!("{reader}:"), 1);
    assert_ne!(as_reader, url);
    let server = format!(
        "postgres://{reader}@127.0.0.1:{}/{database}",
        cluster().port
    );
    assert_error(
        &connect_error(&as_reader).await,
        StoreErrorKind::Unwritable,
        &server,
        &["may not write", "insert"],
    );
    // A database whose transactions are read-only by default.
    cluster()
        .sql(
            database,
            &format!("ALTER DATABASE {database} SET default_transaction_read_only = on"),
        )
        .await;
    assert_error(
        &connect_error(&url).await,
        StoreErrorKind::Unwritable,
        &server_of(database),
        &["may not write", "read-only"],
    );
}

/// PostgreSQL's limits, where the other stores have none: a NUL character in text, a session
/// id past what its indexes hold. Each is an error saying so, and nothing is written.
#[tokio::test]
async fn a_nul_character_or_an_overlong_session_id_is_an_error_saying_so() {
    let url = cluster().database("limits").await;
    let store = PostgresStore::connect(&url).await.expect("connect");
    let server = server_of(database_of(&url));
    let error = store
        .insert("s", NewMessage::completed(Message::user("a\0b")))
        .await
        .expect_err("a NUL character");
    assert_error(
        &error,
        StoreErrorKind::Other,
        &server,
        &["NUL character (U+0000)"],
    );
    // Letters that do not repeat (a repeated one compresses into the index).
    let mut seed = 7u32;
    let long: String = (0..4_000)
        .map(|_| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            char::from(b'a' + (seed >> 16) as u8 % 26)
        })
        .collect();
    let error = store
        .insert(&long, NewMessage::completed(Message::user("hi")))
        .await
        .expect_err("a session id of 4,000 bytes");
    assert_error(
        &error,
        StoreErrorKind::Other,
        &server,
        &["at most about 2,700 bytes"],
    );
    assert_eq!(store.load("s").await.expect("load"), []);
}

/// A pool size past what any server accepts, such as `usize::MAX` for "no limit", connects
/// (taken as PostgreSQL's ceiling, 262,143) instead of panicking.
#[tokio::test]
async fn a_pool_size_past_what_a_server_accepts_connects() {
    let url = cluster().database("pool-size").await;
    let options = PostgresOptions::default().max_connections(usize::MAX);
    let store = tokio::spawn(async move { PostgresStore::connect_with(&url, options).await })
        .await
        .expect("connect without panicking")
        .expect("connect");
    let row = store
        .insert("s", NewMessage::completed(Message::user("hi")))
        .await
        .expect("insert");
    assert_eq!(store.load("s").await.expect("load"), [row]);
    assert!(
        format!("{store:?}").contains("max_connections: 262143"),
        "{store:?}"
    );
}

#[tokio::test]
async fn a_malformed_row_is_an_error_naming_the_row() {
    let url = cluster().database("malformed").await;
    let store = PostgresStore::connect(&url).await.expect("connect");
    let database = database_of(&url);
    cluster()
        .sql(
            database,
            "INSERT INTO messages (session_id, role, content, created_at, status, tool_status) \
             VALUES ('s', 'tool', 'result', 1, 'completed', 'success')",
        )
        .await;
    let error = store.load("s").await.expect_err("malformed");
    assert_error(
        &error,
        StoreErrorKind::Corrupt,
        &server_of(database),
        &["malformed", "tool_call_id"],
    );
}

#[tokio::test]
async fn connections_the_server_dropped_are_replaced() {
    let url = cluster().database("dropped").await;
    let store: Arc<dyn SessionStore> =
        Arc::new(PostgresStore::connect(&url).await.expect("connect"));
    let first = store
        .insert("s", NewMessage::completed(Message::user("before")))
        .await
        .expect("insert");
    let database = database_of(&url);
    // Several rounds: the call racing a termination may or may not find the connection dead.
    for round in 0..5 {
        cluster()
            .sql(
                "postgres",
                &format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'"
                ),
            )
            .await;
        // The pool notices the closed connection and opens another one. At most the call
        // racing the termination fails, as unreachable: the connection it failed on leaves
        // the pool with it.
        let mut outcome = store.load("s").await;
        if let Err(error) = &outcome {
            assert_eq!(
                error.kind(),
                StoreErrorKind::Unreachable,
                "round {round}: {error}"
            );
            outcome = store.load("s").await;
        }
        let rows = outcome.unwrap_or_else(|error| panic!("round {round}: {error}"));
        assert_eq!(rows, std::slice::from_ref(&first), "round {round}");
    }
}

/// The cluster a test binary started stops, and its folder goes, when that binary dies without
/// a chance to clean up (SIGKILL): no server outlives the tests.
#[test]
fn the_test_cluster_stops_when_its_test_binary_is_killed() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let mut child = Command::new(env!("CARGO_BIN_EXE_cluster_until_killed"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the child");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the child's line");
    let (pid, dir) = line.trim().split_once(' ').expect("pid and folder");
    let postmaster = std::path::Path::new("/proc").join(pid);
    assert!(postmaster.exists(), "the server runs: {line}");
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    let killed = Instant::now();
    while (postmaster.exists() || std::path::Path::new(dir).exists())
        && killed.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !postmaster.exists(),
        "the server {pid} outlived its test binary"
    );
    assert!(!std::path::Path::new(dir).exists(), "{dir} is left behind");
}
