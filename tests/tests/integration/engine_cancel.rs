//! A dropped turn future counts as a cancel (issue 15 item 3), and a cancel ends a turn at
//! once wherever it waits (item 4): on the session's turn lock or inside a slow async hook.
//!
//! Time is paused in these tests: the runtime jumps to the next timer when every task waits, so
//! a turn that did not stop on its cancel would run into the test's 60 s bound (checked on the
//! paused clock, exactly) instead of hanging.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    AgentBuilder, CancelToken, Extension, ExtensionEvent, Hook, HookReturn, Matcher, MemoryStore,
    ScriptedModel, ScriptedStep, SessionStore, ToolCallDecision, TurnEvent, TurnRequest,
    TurnResult, TurnStatus, TurnWideEvent, event,
};
use tests::{Add, AddArgs, Seen, Trace, assert_whole};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The test's bound on a turn that must end promptly, on the paused clock.
const BOUND: Duration = Duration::from_secs(60);

/// An agent whose one step calls `hang` (after some text), on `store`, recording every
/// on_chat_response.
fn hanging_agent(
    store: &Arc<dyn SessionStore>,
    responses: &Seen<agent_core::ChatResponse>,
) -> (AgentBuilder, mpsc::UnboundedReceiver<()>) {
    let (started, on_start) = mpsc::unbounded_channel();
    let model = ScriptedModel::new([ScriptedStep::new()
        .text("Working on it.")
        .tool_call("c1", "hang", "{}")]);
    let builder = AgentBuilder::new("cancel")
        .model(model)
        .store(store.clone())
        .dyn_tool(tests::hanging_tool(started))
        .hook(responses.hook::<event::OnChatResponse>("responses"));
    (builder, on_start)
}

/// Waits until on_chat_response has fired (the turn runs on its own task), then checks it
/// fired once, with `aborted`, and that the stored session is whole.
async fn assert_aborted_and_whole(
    store: &Arc<dyn SessionStore>,
    responses: &Seen<agent_core::ChatResponse>,
) {
    let mut seen = Vec::new();
    let deadline = Instant::now() + BOUND;
    while seen.is_empty() {
        assert!(Instant::now() < deadline, "on_chat_response never fired");
        tokio::time::sleep(Duration::from_millis(1)).await;
        seen.extend(responses.take());
    }
    // Anything else would have fired by now: the turn's task has ended.
    tokio::time::sleep(Duration::from_millis(100)).await;
    seen.extend(responses.take());
    let statuses: Vec<_> = seen.iter().map(|response| response.status).collect();
    assert_eq!(statuses, [TurnStatus::Aborted]);
    let rows = store.load("s").await.unwrap();
    assert_whole(&rows);
    let texts: Vec<_> = rows.iter().map(|row| row.message.text()).collect();
    assert_eq!(
        texts,
        [
            "go",
            "Working on it.",
            "tool `hang` did not finish: the turn was aborted"
        ],
        "the user's row, the reply with its call, and the call answered"
    );
}

#[tokio::test(start_paused = true)]
async fn a_timeout_around_run_cancels_the_turn_and_settles_it() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let responses = Seen::new();
    let (builder, mut started) = hanging_agent(&store, &responses);
    let conversation = builder.build().unwrap().session("s");
    let token = CancelToken::new();
    let request = TurnRequest::new("go").cancel(token.clone());
    let timed = tokio::time::timeout(Duration::from_secs(5), conversation.run(request)).await;
    assert!(
        timed.is_err(),
        "the turn hangs in its tool until the timeout"
    );
    assert!(started.try_recv().is_ok(), "the tool was running");
    assert_aborted_and_whole(&store, &responses).await;
    assert!(
        !token.is_cancelled(),
        "the caller's token is left alone: only the dropped turn was cancelled"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_a_turn_stream_cancels_the_turn_and_settles_it() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let responses = Seen::new();
    let (builder, mut started) = hanging_agent(&store, &responses);
    let conversation = builder.build().unwrap().session("s");
    let mut stream = conversation.stream("go");
    let first = stream.next().await;
    assert!(matches!(first, Some(TurnEvent::Chunk { .. })), "{first:?}");
    tokio::time::timeout(BOUND, started.recv())
        .await
        .expect("the tool starts");
    drop(stream);
    assert_aborted_and_whole(&store, &responses).await;
}

