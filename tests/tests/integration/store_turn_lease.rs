//! One turn at a time per session, owned by the store (issue 15 item 6): every agent on one
//! store, every store on one SQLite file and every process on that file take turns in a
//! session one after the other; a process that dies mid-turn holds its session no longer than
//! its lease.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{
    AgentBuilder, CancelToken, FnTool, MemoryStore, ScriptedModel, ScriptedStep, SessionStore,
    SqliteStore, StoredMessage, ToolError, TurnErrorKind, TurnOverlap, TurnRequest, TurnStatus,
};
use serde_json::{Value, json};
use tests::assert_whole;
use tokio::sync::mpsc;

use crate::durability::{database, doomed_turn};

/// A tool that takes `pause` (real time), long enough for two unserialized turns to interleave.
fn slow_tool(pause: Duration) -> FnTool {
    FnTool::new(
        "work",
        "Works for a while.",
        json!({"type": "object"}),
        move |_, _| async move {
            tokio::time::sleep(pause).await;
            Ok::<Value, ToolError>(json!("worked"))
        },
    )
}

/// An agent named `name` whose turn calls `work` and then answers "`name` done".
fn worker(name: &str, store: Arc<dyn SessionStore>) -> AgentBuilder {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "work", "{}"),
        ScriptedStep::new().text(format!("{name} done")),
    ]);
    AgentBuilder::new(name)
        .model(model)
        .store(store)
        .dyn_tool(slow_tool(Duration::from_millis(40)))
}

/// The rows' texts, in order.
fn texts(rows: &[StoredMessage]) -> Vec<String> {
    rows.iter()
        .map(|row| row.message.text().to_owned())
        .collect()
}

/// Two agents (on `first` and `second`, which share their sessions) each run a turn in session
/// `s` at the same moment: the turns run one after the other, their rows never interleave.
async fn two_agents_take_turns(first: Arc<dyn SessionStore>, second: Arc<dyn SessionStore>) {
    let a = worker("A", first.clone()).build().unwrap().session("s");
    let b = worker("B", second).build().unwrap().session("s");
    let (ra, rb) = tokio::join!(a.run("from A"), b.run("from B"));
    assert_eq!(
        (ra.status, rb.status),
        (TurnStatus::Completed, TurnStatus::Completed)
    );
    let rows = first.load("s").await.unwrap();
    assert_whole(&rows);
    let one = |name: &str| {
        vec![
            format!("from {name}"),
            String::new(),
            "worked".to_owned(),
            format!("{name} done"),
        ]
    };
    let got = texts(&rows);
    let a_first = [one("A"), one("B")].concat();
    let b_first = [one("B"), one("A")].concat();
    assert!(got == a_first || got == b_first, "interleaved: {got:#?}");
}

#[tokio::test]
async fn two_agents_on_one_memory_store_take_turns() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    two_agents_take_turns(store.clone(), store).await;
}

#[tokio::test]
async fn two_agents_on_one_sqlite_store_take_turns() {
    let db = database("lease-one-store");
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&db).unwrap());
    two_agents_take_turns(store.clone(), store).await;
    let _ = std::fs::remove_file(&db);
}

#[tokio::test]
async fn two_stores_on_one_sqlite_file_take_turns() {
    let db = database("lease-two-stores");
    let first: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&db).unwrap());
    let second: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&db).unwrap());
    two_agents_take_turns(first, second).await;
    let _ = std::fs::remove_file(&db);
}

/// The lease row of `session` in the file: its holder and expiry (µs since the epoch).
fn lease_row(db: &std::path::Path, session: &str) -> Option<(String, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT holder, expires_at FROM turn_leases WHERE session_id = ?1",
        [session],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
    .ok()
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
    let db = database("lease-default");
    let store = Arc::new(SqliteStore::open(&db).unwrap());
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
    let before = now_micros();
    let (holder, expires) = lease_row(&db, "s").expect("a running turn holds a lease row");
    assert!(
        holder.starts_with(&format!("{}:", std::process::id())),
        "the row names this process: {holder}"
    );
    let left = Duration::from_micros(u64::try_from(expires - before).unwrap_or(0));
    assert!(
        left > Duration::from_secs(25) && left <= Duration::from_secs(30),
        "the default lease runs 30 s: {left:?} left"
    );
    token.cancel();
    let result = tests::within("the turn ends", turn).await.unwrap();
    assert_eq!(result.status, TurnStatus::Aborted);
    assert_eq!(lease_row(&db, "s"), None, "the lease is given back");
    let _ = std::fs::remove_file(&db);
}

/// Another process's turn holds the session: a turn here is rejected (Reject), gives up after
/// its bound (WaitAtMost) while the other process renews its lease, and once that process is
/// killed, a waiting turn takes the session within about one lease and repairs what it left.
#[tokio::test]
async fn a_turn_in_another_process_holds_the_session_until_it_dies() {
    let db = database("lease-process");
    let lease = Duration::from_millis(300);
    let mut child = doomed_turn(&db, "tool", 300);
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&db).unwrap());
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
    let _ = std::fs::remove_file(&db);
}
