//! A panic anywhere in a turn ends that turn with an error, never the process: in the model
//! (creating its stream or polling it), the store, a context provider, the configure_session
//! closure, or other code the turn runs (a token counter). Each still runs the error hooks and
//! on_chat_response exactly once, and the stream API still sends `Finished`. A panicking
//! summarizer is a failing one: the compaction is skipped and the turn goes on. A store whose
//! lease panics as it is given back is logged: the turn keeps its outcome.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use agent_core::{
    AgentBuilder, BoxFuture, ErrorStage, MemoryStore, MessageUpdate, Model, ModelError, ModelEvent,
    ModelRequest, ModelStream, NewMessage, NowOrLater, ReleaseTurn, ScriptedModel, ScriptedStep,
    SessionStore, StoreError, StoredMessage, TurnErrorKind, TurnEvent, TurnLease, TurnResult,
    TurnStatus,
};
use futures_core::Stream;
use tests::{Recorded, Trace};

/// A model that panics when asked for a stream, or (with `in_poll`) once its stream is polled
/// after one text delta.
struct Panicky {
    in_poll: bool,
}

struct PanickyStream {
    sent: bool,
}

impl Stream for PanickyStream {
    type Item = Result<ModelEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.sent {
            panic!("decoder bug");
        }
        self.sent = true;
        Poll::Ready(Some(Ok(ModelEvent::TextDelta("par".into()))))
    }
}

impl Model for Panicky {
    fn id(&self) -> &str {
        "panicky"
    }

    fn stream(&self, _: ModelRequest) -> ModelStream {
        if !self.in_poll {
            panic!("no stream today");
        }
        Box::pin(PanickyStream { sent: false })
    }
}

/// A memory store whose inserts of rows of one role panic: awaited ones, or (`on_the_spot`)
/// the ones done on the spot (`insert_id_now`, which the engine asks first; it hands every
/// other row back, to be awaited).
struct PanickyStore(MemoryStore, bool, &'static str);

/// Echoes its text.
#[agent_core::tool]
fn echo(text: String) -> String {
    text
}

impl SessionStore for PanickyStore {
    fn load<'a>(&'a self, s: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        self.0.load(s)
    }

    fn insert<'a>(
        &'a self,
        s: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        if row.message.role() == self.2 && !self.1 {
            panic!("disk on fire");
        }
        self.0.insert(s, row)
    }

    fn insert_id_now(&self, _: &str, row: NewMessage) -> NowOrLater<i64, NewMessage> {
        if row.message.role() == self.2 && self.1 {
            panic!("disk on fire");
        }
        NowOrLater::Later(row)
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
        self.0.lock_turn(s, wait)
    }
}

/// Runs one turn with `run` and one with `stream` on agents from `build`, checks both end the
/// same way (status error at `stage`, an error containing `says`), with the trace `expected`
/// each time, and the stream ending with `Finished`.
async fn both_ways(
    build: impl Fn(&Trace) -> AgentBuilder,
    stage: ErrorStage,
    says: &str,
    expected: &[&str],
) -> TurnResult {
    let trace = Trace::new();
    let agent = build(&trace).record_turn(&trace).build().unwrap();
    let ran = agent.run("go").await;
    assert_eq!(ran.status, TurnStatus::Error, "{ran:?}");
    let error = ran.error.clone().expect("an error");
    assert!(error.message.contains(says), "{error:?}");
    assert_eq!(trace.take(), expected, "run");

    let agent = build(&trace).record_turn(&trace).build().unwrap();
    let mut stream = agent.conversation().stream("go");
    let mut last = None;
    while let Some(event) = tests::within("the stream", stream.next()).await {
        last = Some(event);
    }
    let Some(TurnEvent::Finished(streamed)) = last else {
        panic!("the stream did not end with Finished: {last:?}");
    };
    assert_eq!(streamed.status, TurnStatus::Error);
    assert_eq!(
        streamed.error.as_ref().map(|e| &e.message),
        Some(&error.message)
    );
    assert_eq!(trace.take(), expected, "stream");
    let stages: Vec<&str> = expected
        .iter()
        .filter_map(|line| line.strip_prefix("on_chat_error("))
        .collect();
    assert_eq!(stages, [format!("{})", stage.as_str())]);
    ran
}

