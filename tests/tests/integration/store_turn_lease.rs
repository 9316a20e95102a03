//! One turn at a time per session, owned by the store (issue 15 item 6, issue 12): every
//! process on one SQLite file or PostgreSQL database takes turns in a session one after the
//! other; a process that dies mid-turn holds its session no longer than its lease. (Agents and
//! stores within one process: the conformance suite, `store_conformance.rs`.)

use std::time::{Duration, Instant};

use agent_core::{
    AgentBuilder, CancelToken, ScriptedModel, ScriptedStep, StoredMessage, TurnErrorKind,
    TurnOverlap, TurnRequest, TurnStatus,
};
use tests::assert_whole;
use tokio::sync::mpsc;

use crate::durability::{Db, doomed_turn};

/// The rows' texts, in order.
fn texts(rows: &[StoredMessage]) -> Vec<String> {
    rows.iter()
        .map(|row| row.message.text().to_owned())
        .collect()
}

/// The lease row of `session`: its holder and how long it has left (by the database's clock
/// for PostgreSQL, this process's for SQLite, which stores µs since the epoch).
async fn lease_row(db: &Db, session: &str) -> Option<(String, Duration)> {
    let left = |micros: i64| Duration::from_micros(u64::try_from(micros).unwrap_or(0));
    match db {
        Db::Sqlite(path) => {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.query_row(
                "SELECT holder, expires_at FROM turn_leases WHERE session_id = ?1",
                [session],
                |row| Ok((row.get(0)?, left(row.get::<_, i64>(1)? - now_micros()))),
            )
            .ok()
        }
        Db::Postgres(url) => {
            let database = url.rsplit('/').next().unwrap();
            let client = tests::postgres::cluster().client(database).await;
            let row = client
                .query_opt(
                    "SELECT holder, (extract(epoch FROM expires_at - clock_timestamp()) \
                     * 1000000)::bigint FROM turn_leases WHERE session_id = $1",
                    &[&session],
                )
                .await
                .unwrap()?;
            Some((row.get(0), left(row.get(1))))
        }
    }
}

fn now_micros() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since.as_micros()).unwrap()
}

/// The default lease, checked at its real length: a running turn's row expires 30 s after it
/// was taken (or last renewed), names this process, and is gone once the turn ends.
#[tokio::test]
async fn a_running_turn_holds_a_thirty_second_lease_and_gives_it_back() {
    default_lease(Db::sqlite("lease-default")).await;
}

#[tokio::test]
async fn a_running_postgres_turn_holds_a_thirty_second_lease_and_gives_it_back() {
    default_lease(Db::postgres("lease-default").await).await;
}

async fn default_lease(db: Db) {
    let store = db.open().await;
    let (started, mut on_start) = mpsc::unbounded_channel();
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "hang", "{}")]);
    let conversation = AgentBuilder::new("held")
        .model(model)
        .store(store)
        .dyn_tool(tests::hanging_tool(started))
        .build()
        .unwrap()
        .session("s");
    let token = CancelToken::new();
    let turn = tokio::spawn({
        let conversation = conversation.clone();
        let request = TurnRequest::new("go").cancel(token.clone());
        async move { conversation.run(request).await }
    });
    tests::within("the tool starts", on_start.recv()).await;
    let (holder, left) = lease_row(&db, "s")
        .await
        .expect("a running turn holds a lease row");
    assert!(
        holder.starts_with(&format!("{}:", std::process::id())),
        "the row names this process: {holder}"
    );
    assert!(
        left > Duration::from_secs(25) && left <= Duration::from_secs(30),
        "the default lease runs 30 s: {left:?} left"
    );
    token.cancel();
    let result = tests::within("the turn ends", turn).await.unwrap();
    assert_eq!(result.status, TurnStatus::Aborted);
    assert_eq!(lease_row(&db, "s").await, None, "the lease is given back");
}