#[tokio::test(start_paused = true)]
async fn a_stream_read_to_its_end_cancels_nothing() {
    let model = ScriptedModel::new([ScriptedStep::new().text("Hello.")]);
    let responses = Seen::new();
    let conversation = AgentBuilder::new("done")
        .model(model)
        .hook(responses.hook::<event::OnChatResponse>("responses"))
        .build()
        .unwrap()
        .session("s");
    let mut stream = conversation.stream("hi");
    let mut last = None;
    while let Some(event) = stream.next().await {
        last = Some(event);
    }
    drop(stream);
    let Some(TurnEvent::Finished(result)) = last else {
        panic!("the stream ends with Finished: {last:?}")
    };
    assert_eq!(result.status, TurnStatus::Completed);
    let statuses: Vec<_> = responses.take().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [TurnStatus::Completed]);
}

/// A streamed turn whose consumer keeps its stream but stops reading waits for room in the
/// stream's channel; a cancel ends that wait: the turn ends aborted, its reply row settled,
/// and gives its session back, while the events already sent and `Finished` stay readable.
#[tokio::test(start_paused = true)]
async fn a_cancel_ends_a_streamed_turn_whose_events_are_not_read() {
    let mut long = ScriptedStep::new();
    for n in 0..200 {
        long = long.text(format!("w{n} "));
    }
    let model = ScriptedModel::new([long, ScriptedStep::new().text("Next.")]);
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let responses = Seen::new();
    let conversation = AgentBuilder::new("unread")
        .model(model)
        .store(store.clone())
        .hook(responses.hook::<event::OnChatResponse>("responses"))
        .build()
        .unwrap()
        .session("s");
    let cancel = CancelToken::new();
    let mut unread = conversation.stream(TurnRequest::new("go").cancel(cancel.clone()));
    // The turn fills the channel and waits for room.
    tokio::time::sleep(Duration::from_millis(10)).await;
    cancel.cancel();
    let next = tests::within("the next turn of the session", conversation.run("again")).await;
    assert_eq!(next.text, "Next.", "{next:?}");
    let statuses: Vec<_> = responses.take().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [TurnStatus::Aborted, TurnStatus::Completed]);
    let rows = store.load("s").await.unwrap();
    assert_whole(&rows);
    assert_eq!(rows[1].status, agent_core::MessageStatus::Failed);
    assert!(rows[1].message.text().starts_with("w0 w1 "), "{rows:?}");
    let mut last = None;
    while let Some(event) = tests::within("the unread events", unread.next()).await {
        last = Some(event);
    }
    let Some(TurnEvent::Finished(result)) = last else {
        panic!("the stream ends with Finished: {last:?}")
    };
    assert_eq!(result.status, TurnStatus::Aborted);
}

/// Runs `turn`, cancels `token` after 50 ms, and returns the result and how long after the
/// cancel the turn returned (paused clock: exact).
async fn cancelled_after_50ms(
    token: &CancelToken,
    turn: impl Future<Output = TurnResult>,
) -> (TurnResult, Duration) {
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            token.cancel();
            Instant::now()
        })
    };
    let result = tokio::time::timeout(BOUND, turn)
        .await
        .expect("the cancelled turn ends");
    let cancelled_at = canceller.await.unwrap();
    (result, Instant::now() - cancelled_at)
}