const UP_TO_THE_MODEL: &[&str] = &[
    "before_run(go)",
    "before_turn",
    "before_step(0)",
    "on_llm_start(0)",
];

fn with_tail(tail: &[&'static str]) -> Vec<&'static str> {
    UP_TO_THE_MODEL.iter().chain(tail).copied().collect()
}

#[tokio::test]
async fn a_model_that_panics_creating_its_stream_ends_the_turn_at_stage_stream() {
    let result = both_ways(
        |_| AgentBuilder::new("p").model(Panicky { in_poll: false }),
        ErrorStage::Stream,
        "the model panicked: no stream today",
        &with_tail(&[
            "on_llm_end(0)",
            "classify_chat_error(stream)",
            "on_chat_error(stream)",
            "on_chat_response(error)",
        ]),
    )
    .await;
    assert_eq!(
        result.error.unwrap().kind,
        TurnErrorKind::Model(agent_core::ModelErrorKind::Other)
    );
}

#[tokio::test]
async fn a_model_stream_that_panics_while_polled_keeps_its_partial_text() {
    let result = both_ways(
        |_| AgentBuilder::new("p").model(Panicky { in_poll: true }),
        ErrorStage::Stream,
        "the model's stream panicked: decoder bug",
        &with_tail(&[
            "on_chunk(text:par)",
            "on_llm_end(0)",
            "classify_chat_error(stream)",
            "on_chat_error(stream)",
            "on_chat_response(error)",
        ]),
    )
    .await;
    assert_eq!(result.text, "par");
}

#[tokio::test]
async fn a_panicking_store_ends_the_turn_at_stage_persist() {
    for on_the_spot in [false, true] {
        both_ways(
            |_| {
                AgentBuilder::new("p")
                    .model(ScriptedModel::new([ScriptedStep::new().text("never")]))
                    .store(Arc::new(PanickyStore(
                        MemoryStore::new(),
                        on_the_spot,
                        "assistant",
                    )))
            },
            ErrorStage::Persist,
            "the store panicked in insert: disk on fire",
            &with_tail(&[
                "classify_chat_error(persist)",
                "on_chat_error(persist)",
                "on_chat_response(error)",
            ]),
        )
        .await;
    }
}

/// A tool result is stored on the spot (the store writes so, no message hook reads it): a
/// panic there is the store's error too, and the turn ends at stage persist.
#[tokio::test]
async fn a_store_panicking_on_a_tool_result_written_on_the_spot_ends_the_turn_at_persist() {
    let trace = Trace::new();
    let result = AgentBuilder::new("p")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("c1", "echo", r#"{"text":"hi"}"#),
            ScriptedStep::new().text("never"),
        ]))
        .tool(echo_tool::Echo)
        .store(Arc::new(PanickyStore(MemoryStore::new(), true, "tool")))
        .record_turn(&trace)
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(result.status, TurnStatus::Error);
    let error = result.error.expect("an error");
    assert!(
        error
            .message
            .contains("the store panicked in insert: disk on fire"),
        "{error:?}"
    );
    let ended: Vec<String> = trace
        .take()
        .into_iter()
        .filter(|line| line.starts_with("on_chat_error("))
        .collect();
    assert_eq!(ended, ["on_chat_error(persist)"]);
}