/// Another process's turn holds the session: a turn here is rejected (Reject), gives up after
/// its bound (WaitAtMost) while the other process renews its lease, and once that process is
/// killed, a waiting turn takes the session within about one lease and repairs what it left.
#[tokio::test]
async fn a_turn_in_another_process_holds_the_session_until_it_dies() {
    another_process_holds_the_session(Db::sqlite("lease-process")).await;
}

#[tokio::test]
async fn a_postgres_turn_in_another_process_holds_the_session_until_it_dies() {
    another_process_holds_the_session(Db::postgres("lease-process").await).await;
}

async fn another_process_holds_the_session(db: Db) {
    let lease = Duration::from_millis(300);
    let mut child = doomed_turn(&db, "tool", 300);
    let store = db.open().await;
    let agent = |overlap| {
        let model = ScriptedModel::new([ScriptedStep::new().text("Taken over.")]);
        AgentBuilder::new("next")
            .model(model)
            .store(store.clone())
            .turn_overlap(overlap)
            .build()
            .unwrap()
            .session("durable")
    };

    let rejected = agent(TurnOverlap::Reject).run("now?").await;
    assert_eq!(rejected.status, TurnStatus::Error);
    assert_eq!(rejected.error.unwrap().kind, TurnErrorKind::Busy);

    // Three lease lengths: the other process renews its lease all along.
    let waited = agent(TurnOverlap::WaitAtMost(lease * 3)).run("soon?").await;
    assert_eq!(waited.status, TurnStatus::Error);
    let error = waited.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Busy);
    assert!(error.message.contains("900 ms"), "{}", error.message);

    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    let killed = Instant::now();
    let result = agent(TurnOverlap::Wait).run("are you there?").await;
    let waited = killed.elapsed();
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    // A loose bound: the lease runs out 300 ms after its last renewal at the latest.
    assert!(waited < Duration::from_secs(10), "waited {waited:?}");
    let rows = store.load("durable").await.unwrap();
    assert_whole(&rows);
    assert_eq!(
        texts(&rows),
        [
            "Please answer.",
            "Running the tool.",
            "tool `wait` did not finish: its turn was interrupted",
            "are you there?",
            "Taken over.",
        ]
    );
}

/// A process of this machine that died holding a SQLite session's lease (killed, or stopped by
/// Ctrl-C before it gave the lease back) would hold the session until the lease runs out, 30 s
/// by default: a turn here sees that the holder is gone and takes the session at once, well
/// within a bound of a third of the lease. (A live holder keeps it: the test above.)
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_sqlite_turn_takes_the_session_of_a_dead_process_at_once() {
    let db = Db::sqlite("lease-dead");
    let mut child = doomed_turn(&db, "tool", 30_000);
    let (holder, _) = lease_row(&db, "durable").await.expect("the child's lease");
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    assert!(
        holder.starts_with(&format!("{}:", child.id())),
        "the row names the child: {holder}"
    );
    let model = ScriptedModel::new([ScriptedStep::new().text("Taken over.")]);
    let result = AgentBuilder::new("next")
        .model(model)
        .store(db.open().await)
        .turn_overlap(TurnOverlap::WaitAtMost(Duration::from_secs(10)))
        .build()
        .unwrap()
        .session("durable")
        .run("are you there?")
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(lease_row(&db, "durable").await, None, "given back");
}

/// A turn whose Tokio runtime is dropped mid-turn (a short-lived runtime per request, or one
/// shut down while a turn runs) cannot give its lease back, since its give-back would run on
/// that runtime; its process lives on, so the next turn of this process on the file or
/// database could not tell the holder is gone and waited for the lease to run out (30 s by
/// default). It now takes the session at once, well within a bound of a third of the lease,
/// and repairs the rows.
#[cfg(target_os = "linux")]
#[test]
fn a_sqlite_turn_takes_the_session_of_a_runtime_dropped_mid_turn_at_once() {
    runtime_dropped_mid_turn(Db::sqlite("lease-runtime"));
}

#[test]
fn a_postgres_turn_takes_the_session_of_a_runtime_dropped_mid_turn_at_once() {
    runtime_dropped_mid_turn(runtime().block_on(Db::postgres("lease-runtime")));
}

