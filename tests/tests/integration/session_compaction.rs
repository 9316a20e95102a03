//! Sessions: context blocks compose the system prompt, compaction keeps tool calls with their
//! results, and a context overflow is recovered by compacting and retrying once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::{
    AgentBuilder, ChatErrorClassification, Hook, Message, ScriptedModel, ScriptedStep,
    SessionConfig, ToolCall, TurnStatus, event,
};
use agent_core::{cut_point, is_boundary};

fn call(id: &str) -> Message {
    Message::Assistant {
        content: Default::default(),
        reasoning: Default::default(),
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
            metadata: None,
        }]
        .into(),
        reasoning_signature: None,
        provider_blocks: Vec::new(),
    }
}

fn result(id: &str) -> Message {
    Message::Tool {
        call_id: id.into(),
        name: "t".into(),
        content: "ok".into(),
        is_error: false,
    }
}

type Seen = Arc<Mutex<Vec<Vec<Message>>>>;

/// A summarizer that records its input and answers "S".
fn summarizing(seen: &Seen) -> impl Fn(SessionConfig) -> SessionConfig + Send + Sync + 'static {
    let seen = seen.clone();
    move |session: SessionConfig| {
        let seen = seen.clone();
        session
            .keep_recent(2)
            // The summary counts 1 token, every other message 5.
            .token_counter(|m| if m.role() == "system" { 1 } else { 5 })
            .summarize_with(move |messages| {
                seen.lock().unwrap().push(messages);
                async { Ok("S".to_owned()) }
            })
    }
}

fn overflow() -> ScriptedStep {
    ScriptedStep::new().in_band_error("prompt is too long: 300000 tokens > 200000 maximum")
}

