//! Durability, for real: a process running a turn against a SQLite file or a PostgreSQL
//! database is killed with SIGKILL mid-turn. Reopening shows every completed row intact, the
//! interrupted assistant row marked failed, no tool call without its result, and the next turn
//! works.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use agent_core::{
    AgentBuilder, Message, MessageStatus, ScriptedModel, ScriptedStep, SessionStore, SqliteStore,
    TurnStatus,
};
use agent_postgres::PostgresStore;

/// Where a test keeps its sessions: a SQLite file, or a database of the test PostgreSQL
/// cluster.
pub(crate) enum Db {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Db {
    /// A fresh SQLite file.
    pub(crate) fn sqlite(name: &str) -> Db {
        let path =
            std::env::temp_dir().join(format!("durability-{name}-{}.db", std::process::id()));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        Db::Sqlite(path)
    }

    /// A fresh database of the test cluster.
    pub(crate) async fn postgres(name: &str) -> Db {
        Db::Postgres(tests::postgres::cluster().database(name).await)
    }

    /// How `turn_until_killed` is told where it is: a path or a URL.
    pub(crate) fn arg(&self) -> &std::ffi::OsStr {
        match self {
            Db::Sqlite(path) => path.as_os_str(),
            Db::Postgres(url) => url.as_ref(),
        }
    }

    /// A store on it, with the default options.
    pub(crate) async fn open(&self) -> Arc<dyn SessionStore> {
        match self {
            Db::Sqlite(path) => Arc::new(SqliteStore::open(path).expect("open the database")),
            Db::Postgres(url) => Arc::new(PostgresStore::connect(url).await.expect("connect")),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Db::Sqlite(path) = self {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

/// Starts a turn in another process on `db` (`mode`: `stream`, `tool` or `approved`, see the
/// `turn_until_killed` binary) with a turn lease of `lease_ms`, and returns the process once the
/// turn is at the point to cut, holding its session.
pub(crate) fn doomed_turn(db: &Db, mode: &str, lease_ms: u64) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_turn_until_killed"))
        .arg(db.arg())
        .arg(mode)
        .arg(lease_ms.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the child process");
    let stdout = child.stdout.take().expect("the child's stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok);
    assert_eq!(
        first.as_deref(),
        Some("READY"),
        "the child reaches the point to cut"
    );
    child
}

/// Starts the doomed turn, waits until it says it is at the point to cut, and kills it. Its
/// lease is short (300 ms), so the next turn does not wait the default 30 s for it to run out.
fn kill_mid_turn(db: &Db, mode: &str) {
    let mut child = doomed_turn(db, mode, 300);
    child.kill().expect("SIGKILL the child");
    let status = child.wait().expect("reap the child");
    assert!(!status.success(), "the child was killed: {status:?}");
}

fn summary(rows: &[agent_core::StoredMessage]) -> Vec<(String, String, MessageStatus)> {
    rows.iter()
        .map(|r| {
            (
                r.message.role().to_owned(),
                r.message.text().to_owned(),
                r.status,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_turn_killed_while_streaming_leaves_its_rows_and_the_next_turn_works() {
    killed_while_streaming(Db::sqlite("stream")).await;
}

#[tokio::test]
async fn a_postgres_turn_killed_while_streaming_leaves_its_rows_and_the_next_turn_works() {
    killed_while_streaming(Db::postgres("stream").await).await;
}

async fn killed_while_streaming(db: Db) {
    kill_mid_turn(&db, "stream");

    let store = db.open().await;
    let model = ScriptedModel::new([ScriptedStep::new().text("Here it is.")]);
    let agent = AgentBuilder::new("survivor")
        .model(model.clone())
        .store(store)
        .build()
        .unwrap();
    let session = agent.session("durable");
    let rows = session.rows().await.unwrap();
    assert_eq!(
        summary(&rows),
        [
            (
                "user".to_owned(),
                "Please answer.".to_owned(),
                MessageStatus::Completed
            ),
            (
                "assistant".to_owned(),
                String::new(),
                MessageStatus::Pending
            ),
        ],
        "committed rows are intact; the cut assistant row is still pending"
    );

    let result = session.run("Are you there?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let rows = session.rows().await.unwrap();
    assert_eq!(
        rows[1].status,
        MessageStatus::Failed,
        "the interrupted row is marked failed"
    );
    assert_eq!(
        *model.requests()[0].messages,
        [
            Message::user("Please answer."),
            Message::user("Are you there?")
        ],
        "the failed row stays out of the model's history"
    );
}

#[tokio::test]
async fn a_turn_killed_while_a_tool_runs_keeps_every_call_paired_with_a_result() {
    killed_while_a_tool_runs(Db::sqlite("tool")).await;
}

#[tokio::test]
async fn a_postgres_turn_killed_while_a_tool_runs_keeps_every_call_paired_with_a_result() {
    killed_while_a_tool_runs(Db::postgres("tool").await).await;
}

async fn killed_while_a_tool_runs(db: Db) {
    kill_mid_turn(&db, "tool");

    let store = db.open().await;
    let model = ScriptedModel::new([ScriptedStep::new().text("Sorry, that tool was cut off.")]);
    let agent = AgentBuilder::new("survivor")
        .model(model.clone())
        .store(store)
        .build()
        .unwrap();
    let session = agent.session("durable");
    let before = session.rows().await.unwrap();
    assert_eq!(
        summary(&before),
        [
            (
                "user".to_owned(),
                "Please answer.".to_owned(),
                MessageStatus::Completed
            ),
            (
                "assistant".to_owned(),
                "Running the tool.".to_owned(),
                MessageStatus::Completed
            ),
        ]
    );

    let result = session.run("What happened?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let sent = &model.requests()[0].messages;
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert!(
        matches!(&sent[1], Message::Assistant { tool_calls, .. } if tool_calls[0].id == "call_1")
    );
    assert!(
        matches!(&sent[2], Message::Tool { call_id, is_error: true, content, .. }
            if call_id == "call_1" && content.contains("did not finish")),
        "the unanswered call got an error result: {:?}",
        sent[2]
    );
    assert_eq!(sent[3], Message::user("What happened?"));
}