/// A runtime of its own for a test that drops one.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn runtime_dropped_mid_turn(db: Db) {
    let first = runtime();
    first.block_on(async {
        let (started, mut on_start) = mpsc::unbounded_channel();
        let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "hang", "{}")]);
        let conversation = AgentBuilder::new("held")
            .model(model)
            .store(db.open().await)
            .dyn_tool(tests::hanging_tool(started))
            .build()
            .unwrap()
            .session("s");
        tokio::spawn(async move { conversation.run("go").await });
        tests::within("the tool starts", on_start.recv()).await;
        assert!(
            lease_row(&db, "s").await.is_some(),
            "the turn holds a lease"
        );
    });
    drop(first);
    runtime().block_on(async {
        let store = db.open().await;
        let result = AgentBuilder::new("next")
            .model(ScriptedModel::new(
                [ScriptedStep::new().text("Taken over.")],
            ))
            .store(store.clone())
            .turn_overlap(TurnOverlap::WaitAtMost(Duration::from_secs(10)))
            .build()
            .unwrap()
            .session("s")
            .run("are you there?")
            .await;
        assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
        let rows = store.load("s").await.unwrap();
        assert_whole(&rows);
        assert_eq!(
            texts(&rows),
            [
                "go",
                "",
                "tool `hang` did not finish: its turn was interrupted",
                "are you there?",
                "Taken over.",
            ]
        );
        assert_eq!(lease_row(&db, "s").await, None, "given back");
    });
}

/// A turn lease past what the server's timestamps hold, such as `Duration::MAX` for "never runs
/// out", is taken as the longest one (1,000 years): turns still take the session and give it
/// back, where the server refused every statement taking it ("interval out of range").
#[tokio::test]
async fn a_postgres_turn_lease_longer_than_the_server_holds_is_taken_as_the_longest() {
    use agent_core::SessionStore;
    use agent_postgres::{PostgresOptions, PostgresStore};

    let db = Db::postgres("lease-longest").await;
    let Db::Postgres(url) = &db else {
        unreachable!("a PostgreSQL database")
    };
    let options = PostgresOptions::default().turn_lease(Duration::MAX);
    let store = PostgresStore::connect_with(url, options).await.unwrap();
    let lease = store.lock_turn("s", false).await.unwrap().expect("free");
    let (_, left) = lease_row(&db, "s").await.expect("a lease row");
    let year = Duration::from_secs(365 * 24 * 60 * 60);
    assert!(left > year * 999 && left <= year * 1_000, "{left:?} left");
    lease.release().await;
    assert_eq!(lease_row(&db, "s").await, None, "given back");

    let model = ScriptedModel::new([ScriptedStep::new().text("Done.")]);
    let result = AgentBuilder::new("long")
        .model(model)
        .store(std::sync::Arc::new(store))
        .build()
        .unwrap()
        .session("s")
        .run("hi")
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
}