/// A turn cancelled while an async hook of `E` runs (a hook that would never return) ends at
/// the moment of the cancel, aborted, with on_chat_response once and its session whole; the
/// texts of the rows it stored.
async fn slow_hook_stops_on_cancel<E: TurnWideEvent>() -> Vec<String>
where
    (): HookReturn<E>,
{
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let responses = Seen::new();
    let t = trace.clone();
    let stuck = Hook::<E>::from_async("stuck", move |_: &E::Ctx| {
        t.push(format!("{} started", E::NAME));
        Box::pin(std::future::pending::<()>())
    });
    let conversation = AgentBuilder::new("slow")
        .model(ScriptedModel::new([ScriptedStep::new().text("Hello.")]))
        .store(store.clone())
        .hook(stuck)
        .hook(responses.hook::<event::OnChatResponse>("responses"))
        .build()
        .unwrap()
        .session("s");
    let token = CancelToken::new();
    let request = TurnRequest::new("hi").cancel(token.clone());
    let (result, late) = cancelled_after_50ms(&token, conversation.run(request)).await;
    assert_eq!(
        trace.take(),
        [format!("{} started", E::NAME)],
        "the hook ran"
    );
    assert_eq!(result.status, TurnStatus::Aborted, "{}", E::NAME);
    assert_eq!(
        late,
        Duration::ZERO,
        "{} held the turn past its cancel",
        E::NAME
    );
    let statuses: Vec<_> = responses.take().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [TurnStatus::Aborted], "{}", E::NAME);
    let rows = store.load("s").await.unwrap();
    assert_whole(&rows);
    rows.iter()
        .map(|row| row.message.text().to_owned())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_slow_async_hook_stops_when_the_turn_is_cancelled() {
    // Cancelled before the input is stored (on_session_start and before_run are fail open
    // by default: a cancel still stops what follows them), the turn stores nothing.
    let nothing: [&str; 0] = [];
    assert_eq!(
        slow_hook_stops_on_cancel::<event::OnSessionStart>().await,
        nothing
    );
    assert_eq!(
        slow_hook_stops_on_cancel::<event::BeforeRun>().await,
        nothing
    );
    // Later, the input stays, and a reply only once its step was stored.
    let input = ["hi"];
    assert_eq!(
        slow_hook_stops_on_cancel::<event::BeforeTurn>().await,
        input
    );
    assert_eq!(
        slow_hook_stops_on_cancel::<event::BeforeStep>().await,
        input
    );
    assert_eq!(
        slow_hook_stops_on_cancel::<event::OnLlmStart>().await,
        input
    );
    let replied = ["hi", "Hello."];
    assert_eq!(
        slow_hook_stops_on_cancel::<event::OnLlmEnd>().await,
        replied
    );
    assert_eq!(
        slow_hook_stops_on_cancel::<event::OnStepFinish>().await,
        replied
    );
    assert_eq!(
        slow_hook_stops_on_cancel::<event::PrefilterLlmHistory>().await,
        input
    );
    // The input's own before_create_message: cancelled, the input is not stored.
    assert_eq!(
        slow_hook_stops_on_cancel::<event::BeforeCreateMessage>().await,
        nothing
    );
}

#[tokio::test(start_paused = true)]
async fn a_turn_waiting_for_its_session_ends_at_once_when_cancelled() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let responses = Seen::new();
    let (builder, mut started) = hanging_agent(&store, &responses);
    let conversation = builder.build().unwrap().session("s");
    let first_token = CancelToken::new();
    let first = tokio::spawn({
        let conversation = conversation.clone();
        let request = TurnRequest::new("go").cancel(first_token.clone());
        async move { conversation.run(request).await }
    });
    tokio::time::timeout(BOUND, started.recv())
        .await
        .expect("the first turn holds the session, in its tool");
    let token = CancelToken::new();
    let second = conversation.run(TurnRequest::new("second").cancel(token.clone()));
    let (result, late) = cancelled_after_50ms(&token, second).await;
    assert_eq!(result.status, TurnStatus::Aborted);
    assert_eq!(
        late,
        Duration::ZERO,
        "the waiting turn returned at its cancel"
    );
    assert!(!first.is_finished(), "the first turn still runs");
    let statuses: Vec<_> = responses.take().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [TurnStatus::Aborted],
        "a turn that never started fires on_chat_response alone"
    );
    first_token.cancel();
    let first = first.await.unwrap();
    assert_eq!(first.status, TurnStatus::Aborted);
    let rows = store.load("s").await.unwrap();
    assert_whole(&rows);
    assert!(
        rows.iter().all(|row| row.message.text() != "second"),
        "the cancelled turn wrote nothing"
    );
}