#[tokio::test]
async fn a_panicking_context_provider_fails_the_turn_naming_its_block() {
    both_ways(
        |_| {
            AgentBuilder::new("p")
                .model(ScriptedModel::new([ScriptedStep::new().text("never")]))
                .configure_session(|session| {
                    session.context("profile", |_| -> String { panic!("no profile") })
                })
        },
        ErrorStage::Turn,
        "context block `profile` failed: it panicked: no profile",
        &[
            "before_run(go)",
            "classify_chat_error(turn)",
            "on_chat_error(turn)",
            "on_chat_response(error)",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_panicking_configure_session_closure_fails_the_turn() {
    both_ways(
        |_| {
            AgentBuilder::new("p")
                .model(ScriptedModel::new([ScriptedStep::new().text("never")]))
                .configure_session(|_| panic!("bad config"))
        },
        ErrorStage::Turn,
        "configure_session panicked: bad config",
        &[
            "before_run(go)",
            "classify_chat_error(turn)",
            "on_chat_error(turn)",
            "on_chat_response(error)",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_panic_in_other_code_of_the_turn_still_ends_it_through_the_error_hooks() {
    // The token counter runs before each step when compaction is configured.
    let result = both_ways(
        |_| {
            AgentBuilder::new("p")
                .model(ScriptedModel::new([ScriptedStep::new().text("never")]))
                .configure_session(|session| {
                    session
                        .compact_after(10, |_| async { Ok("S".to_owned()) })
                        .token_counter(|_| panic!("cannot count"))
                })
        },
        ErrorStage::Turn,
        "the turn panicked: cannot count",
        &[
            "before_run(go)",
            "before_turn",
            "classify_chat_error(turn)",
            "on_chat_error(turn)",
            "on_chat_response(error)",
        ],
    )
    .await;
    assert_eq!(result.error.unwrap().kind, TurnErrorKind::Panicked);
}

#[tokio::test]
async fn a_panicking_summarizer_skips_the_compaction_and_the_turn_goes_on() {
    let model = ScriptedModel::new([
        ScriptedStep::new().text("one"),
        ScriptedStep::new().text("two"),
    ]);
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let agent = AgentBuilder::new("p")
        .model(model.clone())
        .configure_session(move |session| {
            let counted = counted.clone();
            session.keep_recent(1).compact_after(
                1,
                move |_| -> std::future::Ready<Result<String, String>> {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    panic!("summary failed")
                },
            )
        })
        .build()
        .unwrap();
    let conversation = agent.conversation();
    assert_eq!(conversation.run("first").await.text, "one");
    let second = conversation.run("second").await;
    assert_eq!(second.status, TurnStatus::Completed, "{second:?}");
    assert_eq!(second.text, "two");
    assert_eq!(model.requests()[1].messages.len(), 3);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A memory store whose leases panic as they are given back: on the spot, or (`in_future`)
/// in the future the release returns. The in-process lock goes first, so the session is free.
struct LeaseStore {
    inner: MemoryStore,
    in_future: bool,
}

struct PanickyLease {
    lock: TurnLease,
    in_future: bool,
}

impl ReleaseTurn for PanickyLease {
    fn release(self: Box<Self>) -> BoxFuture<'static, ()> {
        let PanickyLease { lock, in_future } = *self;
        drop(lock);
        if !in_future {
            panic!("lease stuck");
        }
        Box::pin(async { panic!("lease stuck later") })
    }
}

impl SessionStore for LeaseStore {
    fn load<'a>(&'a self, s: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        self.inner.load(s)
    }

    fn insert<'a>(
        &'a self,
        s: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        self.inner.insert(s, row)
    }

    fn update<'a>(
        &'a self,
        s: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.update(s, id, update)
    }

    fn delete<'a>(&'a self, s: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.delete(s, id)
    }

    fn lock_turn<'a>(
        &'a self,
        s: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        let in_future = self.in_future;
        Box::pin(async move {
            let lock = self.inner.lock_turn(s, wait).await?;
            Ok(lock.map(|lock| TurnLease::new(PanickyLease { lock, in_future })))
        })
    }
}

#[tokio::test]
async fn a_store_panicking_as_it_gives_a_turn_back_leaves_the_turn_its_outcome() {
    for in_future in [false, true] {
        let trace = Trace::new();
        let store = LeaseStore {
            inner: MemoryStore::new(),
            in_future,
        };
        let agent = AgentBuilder::new("p")
            .model(ScriptedModel::new([
                ScriptedStep::new().text("one"),
                ScriptedStep::new().text("two"),
            ]))
            .store(Arc::new(store))
            .record_turn(&trace)
            .build()
            .unwrap();
        let conversation = agent.session("s");
        let first = conversation.run("go").await;
        assert_eq!(first.status, TurnStatus::Completed, "{first:?}");
        assert_eq!(
            trace.take(),
            with_tail(&[
                "on_chunk(text:one)",
                "on_llm_end(0)",
                "on_step_finish(0)",
                "after_run(completed)",
                "on_chat_response(completed)",
            ])
        );
        let second = conversation.run("again").await;
        assert_eq!(second.text, "two", "{second:?}");
        assert_eq!(conversation.history().await.unwrap().len(), 4);
    }
}