/// The backend of `database` that listens for given-back leases, once one does (polled until
/// it differs from `not`).
async fn listening_backend(database: &str, not: Option<i32>) -> i32 {
    let client = tests::postgres::cluster().client("postgres").await;
    loop {
        let found = client
            .query_opt(
                "SELECT pid FROM pg_stat_activity \
                 WHERE datname = $1 AND query = 'LISTEN agent_turn_leases'",
                &[&database],
            )
            .await
            .unwrap();
        match found {
            Some(row) if Some(row.get(0)) != not => return row.get(0),
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Two stores on a new database named `name`, whose leases last 10 minutes (a waiter that
/// relied on a lease running out would not finish within the tests' 10 s): the database's
/// name, the store that holds sessions, and the one that waits for them.
async fn two_postgres_stores(
    name: &str,
) -> (
    String,
    agent_postgres::PostgresStore,
    agent_postgres::PostgresStore,
) {
    use agent_postgres::{PostgresOptions, PostgresStore};
    let url = tests::postgres::cluster().database(name).await;
    let database = url.rsplit('/').next().unwrap().to_owned();
    let options = PostgresOptions::default().turn_lease(Duration::from_secs(600));
    let holder = PostgresStore::connect_with(&url, options.clone())
        .await
        .unwrap();
    let waiter = PostgresStore::connect_with(&url, options).await.unwrap();
    (database, holder, waiter)
}

/// Turns waiting for a PostgreSQL session another store holds are woken when it gives the lease
/// back, first come first served: every lease here lasts 10 minutes, so a waiter that relied on
/// the lease running out would not finish within the tests' 10 s. Once the waiting store's
/// listening connection is cut, it listens on a new one and is woken through it.
#[tokio::test]
async fn postgres_turns_waiting_for_a_session_are_woken_in_order_when_it_is_given_back() {
    use agent_core::SessionStore;
    use agent_postgres::PostgresStore;
    use tests::within;

    let (database, holder, waiter) = two_postgres_stores("lease-wake").await;
    let wait = |store: &PostgresStore| {
        let store = store.clone();
        tokio::spawn(async move { store.lock_turn("s", true).await.unwrap() })
    };

    let held = holder.lock_turn("s", false).await.unwrap().expect("free");
    let first = wait(&waiter);
    // The first waiter found the lease taken and listens; the second queues behind it.
    let listener = within("the waiter listens", listening_backend(&database, None)).await;
    let second = wait(&waiter);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!first.is_finished() && !second.is_finished(), "both wait");
    held.release().await;
    let next = within("the first waiter is woken", first)
        .await
        .unwrap()
        .expect("taken");
    assert!(!second.is_finished(), "the second waits for the first");
    next.release().await;
    let last = within("then the second", second)
        .await
        .unwrap()
        .expect("taken");
    last.release().await;

    let held = holder.lock_turn("s", false).await.unwrap().expect("free");
    let third = wait(&waiter);
    tokio::time::sleep(Duration::from_millis(100)).await;
    tests::postgres::cluster()
        .sql(
            "postgres",
            &format!("SELECT pg_terminate_backend({listener})"),
        )
        .await;
    within(
        "the waiter listens again",
        listening_backend(&database, Some(listener)),
    )
    .await;
    assert!(!third.is_finished(), "waits while the lease is held");
    held.release().await;
    within("the waiter is woken through its new connection", third)
        .await
        .unwrap()
        .expect("taken")
        .release()
        .await;
}

/// A session id too long for a notification's payload (8,000 bytes or more, which PostgreSQL's
/// indexes take when it compresses well) is woken too when its lease is given back, and a
/// waiter for another long id whose lease is still held waits on. The leases last 10 minutes:
/// a waiter that relied on the lease running out would not finish within the tests' 10 s.
#[tokio::test]
async fn a_postgres_turn_waiting_for_a_session_with_a_very_long_id_is_woken() {
    use agent_core::SessionStore;
    use tests::within;

    let (database, holder, waiter) = two_postgres_stores("lease-wake-long").await;
    let (long, other) = ("s".repeat(9_000), "t".repeat(9_000));
    let wait = |session: &str| {
        let (store, session) = (waiter.clone(), session.to_owned());
        tokio::spawn(async move { store.lock_turn(&session, true).await.unwrap() })
    };

    let held = holder.lock_turn(&long, false).await.unwrap().expect("free");
    let kept = holder
        .lock_turn(&other, false)
        .await
        .unwrap()
        .expect("free");
    let first = wait(&long);
    within("the waiter listens", listening_backend(&database, None)).await;
    let second = wait(&other);
    tokio::time::sleep(Duration::from_millis(100)).await;
    held.release().await;
    within("the waiter is woken", first)
        .await
        .unwrap()
        .expect("taken")
        .release()
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!second.is_finished(), "the other session is still held");
    kept.release().await;
    within("the other waiter is woken", second)
        .await
        .unwrap()
        .expect("taken")
        .release()
        .await;
}
