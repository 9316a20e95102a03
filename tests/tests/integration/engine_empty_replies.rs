//! A model call that produces nothing (no text and no tool call, or an error before any output)
//! leaves no assistant row: its pending row is deleted, the next request carries no empty
//! assistant message (providers reject one), and on_chat_response still reports the status.

use std::sync::Arc;

use agent_core::{
    AgentBuilder, ChatResponse, Message, MessageStatus, ScriptedModel, ScriptedStep, SessionStore,
    SqliteStore, TurnStatus, event,
};
use tests::{Recorded, Seen, Trace, TracedStore};

/// The role, status and text of each stored row.
fn rows_of(rows: &[agent_core::StoredMessage]) -> Vec<(&'static str, MessageStatus, String)> {
    rows.iter()
        .map(|row| {
            (
                row.message.role(),
                row.status,
                row.message.text().to_owned(),
            )
        })
        .collect()
}

/// A fresh SQLite file under the target directory.
fn sqlite(name: &str) -> Arc<SqliteStore> {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("empty-replies");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Arc::new(SqliteStore::open(&path).unwrap())
}

#[tokio::test]
async fn an_empty_reply_stores_no_assistant_row_and_is_not_sent_back() {
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new(), ScriptedStep::new().text("Hello")]);
    let responses = Seen::<ChatResponse>::new();
    let agent = AgentBuilder::new("empty")
        .model(model.clone())
        .store(TracedStore::shared(&trace))
        .record_turn(&trace)
        .hook(responses.hook::<event::OnChatResponse>("response"))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("Hi").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "");
    assert!(result.messages.is_empty(), "{:?}", result.messages);
    assert_eq!(
        trace.take(),
        [
            "before_run(Hi)",
            "store.load",
            "store.insert(user completed \"Hi\")",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "store.insert(assistant pending \"\")",
            "on_llm_end(0)",
            "store.delete(2)",
            "on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ]
    );
    let responses: Vec<_> = responses
        .take()
        .into_iter()
        .map(|r| (r.status, r.message, r.error.is_none()))
        .collect();
    assert_eq!(
        responses,
        [(TurnStatus::Completed, Message::assistant(""), true)]
    );
    assert_eq!(
        rows_of(&conversation.rows().await.unwrap()),
        [("user", MessageStatus::Completed, "Hi".to_owned())]
    );

    // The next turn sends the history without an empty assistant message.
    let again = conversation.run("Are you there?").await;
    assert_eq!(again.text, "Hello");
    assert_eq!(
        *model.requests()[1].messages,
        [Message::user("Hi"), Message::user("Are you there?")]
    );
}

#[tokio::test]
async fn an_in_band_error_before_any_output_stores_no_assistant_row() {
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new().in_band_error("overloaded")]);
    let responses = Seen::<ChatResponse>::new();
    let agent = AgentBuilder::new("erring")
        .model(model)
        .store(TracedStore::shared(&trace))
        .record_turn(&trace)
        .hook(responses.hook::<event::OnChatResponse>("response"))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("Hi").await;
    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert_eq!(
        trace.take(),
        [
            "before_run(Hi)",
            "store.load",
            "store.insert(user completed \"Hi\")",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "store.insert(assistant pending \"\")",
            "on_llm_end(0)",
            "store.delete(2)",
            "classify_chat_error(stream)",
            "on_chat_error(stream)",
            "on_chat_response(error)",
        ]
    );
    let responses = responses.take();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].status, TurnStatus::Error);
    assert_eq!(responses[0].message, Message::assistant(""));
    let error = responses[0].error.as_ref().map(|e| e.to_string());
    assert!(
        error.as_deref().is_some_and(|e| e.contains("overloaded")),
        "{error:?}"
    );
    assert_eq!(
        rows_of(&conversation.rows().await.unwrap()),
        [("user", MessageStatus::Completed, "Hi".to_owned())]
    );
}

#[tokio::test]
async fn on_sqlite_an_empty_reply_leaves_only_the_rows_with_content() {
    let store = sqlite("empty");
    let model = ScriptedModel::new([
        ScriptedStep::new(),
        ScriptedStep::new().in_band_error("overloaded"),
        ScriptedStep::new().text("Hello"),
    ]);
    let agent = AgentBuilder::new("empty")
        .model(model.clone())
        .store(store.clone())
        .build()
        .unwrap();
    let conversation = agent.session("s1");
    assert_eq!(conversation.run("one").await.status, TurnStatus::Completed);
    assert_eq!(conversation.run("two").await.status, TurnStatus::Error);
    assert_eq!(conversation.run("three").await.text, "Hello");
    assert_eq!(
        rows_of(&store.load("s1").await.unwrap()),
        [
            ("user", MessageStatus::Completed, "one".to_owned()),
            ("user", MessageStatus::Completed, "two".to_owned()),
            ("user", MessageStatus::Completed, "three".to_owned()),
            ("assistant", MessageStatus::Completed, "Hello".to_owned()),
        ]
    );
    assert_eq!(
        *model.requests()[2].messages,
        [
            Message::user("one"),
            Message::user("two"),
            Message::user("three")
        ]
    );
}
