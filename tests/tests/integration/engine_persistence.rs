//! Turn persistence (docs/design.md §7): the user message is stored when the turn starts, each assistant
//! message pending when its model call starts and completed (or failed, with its partial content)
//! when it ends, each tool result as it is appended. Store operations are traced together with
//! the hooks, so the test compares one full ordered list.

use std::sync::{Arc, OnceLock};

use agent_core::{
    AgentBuilder, BoxFuture, Conversation, Hook, Message, MessageStatus, MessageUpdate, NewMessage,
    ScriptedModel, ScriptedStep, SessionStore, StoreError, StoreErrorKind, StoredMessage,
    TurnStatus, event,
};
use tests::{Add, Trace, TracedStore, history_texts};

#[tokio::test]
async fn every_row_is_written_at_its_place_in_the_turn() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Adding.")
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("5"),
    ]);
    let (t1, t2, t3) = (trace.clone(), trace.clone(), trace.clone());
    let agent = AgentBuilder::new("persisted")
        .model(model)
        .tool(Add::traced(&trace))
        .store(TracedStore::shared(&trace))
        .hook(Hook::<event::BeforeStep>::sync("step", move |ctx| {
            t1.push(format!("before_step({})", ctx.step))
        }))
        .hook(Hook::<event::OnStepFinish>::sync("finish", move |step| {
            t2.push(format!("on_step_finish({})", step.step))
        }))
        .hook(Hook::<event::OnChatResponse>::sync("response", move |_| {
            t3.push("on_chat_response")
        }))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("2+3?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        [
            "store.load",
            "store.insert(user completed \"2+3?\")",
            "before_step(0)",
            "store.insert(assistant pending \"\")",
            "store.update(2 completed \"Adding.\")",
            "add(2,3)",
            "store.insert(tool completed \"5\")",
            "on_step_finish(0)",
            "before_step(1)",
            "store.insert(assistant pending \"\")",
            "store.update(4 completed \"5\")",
            "on_step_finish(1)",
            "on_chat_response",
        ]
    );
    let rows = conversation.rows().await.unwrap();
    let statuses: Vec<(&str, MessageStatus, Option<agent_core::ToolStatus>)> = rows
        .iter()
        .map(|r| (r.message.role(), r.status, r.tool_status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("user", MessageStatus::Completed, None),
            ("assistant", MessageStatus::Completed, None),
            (
                "tool",
                MessageStatus::Completed,
                Some(agent_core::ToolStatus::Success)
            ),
            ("assistant", MessageStatus::Completed, None),
        ]
    );
    assert!(rows[1].request_sent_at.is_some() && rows[1].response_completed_at.is_some());
    assert!(
        rows.windows(2)
            .all(|w| w[0].id < w[1].id && w[0].created_at <= w[1].created_at)
    );
}

/// A store whose writes fail.
#[derive(Default)]
struct BrokenStore(agent_core::TurnLocks);

impl SessionStore for BrokenStore {
    fn load<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn insert<'a>(
        &'a self,
        _: &'a str,
        _: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        Box::pin(async { Err(StoreError::new(StoreErrorKind::Io, "disk full")) })
    }

    fn update<'a>(
        &'a self,
        _: &'a str,
        _: i64,
        _: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err(StoreError::new(StoreErrorKind::Io, "disk full")) })
    }

    fn delete<'a>(&'a self, _: &'a str, _: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Err(StoreError::new(StoreErrorKind::Io, "disk full")) })
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<agent_core::TurnLease>, StoreError>> {
        Box::pin(async move {
            Ok(self
                .0
                .lock(session, wait)
                .await
                .map(agent_core::TurnLease::local))
        })
    }
}

#[tokio::test]
async fn a_store_failure_ends_the_turn_at_stage_persist_before_any_model_call() {
    let model = ScriptedModel::new([ScriptedStep::new().text("never")]);
    let stages = Trace::new();
    let seen = stages.clone();
    let agent = AgentBuilder::new("broken")
        .model(model.clone())
        .store(Arc::new(BrokenStore::default()))
        .hook(Hook::<event::OnChatError>::sync("error", move |ctx| {
            seen.push(format!(
                "{} persisted={} {}",
                ctx.stage.as_str(),
                ctx.messages_persisted,
                ctx.error
            ))
        }))
        .build()
        .unwrap();
    let result = agent.run("hi").await;
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(
        stages.take(),
        ["persist persisted=false history store failed: disk full"]
    );
    assert!(
        model.requests().is_empty(),
        "no model call without the user's message stored"
    );
}

