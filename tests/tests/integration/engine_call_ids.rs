//! Call ids are only unique within a step (issue 15 item 7): providers and compatible servers
//! reuse `call_0` in every reply. Calls pair with the results stored right after their
//! assistant message, in the repair of a cut-off turn, in the history a model reads, in
//! compaction's cuts, and when a hook drops one of two calls sharing an id.

use std::sync::Arc;

use agent_core::{
    Agent, AgentBuilder, Hook, MemoryStore, Message, NewMessage, ScriptedModel, ScriptedStep,
    SessionStore, ToolCall, ToolResultDecision, TurnStatus, cut_point, event,
};
use serde_json::json;
use tests::{Add, Trace, assert_paired, assert_whole};

fn call(id: &str) -> Message {
    Message::Assistant {
        content: Default::default(),
        reasoning: Default::default(),
        tool_calls: vec![ToolCall::new(
            id,
            "add",
            json!({"a": 1, "b": 2}).to_string(),
        )]
        .into(),
        reasoning_signature: None,
        provider_blocks: Vec::new(),
    }
}

fn answer(id: &str) -> Message {
    Message::Tool {
        call_id: id.into(),
        name: "add".into(),
        content: "3".into(),
        is_error: false,
    }
}

/// An agent of `model` whose sessions are in `store`.
fn on_store(model: &ScriptedModel, store: &Arc<dyn SessionStore>) -> Agent {
    AgentBuilder::new("ids")
        .model(model.clone())
        .store(store.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_cut_off_call_reusing_an_earlier_id_is_answered_by_the_repair() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    // An earlier step answered `call_0`; the last step's `call_0` was cut off.
    for message in [
        Message::user("first"),
        call("call_0"),
        answer("call_0"),
        Message::assistant("three"),
        Message::user("second"),
        call("call_0"),
    ] {
        store
            .insert("s", NewMessage::completed(message))
            .await
            .unwrap();
    }
    let model = ScriptedModel::new([ScriptedStep::new().text("ok")]);
    let agent = on_store(&model, &store);
    let conversation = agent.session("s");
    let result = conversation.run("third").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");

    let requests = model.requests();
    let sent = &*requests[0].messages;
    assert_paired(sent);
    assert_eq!(
        sent[6],
        Message::Tool {
            call_id: "call_0".into(),
            name: "add".into(),
            content: "tool `add` did not finish: its turn was interrupted".into(),
            is_error: true,
        }
    );
    assert_whole(&conversation.rows().await.unwrap());
}

#[tokio::test]
async fn the_history_leaves_out_what_cannot_be_paired() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    // Rows an older version could leave: an old call never answered (a later step reused its
    // id), and a result answering no call of its step.
    for message in [
        Message::user("first"),
        call("call_0"),
        Message::user("second"),
        call("call_0"),
        answer("call_0"),
        answer("call_0"),
        Message::assistant("done"),
    ] {
        store
            .insert("s", NewMessage::completed(message))
            .await
            .unwrap();
    }
    let model = ScriptedModel::new([ScriptedStep::new().text("ok")]);
    let agent = on_store(&model, &store);
    let result = agent.session("s").run("third").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let sent = model.requests()[0].messages.clone();
    assert_eq!(
        *sent,
        vec![
            Message::user("first"),
            Message::user("second"),
            call("call_0"),
            answer("call_0"),
            Message::assistant("done"),
            Message::user("third"),
        ]
    );
}

/// A long session's history, kept by the store from turn to turn, that gains a result no call
/// asked for between two turns: the store no longer lends it (it lends only paired histories,
/// and the engine takes it at its word), and the model reads the rows paired, the result left
/// out.
#[tokio::test]
async fn a_result_added_to_a_kept_history_is_left_out_of_the_next_request() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    assert!(store.lends_paired());
    for i in 0..70 {
        let text = format!("m{i}");
        let message = if i % 2 == 0 {
            Message::user(text)
        } else {
            Message::assistant(text)
        };
        store
            .insert("s", NewMessage::completed(message))
            .await
            .unwrap();
    }
    let model = ScriptedModel::new([
        ScriptedStep::new().text("one"),
        ScriptedStep::new().text("two"),
    ]);
    let agent = on_store(&model, &store);
    let conversation = agent.session("s");
    let first = conversation.run("first").await;
    assert_eq!(first.status, TurnStatus::Completed, "{first:?}");
    store
        .insert("s", NewMessage::completed(answer("call_9")))
        .await
        .unwrap();
    let second = conversation.run("second").await;
    assert_eq!(second.status, TurnStatus::Completed, "{second:?}");
    let requests = model.requests();
    let sent = &requests[1].messages;
    assert_paired(sent);
    let mut expected = requests[0].messages.to_vec();
    expected.extend([Message::assistant("one"), Message::user("second")]);
    assert_eq!(**sent, expected);
}

#[test]
fn compaction_cuts_between_steps_that_reuse_an_id() {
    let history = vec![
        Message::user("u1"),
        call("call_0"),
        answer("call_0"),
        Message::assistant("a1"),
        Message::user("u2"),
        call("call_0"),
        answer("call_0"),
        Message::assistant("a2"),
    ];
    // The newest 4 are kept: the cut falls before `u2`, between the two steps.
    assert_eq!(cut_point(&history, 4), Some(4));
}

#[tokio::test]
async fn dropping_one_of_two_calls_sharing_an_id_keeps_the_history_valid() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("dup", "add", r#"{"a":1,"b":2}"#)
            .tool_call("dup", "add", r#"{"a":5,"b":5}"#),
        ScriptedStep::new().text("done"),
    ]);
    let agent = AgentBuilder::new("ids")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .hook(Hook::<event::AfterToolCallSuccess>::sync("drop_3", |ctx| {
            if ctx.content == "3" {
                ToolResultDecision::Drop
            } else {
                ToolResultDecision::Keep
            }
        }))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    let result = conversation.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let sent = &model.requests()[1].messages;
    assert_paired(sent);
    // The kept call is the second one, with its own result.
    let Message::Assistant { tool_calls, .. } = &sent[1] else {
        panic!("{sent:?}")
    };
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].arguments, r#"{"a":5,"b":5}"#);
    assert!(matches!(&sent[2], Message::Tool { content, .. } if content == "10"));
    assert_whole(&conversation.rows().await.unwrap());
}
