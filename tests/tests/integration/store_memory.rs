//! The in-memory store holds a session only while a handle on it lives: one-shot runs leave
//! nothing behind, and a conversation's rows go when its last handle (or running turn) does.

use std::sync::Arc;

use agent_core::{Agent, AgentBuilder, MemoryStore, ScriptedModel, ScriptedStep, TurnEvent};
use tests::Add;

/// An agent on `store` whose model answers every turn with one tool call and then text.
fn agent(store: &Arc<MemoryStore>, turns: usize) -> Agent {
    let steps = (0..turns).flat_map(|_| {
        [
            ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":2}"#),
            ScriptedStep::new().text("3"),
        ]
    });
    AgentBuilder::new("memory")
        .model(ScriptedModel::new(steps))
        .tool(Add::default())
        .store(store.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn ten_thousand_one_shot_runs_leave_no_session_behind() {
    let store = Arc::new(MemoryStore::new());
    let agent = agent(&store, 10_000);
    for _ in 0..10_000 {
        let result = agent.run("1+2?").await;
        assert_eq!(result.text, "3");
        assert_eq!(result.messages.len(), 3);
    }
    assert_eq!(store.session_count(), 0);
}

#[tokio::test]
async fn a_conversation_keeps_its_rows_while_a_handle_lives_and_frees_them_after() {
    let store = Arc::new(MemoryStore::new());
    let agent = agent(&store, 3);
    let conversation = agent.session("kept");
    conversation.run("1+2?").await;
    assert_eq!(store.session_count(), 1);

    // A second handle and a clone share the session; dropping them keeps it for the first.
    let other = agent.session("kept");
    let clone = other.clone();
    drop(other);
    drop(clone);
    assert_eq!(conversation.rows().await.unwrap().len(), 4);

    // A streamed turn holds its own handle: the rows outlive the dropped conversation until
    // the turn ends.
    let mut stream = conversation.stream("again");
    drop(conversation);
    let mut finished = None;
    while let Some(event) = stream.next().await {
        if let TurnEvent::Finished(result) = event {
            finished = Some(result);
        }
    }
    let finished = finished.expect("the turn finishes");
    assert_eq!(finished.text, "3");
    assert_eq!(store.session_count(), 0);

    // Reopened after every handle went, the session starts empty.
    let reopened = agent.session("kept");
    assert!(reopened.rows().await.unwrap().is_empty());
}