#[tokio::test]
async fn a_turn_can_start_from_inside_on_chat_response() {
    let conversation: Arc<OnceLock<Conversation>> = Arc::new(OnceLock::new());
    let trace = Trace::new();
    let (slot, seen) = (conversation.clone(), trace.clone());
    let model = ScriptedModel::new([
        ScriptedStep::new().text("first"),
        ScriptedStep::new().text("second"),
    ]);
    let agent = AgentBuilder::new("chained")
        .model(model)
        .hook(Hook::<event::OnChatResponse>::from_async(
            "follow_up",
            move |response| {
                let (slot, seen) = (slot.clone(), seen.clone());
                let text = response.message.text().to_owned();
                Box::pin(async move {
                    seen.push(format!("on_chat_response({text})"));
                    if text == "first"
                        && let Some(conversation) = slot.get()
                    {
                        // The turn lock is already released: this does not deadlock.
                        let follow = conversation.run("and then?").await;
                        seen.push(format!("follow-up {:?}", follow.status));
                    }
                })
            },
        ))
        .build()
        .unwrap();
    let _ = conversation.set(agent.conversation());
    let result = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        conversation.get().unwrap().run("hi"),
    )
    .await
    .expect("no deadlock");
    assert_eq!(result.text, "first");
    assert_eq!(
        trace.take(),
        [
            "on_chat_response(first)",
            "on_chat_response(second)",
            "follow-up Completed"
        ]
    );
    let history = conversation.get().unwrap().history().await.unwrap();
    let texts: Vec<&str> = history.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["hi", "first", "and then?", "second"]);
}

#[tokio::test]
async fn with_the_reject_policy_an_overlapping_turn_ends_at_once_as_busy() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .sleep(std::time::Duration::from_millis(200))
            .text("slow"),
        ScriptedStep::new().text("later"),
    ]);
    // The error hooks and on_chat_response of every turn, in order.
    let trace = Trace::new();
    let (errors, responses) = (trace.clone(), trace.clone());
    let agent = AgentBuilder::new("single")
        .model(model)
        .turn_overlap(agent_core::TurnOverlap::Reject)
        .hook(Hook::<event::OnChatError>::sync("errors", move |ctx| {
            errors.push(format!(
                "on_chat_error({:?}, {}, stored {})",
                ctx.error.kind,
                ctx.stage.as_str(),
                ctx.messages_persisted
            ));
            None
        }))
        .hook(Hook::<event::OnChatResponse>::sync(
            "responses",
            move |ctx| {
                responses.push(format!("on_chat_response({:?})", ctx.status));
            },
        ))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let first = tokio::spawn({
        let conversation = conversation.clone();
        async move { conversation.run("one").await }
    });
    // Let the first turn take the session.
    while conversation.rows().await.unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    let second = conversation.run("two").await;
    assert_eq!(second.status, TurnStatus::Error);
    assert_eq!(
        second.error.map(|e| e.kind),
        Some(agent_core::TurnErrorKind::Busy)
    );
    // Like every turn, the rejected one ends in on_chat_response, after its error hooks.
    assert_eq!(
        trace.take(),
        [
            "on_chat_error(Busy, turn, stored false)",
            "on_chat_response(Error)"
        ]
    );
    let first = first.await.unwrap();
    assert_eq!(first.text, "slow");
    let texts = history_texts(&conversation).await;
    assert_eq!(texts, ["one", "slow"], "the rejected turn stored nothing");
    assert_eq!(
        conversation.run("three").await.text,
        "later",
        "the session is free again"
    );
}

/// A store that takes 50 ms to answer any `lock_turn` (a lease over a slow network), free
/// session or not.
struct SlowLeases(agent_core::MemoryStore);

impl SessionStore for SlowLeases {
    fn load<'a>(&'a self, s: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        self.0.load(s)
    }

    fn insert<'a>(
        &'a self,
        s: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        self.0.insert(s, row)
    }

    fn update<'a>(
        &'a self,
        s: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.update(s, id, update)
    }

    fn delete<'a>(&'a self, s: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.delete(s, id)
    }

    fn lock_turn<'a>(
        &'a self,
        s: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<agent_core::TurnLease>, StoreError>> {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            self.0.lock_turn(s, wait).await
        })
    }
}