/// A cancel that stops a fail-open before_tool_call hook (the default policy) does not let the
/// call run: the tool never starts, the call is answered with an error result, and the turn
/// ends aborted at the moment of the cancel.
#[tokio::test(start_paused = true)]
async fn a_cancelled_tool_gate_does_not_let_its_call_run() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let t = trace.clone();
    let stuck = Hook::<event::BeforeToolCall<AddArgs>>::from_async("stuck", move |_| {
        t.push("gate started".to_owned());
        Box::pin(std::future::pending::<ToolCallDecision<AddArgs>>())
    });
    let conversation = AgentBuilder::new("gated")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":2}"#),
            ScriptedStep::new().text("never asked"),
        ]))
        .store(store.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(Matcher::tool("add"), stuck)
        .build()
        .unwrap()
        .session("s");
    let token = CancelToken::new();
    let request = TurnRequest::new("1+2").cancel(token.clone());
    let (result, late) = cancelled_after_50ms(&token, conversation.run(request)).await;
    assert_eq!(result.status, TurnStatus::Aborted, "{result:?}");
    assert_eq!(
        late,
        Duration::ZERO,
        "the gate held the turn past its cancel"
    );
    assert_eq!(trace.take(), ["gate started"], "the tool never ran");
    assert_whole(&store.load("s").await.unwrap());
}

/// A cancel stops the session's own awaits too: an async context provider while the session
/// opens, and a summarizer while the history is compacted before a step. The turn ends at the
/// moment of the cancel, aborted, with on_chat_response once and its session whole.
#[tokio::test(start_paused = true)]
async fn a_cancel_stops_a_slow_context_provider_and_a_slow_summarizer() {
    let forever = || async {
        tokio::time::sleep(BOUND * 10).await;
        Ok::<String, String>("never".to_owned())
    };
    let slow_context = AgentBuilder::new("context")
        .model(ScriptedModel::new([ScriptedStep::new().text("Hello.")]))
        .configure_session(move |session| session.context_async("profile", move |_| forever()));
    let slow_summary = AgentBuilder::new("summary")
        .model(ScriptedModel::new([
            ScriptedStep::new().text("One."),
            ScriptedStep::new().text("Two."),
        ]))
        .configure_session(move |session| {
            session.keep_recent(1).compact_after(1, move |_| forever())
        });
    for (builder, earlier) in [(slow_context, 0), (slow_summary, 1)] {
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
        let responses = Seen::new();
        let conversation = builder
            .store(store.clone())
            .hook(responses.hook::<event::OnChatResponse>("responses"))
            .build()
            .unwrap()
            .session("s");
        for _ in 0..earlier {
            conversation.run("first").await;
        }
        let token = CancelToken::new();
        let turn = conversation.run(TurnRequest::new("go").cancel(token.clone()));
        let (result, after) = cancelled_after_50ms(&token, turn).await;
        assert_eq!(result.status, TurnStatus::Aborted, "{result:?}");
        assert_eq!(after, Duration::ZERO, "the turn ends at the cancel");
        let statuses: Vec<_> = responses.take().iter().map(|r| r.status).collect();
        let mut expected = vec![TurnStatus::Completed; earlier];
        expected.push(TurnStatus::Aborted);
        assert_eq!(statuses, expected);
        assert_whole(&store.load("s").await.unwrap());
    }
}

