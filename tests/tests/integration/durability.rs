//! Durability, for real: a process running a turn against a SQLite file is killed with SIGKILL
//! mid-turn. Reopening shows every completed row intact, the interrupted assistant row marked
//! failed, no tool call without its result, and the next turn works.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use agent_core::{
    AgentBuilder, Message, MessageStatus, ScriptedModel, ScriptedStep, SqliteStore, TurnStatus,
};

pub(crate) fn database(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("durability-{name}-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

/// Starts a turn in another process on `db` (`mode`: `stream` or `tool`, see the
/// `turn_until_killed` binary) with a turn lease of `lease_ms`, and returns the process once the
/// turn is at the point to cut, holding its session.
pub(crate) fn doomed_turn(db: &PathBuf, mode: &str, lease_ms: u64) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_turn_until_killed"))
        .arg(db)
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
fn kill_mid_turn(db: &PathBuf, mode: &str) {
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
    let db = database("stream");
    kill_mid_turn(&db, "stream");

    let store = Arc::new(SqliteStore::open(&db).expect("reopen the database"));
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
        model.requests()[0].messages,
        [
            Message::user("Please answer."),
            Message::user("Are you there?")
        ],
        "the failed row stays out of the model's history"
    );
    let _ = std::fs::remove_file(&db);
}

#[tokio::test]
async fn a_turn_killed_while_a_tool_runs_keeps_every_call_paired_with_a_result() {
    let db = database("tool");
    kill_mid_turn(&db, "tool");

    let store = Arc::new(SqliteStore::open(&db).expect("reopen the database"));
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
    let _ = std::fs::remove_file(&db);
}