/// `WaitAtMost` bounds the wait for another turn of the session, not the store's time to hand
/// a free session over: with a store slower than the bound (and with a bound of zero, which
/// then acts as `Reject`), a turn of a free session runs, and a turn of a held one still ends
/// `Busy` once the bound has passed.
#[tokio::test(start_paused = true)]
async fn wait_at_most_bounds_the_wait_for_another_turn_not_the_store() {
    use agent_core::TurnOverlap;
    use std::time::Duration;
    for bound in [Duration::ZERO, Duration::from_millis(10)] {
        let agent = AgentBuilder::new("bounded")
            .model(ScriptedModel::new([
                ScriptedStep::new().text("free"),
                ScriptedStep::new()
                    .text("held")
                    .sleep(Duration::from_secs(1)),
                ScriptedStep::new().text("never"),
            ]))
            .store(Arc::new(SlowLeases(agent_core::MemoryStore::new())))
            .turn_overlap(TurnOverlap::WaitAtMost(bound))
            .build()
            .unwrap();
        let conversation = agent.conversation();
        let free = conversation.run("one").await;
        assert_eq!(free.text, "free", "{bound:?}: {free:?}");
        let held = tokio::spawn({
            let conversation = conversation.clone();
            async move { conversation.run("two").await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = tokio::time::Instant::now();
        let busy = conversation.run("three").await;
        assert_eq!(
            busy.error.map(|e| e.kind),
            Some(agent_core::TurnErrorKind::Busy),
            "{bound:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(1), "{bound:?}");
        assert_eq!(held.await.unwrap().text, "held", "{bound:?}");
    }
}

/// A reply's tool calls are made one shared list when its stream ends: on_llm_end's context,
/// the step's record, the turn's messages, the stored row (on `MemoryStore`, which keeps the
/// message it is given) and the next request hold that list, not copies of it.
#[tokio::test]
async fn a_replys_tool_calls_are_one_shared_list() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
            .tool_call("c2", "add", r#"{"a":4,"b":5}"#),
        ScriptedStep::new().text("5 and 9"),
    ]);
    let seen = Arc::new(OnceLock::new());
    let read = seen.clone();
    let agent = AgentBuilder::new("shared")
        .model(model.clone())
        .tool(Add::traced(&Trace::new()))
        .hook(Hook::<event::OnLlmEnd>::sync("calls", move |ctx| {
            let _ = read.set(ctx.tool_calls.clone());
        }))
        .build()
        .unwrap();
    let conversation = agent.session("s");
    let result = conversation.run("add").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");

    let calls_of = |message: &Message| match message {
        Message::Assistant { tool_calls, .. } => tool_calls.clone(),
        other => panic!("not an assistant message: {other:?}"),
    };
    let recorded = &result.steps[0].tool_calls;
    let ids: Vec<&str> = recorded.iter().map(|call| &*call.id).collect();
    assert_eq!(ids, ["c1", "c2"]);
    let rows = conversation.rows().await.unwrap();
    let holders = [
        (
            "on_llm_end's context",
            seen.get().expect("on_llm_end ran").clone(),
        ),
        ("the turn's messages", calls_of(&result.messages[0])),
        ("the stored row", calls_of(&rows[1].message)),
        (
            "the next request",
            calls_of(&model.requests()[1].messages[1]),
        ),
    ];
    for (holder, calls) in holders {
        assert!(Arc::ptr_eq(recorded, &calls), "{holder} holds a copy");
    }
    // A reply without calls holds the empty list.
    assert!(result.steps[1].tool_calls.is_empty());
}

/// What a re-entrant hook reads: the session its turn runs in, and what it saw.
type Seen = (OnceLock<Conversation>, std::sync::Mutex<Vec<String>>);

/// Runs a turn of session `s` of an agent whose step runs `hook` (which reads the session
/// from `seen`); the turn must complete, and within 60 s of the paused clock: a call the hook
/// awaits that waited for the turn it runs in would hang it.
async fn run_outer(seen: &Arc<Seen>, hook: Hook<event::OnStepFinish>) -> Conversation {
    let agent = AgentBuilder::new("reentrant")
        .model(ScriptedModel::new([ScriptedStep::new().text("outer")]))
        .hook(hook)
        .build()
        .unwrap();
    let conversation = agent.session("s");
    let _ = seen.0.set(conversation.clone());
    let outer = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        conversation.run("outer"),
    )
    .await
    .expect("a call inside the turn waited for the turn it runs in");
    assert_eq!(outer.status, TurnStatus::Completed, "{outer:?}");
    conversation
}

/// A hook that runs another turn of its own session and awaits it waited forever: that turn
/// waits for the session, which the turn running the hook holds until the hook returns. The
/// inner turn now ends at once, `Busy`, saying why, and the outer turn goes on.
#[tokio::test(start_paused = true)]
async fn a_turn_started_inside_its_sessions_running_turn_is_busy_at_once() {
    let seen: Arc<Seen> = Arc::default();
    let again = Hook::<event::OnStepFinish>::new_async_with(
        "again",
        seen.clone(),
        async |seen: &Arc<Seen>, _: &agent_core::StepRecord| {
            let inner = seen.0.get().unwrap().run("inner").await;
            let error = inner.error.map(|e| (e.kind, e.message));
            seen.1
                .lock()
                .unwrap()
                .push(format!("{:?} {error:?}", inner.status));
        },
    );
    let conversation = run_outer(&seen, again).await;
    assert_eq!(
        *seen.1.lock().unwrap(),
        [
            "Error Some((Busy, \"a turn of session `s` was started inside that session's \
             running turn (by one of its hooks or tools), which it would wait for forever: \
             start it once that turn has ended (from on_chat_response, or on a task of its \
             own)\"))"
        ]
    );
    let texts = history_texts(&conversation).await;
    assert_eq!(texts, ["outer", "outer"], "the inner turn stored nothing");
}

/// The other calls that take the session's turn lock waited forever too when a hook or tool
/// of the session's own turn awaited them: a streamed turn (its task runs outside the hook's
/// turn), inject_message, the answers to waiting calls, revoke_approval and resume. Each is
/// now refused at once, saying why, and the outer turn goes on.
#[tokio::test(start_paused = true)]
async fn every_call_taking_the_sessions_lock_is_refused_inside_its_running_turn() {
    let seen: Arc<Seen> = Arc::default();
    let again = Hook::<event::OnStepFinish>::new_async_with(
        "again",
        seen.clone(),
        async |seen: &Arc<Seen>, _: &agent_core::StepRecord| {
            let conversation = seen.0.get().unwrap();
            let mut said = Vec::new();
            let mut stream = conversation.stream("inner");
            while let Some(event) = stream.next().await {
                if let agent_core::TurnEvent::Finished(result) = event {
                    let error = result.error.map(|e| (e.kind, e.message));
                    said.push(format!("stream: {:?} {error:?}", result.status));
                }
            }
            let injected = conversation.inject_message(Message::user("x")).await;
            said.push(format!("inject_message: {}", injected.unwrap_err()));
            let approved = conversation.approve("c1").await;
            said.push(format!("approve: {}", approved.unwrap_err()));
            let resumed = conversation.resume().await;
            said.push(format!("resume: {}", resumed.unwrap_err()));
            let revoked = conversation.revoke_approval("add").await;
            said.push(format!("revoke_approval: {}", revoked.unwrap_err()));
            seen.1.lock().unwrap().extend(said);
        },
    );
    let conversation = run_outer(&seen, again).await;
    let lock_refused = |what: &str| {
        format!(
            "{what}: called inside session `s`'s running turn (by one of its hooks or tools), \
             whose end it would wait for forever: call it once that turn has ended (from \
             on_chat_response, or on a task of its own)"
        )
    };
    let answer_refused = "an answer or resume of session `s` was asked for inside that \
                          session's running turn (by one of its hooks or tools), whose end it \
                          would wait for forever: give it once that turn has ended (from \
                          on_chat_response, or on a task of its own)";
    assert_eq!(
        *seen.1.lock().unwrap(),
        [
            "stream: Error Some((Busy, \"a turn of session `s` was started inside that \
             session's running turn (by one of its hooks or tools), which it would wait for \
             forever: start it once that turn has ended (from on_chat_response, or on a task \
             of its own)\"))"
                .to_owned(),
            format!("inject_message: {}", lock_refused("inject_message")),
            format!("approve: {answer_refused}"),
            format!("resume: {answer_refused}"),
            format!("revoke_approval: {}", lock_refused("revoke_approval")),
        ]
    );
    let texts = history_texts(&conversation).await;
    assert_eq!(texts, ["outer", "outer"], "nothing else was stored");
    // Once the turn has ended, the same calls run.
    let stored = conversation.inject_message(Message::user("x")).await;
    assert!(stored.is_ok(), "{stored:?}");
    assert_eq!(conversation.revoke_approval("add").await, Ok(false));
}
