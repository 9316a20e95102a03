//! Two-sided sessions (issue 9 item 8, Standard Agents `dual_ai` and `ai_human`): two agents,
//! or an agent and a person, take turns; each side stops the session by its own condition
//! (returning content, or calling a named stop tool), or the turn limit does; the session's
//! state (turn count, current side, stopped and by whom) is readable from every hook; the
//! sides' histories stay apart on one store.

use std::sync::Arc;

use agent_core::{
    Agent, AgentBuilder, FnTool, Hook, MemoryStore, ScriptedModel, ScriptedStep, SessionEnd,
    SessionStore, Side, SideId, StoredMessage, ToolError, TwoSided, event, two_sided,
};
use serde_json::{Value, json};
use tests::{Trace, lines};

/// An agent named `name` playing `steps`, with a `tool` tool when given, whose before_run hook
/// records the session's state and the input it got.
fn side(
    name: &'static str,
    steps: Vec<ScriptedStep>,
    tool: Option<&str>,
    trace: &Trace,
) -> (Agent, ScriptedModel) {
    let model = ScriptedModel::new(steps);
    let t = trace.clone();
    let mut builder =
        AgentBuilder::new(name)
            .model(model.clone())
            .hook(Hook::<event::BeforeRun>::sync("state", move |ctx| {
                let state = two_sided().expect("a side's hooks read the session's state");
                t.push(format!(
                    "{name}: turn {} side {} stopped {} ({})",
                    state.turn_count, state.current_side, state.stopped, ctx.input
                ));
            }));
    if let Some(tool) = tool {
        builder = builder.dyn_tool(FnTool::new(
            tool,
            "Ends the conversation.",
            json!({"type": "object"}),
            |_, _| async { Ok::<Value, ToolError>(json!("ended")) },
        ));
    }
    (builder.build().unwrap(), model)
}

#[tokio::test]
async fn two_agents_take_turns_until_a_side_calls_its_stop_tool() {
    let trace = Trace::new();
    let (support, support_model) = side(
        "support",
        vec![
            ScriptedStep::new().text("How can I help?"),
            ScriptedStep::new().text("Try restarting it."),
        ],
        None,
        &trace,
    );
    let (customer, customer_model) = side(
        "customer",
        vec![
            ScriptedStep::new().text("My app crashes."),
            ScriptedStep::new().tool_call("r1", "resolved", "{}"),
            ScriptedStep::new().text("Thanks, that fixed it!"),
        ],
        Some("resolved"),
        &trace,
    );
    let session = TwoSided::dual(
        Side::new(&support),
        Side::new(&customer).stop_tool("resolved"),
        "chat-1",
    )
    .unwrap();

    let (end, results) = session.run("Hello").await;

    assert_eq!(end, SessionEnd::StoppedBy(SideId::B));
    let answers: Vec<&str> = results.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(
        answers,
        [
            "How can I help?",
            "My app crashes.",
            "Try restarting it.",
            "Thanks, that fixed it!"
        ]
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "support: turn 1 side a stopped false (Hello)",
            "customer: turn 2 side b stopped false (How can I help?)",
            "support: turn 3 side a stopped false (My app crashes.)",
            "customer: turn 4 side b stopped false (Try restarting it.)",
        ])
    );
    let state = session.state();
    assert_eq!(
        (state.turn_count, state.stopped, state.stopped_by),
        (4, true, Some(SideId::B))
    );
    // Each side keeps its own history: the other side's answers are its user messages.
    let last = customer_model.requests().pop().unwrap();
    let texts: Vec<&str> = last.messages.iter().map(|m| m.text()).collect();
    assert_eq!(
        texts,
        [
            "How can I help?",
            "My app crashes.",
            "Try restarting it.",
            "",
            "ended"
        ]
    );
    assert_eq!(support_model.requests().len(), 2);
    assert_eq!(
        session.run("again?").await.0,
        SessionEnd::StoppedBy(SideId::B),
        "stopped stays stopped"
    );
}

#[tokio::test]
async fn the_turn_limit_and_a_side_that_stops_on_content() {
    let trace = Trace::new();
    let talk = |n: usize| {
        (0..n)
            .map(|i| ScriptedStep::new().text(format!("line {i}")))
            .collect()
    };
    let (a, _) = side("a", talk(5), None, &trace);
    let (b, _) = side("b", talk(5), None, &trace);
    let session = TwoSided::dual(Side::new(&a), Side::new(&b), "s")
        .unwrap()
        .max_session_turns(3);
    let (end, results) = session.run("go").await;
    assert_eq!(end, SessionEnd::MaxSessionTurns);
    assert_eq!(results.len(), 3);
    assert_eq!(session.state().stopped_by, None);

    let (a, _) = side("a", talk(1), None, &trace);
    let (b, b_model) = side("b", talk(1), None, &trace);
    let session = TwoSided::dual(Side::new(&a).stop_on_content(), Side::new(&b), "t").unwrap();
    let (end, results) = session.run("go").await;
    assert_eq!(end, SessionEnd::StoppedBy(SideId::A));
    assert_eq!(results.len(), 1);
    assert!(b_model.requests().is_empty(), "side b never takes a turn");
}

