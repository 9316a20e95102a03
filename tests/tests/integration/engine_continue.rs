//! Continuing the last turn (no new input, `continuation = true`; as in Think it runs whenever
//! the history holds an assistant message or ends unanswered, and is skipped otherwise) and
//! appending messages and running a turn in one call.

use agent_core::{AgentBuilder, Hook, Message, ScriptedModel, ScriptedStep, TurnStatus, event};
use tests::{Trace, history_texts};

#[tokio::test]
async fn continue_last_turn_runs_after_an_unanswered_message_and_after_an_answer() {
    let trace = Trace::new();
    let (turns, responses) = (trace.clone(), trace.clone());
    let model = ScriptedModel::new([
        ScriptedStep::new().text("Hal").in_band_error("overloaded"),
        ScriptedStep::new().text("Hello again."),
        ScriptedStep::new().text(" How can I help?"),
    ]);
    let agent = AgentBuilder::new("resumable")
        .model(model.clone())
        .hook(Hook::<event::BeforeTurn>::sync("turn", move |ctx| {
            turns.push(format!("before_turn(continuation={})", ctx.continuation))
        }))
        .hook(Hook::<event::OnChatResponse>::sync(
            "response",
            move |response| {
                responses.push(format!(
                    "on_chat_response({:?} continuation={})",
                    response.status, response.continuation
                ))
            },
        ))
        .build()
        .unwrap();
    let conversation = agent.conversation();

    // An empty session has nothing to continue.
    assert!(conversation.continue_last_turn().await.unwrap().is_none());
    assert!(model.requests().is_empty());

    // A turn that failed leaves the user's message unanswered...
    let failed = conversation.run("Hello").await;
    assert_eq!(failed.status, TurnStatus::Error);
    // ...so the last turn can be continued, with no new input.
    let continued = conversation
        .continue_last_turn()
        .await
        .unwrap()
        .expect("a turn runs");
    assert_eq!(continued.status, TurnStatus::Completed);
    assert_eq!(continued.text, "Hello again.");
    assert_eq!(*model.requests()[1].messages, [Message::user("Hello")]);

    // The model has answered: continuing runs from the history as it is (Think's rule).
    let extended = conversation
        .continue_last_turn()
        .await
        .unwrap()
        .expect("a turn runs after an answer too");
    assert_eq!(extended.text, " How can I help?");
    assert_eq!(
        *model.requests()[2].messages,
        [Message::user("Hello"), Message::assistant("Hello again.")]
    );
    assert_eq!(
        trace.take(),
        [
            "before_turn(continuation=false)",
            "on_chat_response(Error continuation=false)",
            "before_turn(continuation=true)",
            "on_chat_response(Completed continuation=true)",
            "before_turn(continuation=true)",
            "on_chat_response(Completed continuation=true)",
        ]
    );
}

#[tokio::test]
async fn hi_then_hello_can_be_continued_and_a_system_only_history_cannot() {
    let model = ScriptedModel::new([
        ScriptedStep::new().text("Hello"),
        ScriptedStep::new().text(", nice to meet you."),
    ]);
    let agent = AgentBuilder::new("resumable")
        .model(model.clone())
        .build()
        .unwrap();
    let conversation = agent.conversation();
    assert_eq!(conversation.run("Hi").await.text, "Hello");
    let continued = conversation
        .continue_last_turn()
        .await
        .unwrap()
        .expect("a conversation with an assistant message continues");
    assert_eq!(continued.status, TurnStatus::Completed);
    assert_eq!(continued.text, ", nice to meet you.");
    assert_eq!(
        *model.requests()[1].messages,
        [Message::user("Hi"), Message::assistant("Hello")]
    );

    // Only a system message: no assistant message and nothing unanswered.
    let quiet = agent.conversation();
    quiet
        .inject_message(Message::system("Be brief."))
        .await
        .unwrap();
    assert!(quiet.continue_last_turn().await.unwrap().is_none());
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn messages_are_appended_and_answered_in_one_call() {
    let model = ScriptedModel::new([ScriptedStep::new().text("Both noted.")]);
    let agent = AgentBuilder::new("batch")
        .model(model.clone())
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation
        .run_messages([
            Message::user("First point."),
            Message::user("Second point."),
        ])
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        *model.requests()[0].messages,
        [
            Message::user("First point."),
            Message::user("Second point.")
        ]
    );
    let texts = history_texts(&conversation).await;
    assert_eq!(texts, ["First point.", "Second point.", "Both noted."]);
}