#[tokio::test]
async fn context_blocks_compose_the_system_prompt_once_per_open() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let model = ScriptedModel::new(["a", "b", "c", "d"].map(|text| ScriptedStep::new().text(text)));
    let agent = AgentBuilder::new("a")
        .instructions("Be brief.")
        .model(model.clone())
        .configure_session(move |session| {
            let counted = counted.clone();
            session
                .context("soul", move |_| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    "You are kind."
                })
                .context_with_budget("memory", 2, |_| "0123456789abcdef")
                .context_async("user", |info| async move {
                    Ok(format!("session {}", info.session))
                })
        })
        .build()
        .unwrap();
    let conversation = agent.session("s1");
    assert_eq!(conversation.run("hi").await.status, TurnStatus::Completed);
    assert_eq!(
        conversation.run("again").await.status,
        TurnStatus::Completed
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // A second handle on the open session shares its configuration.
    let second = agent.session("s1");
    assert_eq!(second.run("more").await.status, TurnStatus::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Once every handle is gone, the session opens again: configured anew.
    drop((conversation, second));
    let reopened = agent.session("s1");
    assert_eq!(reopened.run("back").await.status, TurnStatus::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let requests = model.requests();
    let expected =
        "Be brief.\n\n## soul\nYou are kind.\n\n## memory\n01234567\n\n## user\nsession s1";
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(request.system.as_deref(), Some(expected));
    }
}

#[test]
fn cuts_never_separate_a_tool_call_from_its_result() {
    let history = vec![
        Message::user("u1"),
        call("c1"),
        result("c1"),
        Message::assistant("a1"),
        Message::user("u2"),
        call("c2"),
        result("c2"),
        Message::user("u3"),
    ];
    assert!(!is_boundary(&history, 2));
    assert!(!is_boundary(&history, 6));
    assert!(is_boundary(&history, 7));
    // Keeping 2 would cut between c2 and its result: the cut moves earlier.
    assert_eq!(cut_point(&history, 2), Some(5));
    assert_eq!(cut_point(&history, 6), Some(1));
    assert_eq!(cut_point(&[Message::user("only")], 1), None);
    let calls = vec![Message::user("u"), call("c"), result("c")];
    assert_eq!(cut_point(&calls, 1), Some(1));
}

#[tokio::test]
async fn a_context_overflow_is_compacted_and_retried() {
    compacted_and_retried(Arc::new(agent_core::MemoryStore::new())).await;
}

#[tokio::test]
async fn a_context_overflow_is_compacted_and_retried_on_sqlite() {
    let path = std::env::temp_dir().join(format!("compaction-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let store = agent_core::SqliteStore::open(&path).expect("open the database");
    compacted_and_retried(Arc::new(store)).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

async fn compacted_and_retried(store: Arc<dyn agent_core::SessionStore>) {
    let seen = Seen::default();
    let model = ScriptedModel::new([
        ScriptedStep::new().text("one"),
        ScriptedStep::new().text("two"),
        ScriptedStep::new()
            .text("partial")
            .event(agent_core::ModelEvent::Error(
                "This model's maximum context length is 10 tokens".to_owned(),
            )),
        ScriptedStep::new().text("three"),
    ]);
    let classified = Arc::new(Mutex::new(Vec::new()));
    let errors = classified.clone();
    let agent = AgentBuilder::new("a")
        .model(model.clone())
        .store(store)
        .configure_session(summarizing(&seen))
        .hook(Hook::<event::OnChatError>::sync("errors", move |ctx| {
            errors.lock().unwrap().push(ctx.classification);
            None
        }))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    conversation.run("first question, which is long").await;
    conversation.run("second question, which is long").await;
    let third = conversation.run("third").await;
    assert_eq!(third.status, TurnStatus::Completed);
    assert_eq!(third.text, "three");
    assert_eq!(third.messages, vec![Message::assistant("three")]);
    assert!(classified.lock().unwrap().is_empty());
    assert_eq!(
        *seen.lock().unwrap(),
        vec![vec![
            Message::user("first question, which is long"),
            Message::assistant("one"),
            Message::user("second question, which is long"),
        ]]
    );
    let summary = Message::system("Summary of the earlier conversation:\nS");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        *requests[3].messages,
        vec![
            summary.clone(),
            Message::assistant("two"),
            Message::user("third")
        ]
    );
    assert_eq!(
        conversation.history().await.unwrap(),
        vec![
            summary,
            Message::assistant("two"),
            Message::user("third"),
            Message::assistant("three"),
        ]
    );
    let rows = conversation.rows().await.unwrap();
    let silent: Vec<_> = rows
        .iter()
        .filter(|r| r.silent)
        .map(|r| r.message.clone())
        .collect();
    assert_eq!(
        silent,
        vec![
            Message::user("first question, which is long"),
            Message::assistant("one"),
            Message::user("second question, which is long"),
            Message::assistant("two"),
            Message::user("third"),
        ]
    );
}

async fn terminal_classification(
    model: ScriptedModel,
    turns: &[&str],
) -> (Vec<ChatErrorClassification>, usize, Seen) {
    let seen = Seen::default();
    let classified = Arc::new(Mutex::new(Vec::new()));
    let errors = classified.clone();
    let agent = AgentBuilder::new("a")
        .model(model)
        .configure_session(summarizing(&seen))
        .hook(Hook::<event::OnChatError>::sync("errors", move |ctx| {
            errors.lock().unwrap().push(ctx.classification);
            None
        }))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    let mut last = None;
    for turn in turns {
        last = Some(conversation.run(*turn).await);
    }
    let last = last.unwrap();
    assert_eq!(last.status, TurnStatus::Error);
    assert_eq!(
        last.classification,
        Some(ChatErrorClassification::ContextOverflow)
    );
    let calls = classified.lock().unwrap().clone();
    let summaries = seen.lock().unwrap().len();
    (calls, summaries, seen)
}

#[tokio::test]
async fn nothing_to_compact_ends_with_a_context_overflow() {
    let model = ScriptedModel::new([overflow()]);
    let (classified, summaries, _) = terminal_classification(model.clone(), &["hello"]).await;
    assert_eq!(classified, vec![ChatErrorClassification::ContextOverflow]);
    assert_eq!(summaries, 0);
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_spent_retry_budget_ends_with_a_context_overflow() {
    let model = ScriptedModel::new([ScriptedStep::new().text("one"), overflow(), overflow()]);
    let (classified, summaries, _) =
        terminal_classification(model.clone(), &["first question, long enough", "second"]).await;
    assert_eq!(classified, vec![ChatErrorClassification::ContextOverflow]);
    assert_eq!(summaries, 1);
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn reported_input_tokens_compact_before_a_step_at_most_max_compactions_times() {
    let seen = Seen::default();
    let recorded = seen.clone();
    let model = ScriptedModel::new([
        ScriptedStep::new().text("one").usage(10, 1),
        ScriptedStep::new().tool_call("c1", "t", "{}").usage(90, 1),
        ScriptedStep::new().tool_call("c2", "t", "{}").usage(95, 1),
        ScriptedStep::new().text("done").usage(99, 1),
    ]);
    let tool = agent_core::FnTool::new(
        "t",
        "a tool",
        serde_json::json!({"type": "object"}),
        |_args, _ctx| async { Ok(serde_json::json!("ok")) },
    );
    let agent = AgentBuilder::new("a")
        .model(model.clone())
        .dyn_tool(tool)
        .configure_session(move |session| {
            let recorded = recorded.clone();
            session
                .keep_recent(2)
                .max_input_tokens(100)
                .headroom(0.8)
                .max_compactions(1)
                .token_counter(|m| if m.role() == "system" { 1 } else { 5 })
                .summarize_with(move |messages| {
                    recorded.lock().unwrap().push(messages);
                    async { Ok("S".to_owned()) }
                })
        })
        .build()
        .unwrap();
    let conversation = agent.session("s");
    conversation.run("first question, long enough").await;
    let second = conversation.run("go").await;
    assert_eq!(second.status, TurnStatus::Completed);
    // Step 1 of the second turn reported 90 > 80 tokens: step 2 compacted once; step 3 (95)
    // did not, the turn's budget being spent.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0],
        vec![
            Message::user("first question, long enough"),
            Message::assistant("one"),
            Message::user("go")
        ]
    );
    let requests = model.requests();
    let summary = Message::system("Summary of the earlier conversation:\nS");
    assert_eq!(requests[2].messages.len(), 3);
    assert_eq!(requests[2].messages[0], summary);
    assert_eq!(requests[2].messages[1], call("c1"));
    assert!(matches!(&requests[2].messages[2], Message::Tool { call_id, .. } if call_id == "c1"));
    assert_eq!(requests[3].messages.len(), 5);
}

/// The last model call's input tokens are known only to the process that made it: a session
/// reopened after a restart (here, a new agent and store on the same SQLite file) estimates its
/// first step's input with the token counter instead, so a history already past
/// `max_input_tokens * headroom` is compacted before that step rather than sent whole.
#[tokio::test]
async fn a_reopened_session_past_its_input_limit_compacts_before_its_first_step() {
    let dir = tests::Scratch::new("compaction-reopened");
    let path = dir.join("sessions.db");
    let long = "a first question, long enough to count for more than the limit allows".repeat(2);
    let seen = Seen::default();
    let agent = |model: &ScriptedModel| {
        let recorded = seen.clone();
        AgentBuilder::new("a")
            .model(model.clone())
            .store(Arc::new(agent_core::SqliteStore::open(&path).unwrap()))
            .configure_session(move |session| {
                let recorded = recorded.clone();
                session
                    .keep_recent(1)
                    .max_input_tokens(100)
                    .headroom(0.8)
                    .token_counter(|m| m.text().len())
                    .summarize_with(move |messages| {
                        recorded.lock().unwrap().push(messages);
                        async { Ok("S".to_owned()) }
                    })
            })
            .build()
            .unwrap()
    };
    let before = ScriptedModel::new([ScriptedStep::new().text("one").usage(90, 1)]);
    let first = agent(&before).session("s").run(long.as_str()).await;
    assert_eq!(first.status, TurnStatus::Completed, "{first:?}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing older to compact yet"
    );

    // Restarted: a new agent and store on the file, nothing of the first in memory.
    let after = ScriptedModel::new([ScriptedStep::new().text("two")]);
    let second = agent(&after).session("s").run("go").await;
    assert_eq!(second.status, TurnStatus::Completed, "{second:?}");
    assert_eq!(
        *seen.lock().unwrap(),
        [vec![
            Message::user(long.as_str()),
            Message::assistant("one")
        ]],
        "the first turn was summarized"
    );
    assert_eq!(
        *after.requests()[0].messages,
        [
            Message::system("Summary of the earlier conversation:\nS"),
            Message::user("go"),
        ]
    );
}

#[tokio::test]
async fn a_headroom_that_is_not_a_share_fails_the_turn_saying_so() {
    for (headroom, shown) in [(f64::NAN, "NaN"), (0.0, "0"), (-0.5, "-0.5"), (1.5, "1.5")] {
        let model = ScriptedModel::new([ScriptedStep::new().text("never")]);
        let agent = AgentBuilder::new("a")
            .model(model.clone())
            .configure_session(move |session| session.max_input_tokens(100).headroom(headroom))
            .build()
            .unwrap();
        let result = agent.session("s").run("go").await;
        let error = result.error.expect("the turn fails");
        assert_eq!(
            error.message,
            format!(
                "SessionConfig::headroom is {shown}: give the share of max_input_tokens past \
                 which a step compacts, above 0 and at most 1"
            )
        );
        assert!(model.requests().is_empty());
    }
    let agent = AgentBuilder::new("a")
        .model(ScriptedModel::new([ScriptedStep::new().text("ok")]))
        .configure_session(|session| session.headroom(1.0))
        .build()
        .unwrap();
    assert_eq!(
        agent.session("s").run("go").await.status,
        TurnStatus::Completed
    );
}

#[tokio::test]
async fn a_hook_error_that_mentions_the_context_window_is_not_an_overflow() {
    let seen = Seen::default();
    let model = ScriptedModel::new([
        ScriptedStep::new().text("one"),
        ScriptedStep::new().text("two"),
    ]);
    let steps = Arc::new(AtomicUsize::new(0));
    let counted = steps.clone();
    let classified = Arc::new(Mutex::new(Vec::new()));
    let errors = classified.clone();
    let agent = AgentBuilder::new("a")
        .model(model.clone())
        .configure_session(summarizing(&seen))
        .hook(Hook::<event::BeforeStep>::sync("guard", move |_| {
            if counted.fetch_add(1, Ordering::SeqCst) >= 2 {
                Err("the context window of my audit log is full")
            } else {
                Ok(())
            }
        }))
        .hook(Hook::<event::OnChatError>::sync("errors", move |ctx| {
            errors.lock().unwrap().push(ctx.classification);
            None
        }))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    conversation.run("first question, which is long").await;
    conversation.run("second question, which is long").await;
    let third = conversation.run("third").await;
    assert_eq!(third.status, TurnStatus::Error);
    assert_eq!(third.classification, Some(ChatErrorClassification::Unknown));
    assert_eq!(
        *classified.lock().unwrap(),
        [ChatErrorClassification::Unknown]
    );
    // Nothing was compacted and nothing retried: the guard ran once in the third turn.
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(steps.load(Ordering::SeqCst), 3);
    assert_eq!(model.requests().len(), 2);
}