#[tokio::test]
async fn an_agent_and_a_person_take_turns_until_the_agent_stops() {
    let trace = Trace::new();
    let (agent, _) = side(
        "concierge",
        vec![
            ScriptedStep::new().text("Welcome!"),
            ScriptedStep::new().text("A table for two at eight, then?"),
            ScriptedStep::new().tool_call("e1", "end_chat", "{}"),
            ScriptedStep::new().text("Booked. Goodbye!"),
        ],
        Some("end_chat"),
        &trace,
    );
    let session = TwoSided::ai_human(Side::new(&agent).stop_tool("end_chat"), "guest-7").unwrap();
    let (end, greeting) = session.run("(the guest arrives)").await;
    assert_eq!(end, SessionEnd::HumanTurn);
    assert_eq!(greeting[0].text, "Welcome!");
    let reply = session
        .human_turn("A table for two at eight.")
        .await
        .unwrap();
    assert_eq!(reply.text, "A table for two at eight, then?");
    let reply = session.human_turn("Yes please.").await.unwrap();
    assert_eq!(reply.text, "Booked. Goodbye!");
    assert!(
        session.human_turn("One more thing").await.is_none(),
        "the agent stopped it"
    );
    let state = session.state();
    assert_eq!((state.turn_count, state.stopped_by), (5, Some(SideId::A)));
    assert_eq!(
        trace.take(),
        lines(&[
            "concierge: turn 1 side a stopped false ((the guest arrives))",
            "concierge: turn 3 side a stopped false (A table for two at eight.)",
            "concierge: turn 5 side a stopped false (Yes please.)",
        ])
    );
}

#[test]
fn a_stop_tool_the_agent_lacks_is_an_error() {
    let agent = AgentBuilder::new("plain")
        .model(ScriptedModel::new([]))
        .build()
        .unwrap();
    let error = TwoSided::ai_human(Side::new(&agent).stop_tool("end_chat"), "s").unwrap_err();
    assert_eq!(
        error.problems,
        [
            "side agent `plain` has no tool `end_chat` to stop the session with (it has no tools); add the tool to the agent"
        ]
    );
}

/// Each message of a request as `role: text`.
fn sent(model: &ScriptedModel) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|request| {
            request
                .messages
                .iter()
                .map(|m| format!("{}: {}", m.role(), m.text()))
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn two_agents_on_one_store_keep_their_histories_apart() {
    let store = Arc::new(MemoryStore::new());
    let on = |name: &str, steps: [&str; 2]| {
        let model = ScriptedModel::new(steps.map(|text| ScriptedStep::new().text(text)));
        let agent = AgentBuilder::new(name)
            .model(model.clone())
            .store(store.clone())
            .build()
            .unwrap();
        (agent, model)
    };
    let (support, support_model) = on("support", ["How can I help?", "Restart it."]);
    let (customer, customer_model) = on("customer", ["It crashes.", "Thanks."]);
    let session = TwoSided::dual(Side::new(&support), Side::new(&customer), "ticket-1")
        .unwrap()
        .max_session_turns(4);

    assert_eq!(session.run("Hello").await.0, SessionEnd::MaxSessionTurns);

    // Each side reads its own answers as the assistant's and the other's as the user's, once.
    assert_eq!(
        sent(&support_model),
        [
            lines(&["user: Hello"]),
            lines(&[
                "user: Hello",
                "assistant: How can I help?",
                "user: It crashes."
            ]),
        ]
    );
    assert_eq!(
        sent(&customer_model),
        [
            lines(&["user: How can I help?"]),
            lines(&[
                "user: How can I help?",
                "assistant: It crashes.",
                "user: Restart it."
            ]),
        ]
    );
    // Side A's history is under the session id, side B's under the id and `:b`.
    let texts = |rows: Vec<StoredMessage>| -> Vec<String> {
        rows.iter()
            .map(|row| row.message.text().to_owned())
            .collect()
    };
    assert_eq!(
        texts(store.load("ticket-1").await.unwrap()),
        ["Hello", "How can I help?", "It crashes.", "Restart it."]
    );
    assert_eq!(
        texts(store.load("ticket-1:b").await.unwrap()),
        ["How can I help?", "It crashes.", "Restart it.", "Thanks."]
    );
}