/// A cancel stops an extension's handler as it stops an async hook, whichever event it
/// subscribed to: the turn ends at the moment of the cancel, aborted, with on_chat_response
/// once and its session whole (the handler's timeout is no bound here).
#[tokio::test(start_paused = true)]
async fn a_cancel_stops_a_slow_extension_on_every_event() {
    for event in [
        ExtensionEvent::BeforeTurn,
        ExtensionEvent::OnChunk,
        ExtensionEvent::BeforeToolCall,
        ExtensionEvent::AfterToolCall,
        ExtensionEvent::OnStepFinish,
    ] {
        let slow = Extension::new("slow", |_, _| async {
            tokio::time::sleep(BOUND * 10).await;
            Ok(serde_json::Value::Null)
        })
        .subscribe([event])
        .timeout(Duration::MAX);
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
        let responses = Seen::new();
        let conversation = AgentBuilder::new("extension")
            .model(ScriptedModel::new([
                ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":2}"#),
                ScriptedStep::new().text("Three."),
            ]))
            .tool(Add::default())
            .store(store.clone())
            .extension(slow)
            .hook(responses.hook::<event::OnChatResponse>("responses"))
            .build()
            .unwrap()
            .session("s");
        let token = CancelToken::new();
        let turn = conversation.run(TurnRequest::new("go").cancel(token.clone()));
        let (result, after) = cancelled_after_50ms(&token, turn).await;
        assert_eq!(result.status, TurnStatus::Aborted, "{event:?}: {result:?}");
        assert_eq!(
            after,
            Duration::ZERO,
            "{event:?}: the turn ends at the cancel"
        );
        let statuses: Vec<_> = responses.take().iter().map(|r| r.status).collect();
        assert_eq!(statuses, [TurnStatus::Aborted], "{event:?}");
        assert_whole(&store.load("s").await.unwrap());
    }
}

/// A hook that cancels its own turn stops what follows it, as a cancel from outside does: a
/// sync gate that cancels on the step's first call (and blocks it) lets neither the gate nor
/// the tool of the step's second call run, and the turn ends aborted after the step, each
/// call answered with what became of it. The second call's tool ran before, after the cancel.
#[tokio::test(start_paused = true)]
async fn a_gate_that_cancels_its_own_turn_lets_no_later_call_of_the_step_run() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let t = trace.clone();
    let kill_switch = Hook::<event::BeforeToolCall<AddArgs>>::sync("kill switch", move |ctx| {
        t.push(format!("gate {}", ctx.call_id));
        if &*ctx.call_id == "c1" {
            ctx.cancel.cancel();
            return ToolCallDecision::Block(Some("stopping the turn".to_owned()));
        }
        ToolCallDecision::Allow
    });
    let conversation = AgentBuilder::new("gated")
        .model(ScriptedModel::new([
            ScriptedStep::new()
                .text("Adding twice.")
                .tool_call("c1", "add", r#"{"a":1,"b":2}"#)
                .tool_call("c2", "add", r#"{"a":3,"b":4}"#),
            ScriptedStep::new().text("never asked"),
        ]))
        .store(store.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(Matcher::tool("add"), kill_switch)
        .build()
        .unwrap()
        .session("s");
    let result = conversation.run("go").await;
    assert_eq!(result.status, TurnStatus::Aborted, "{result:?}");
    assert_eq!(trace.take(), ["gate c1"], "nothing ran after the cancel");
    let rows = store.load("s").await.unwrap();
    assert_whole(&rows);
    let texts: Vec<_> = rows.iter().map(|row| row.message.text()).collect();
    assert_eq!(
        texts,
        [
            "go",
            "Adding twice.",
            "stopping the turn",
            "tool `add` did not run: the turn was cancelled",
        ]
    );
}
