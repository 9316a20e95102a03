//! How turns end: step limits and on_stop, aborts, and the exactly-once response hooks.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    AgentBuilder, CancelToken, ChatErrorContext, ChatResponse, ErrorStage, Hook, Matcher, Message,
    MessageStatus, ScriptedModel, ScriptedStep, StopDecision, StopReason, TurnErrorKind,
    TurnRequest, TurnStatus, event,
};
use tests::{Add, Nap, Recorded, Seen, Trace, lines, within};
use tokio::sync::Notify;

/// A model that asks for `add` on every step.
fn always_adding(steps: usize) -> ScriptedModel {
    ScriptedModel::new((0..steps).map(|step| {
        ScriptedStep::new().text(format!("step {step}")).tool_call(
            format!("c{step}"),
            "add",
            r#"{"a":1,"b":1}"#,
        )
    }))
}

/// The trace of two tool steps that reach `max_steps = 2`, up to on_stop.
const TWO_STEPS_TO_THE_LIMIT: &[&str] = &[
    "before_run(loop)",
    "before_turn",
    "before_step(0)",
    "on_llm_start(0)",
    "on_chunk(text:step 0)",
    "on_chunk(tool_start:c0 add)",
    "on_chunk(tool_input:c0)",
    "on_chunk(tool_call:c0 add)",
    "on_llm_end(0)",
    "before_tool_call(add c0)",
    "add(1,1)",
    "after_tool_call(add c0 executed)",
    "on_chunk(tool_result:c0 add ok)",
    "on_step_finish(0)",
    "before_step(1)",
    "on_llm_start(1)",
    "on_chunk(text:step 1)",
    "on_chunk(tool_start:c1 add)",
    "on_chunk(tool_input:c1)",
    "on_chunk(tool_call:c1 add)",
    "on_llm_end(1)",
    "before_tool_call(add c1)",
    "add(1,1)",
    "after_tool_call(add c1 executed)",
    "on_chunk(tool_result:c1 add ok)",
    "on_step_finish(1)",
    "on_stop(max_steps)",
];

// ---- Limits ----

#[tokio::test]
async fn reaching_max_steps_completes_the_turn_with_stop_reason_max_steps() {
    let trace = Trace::new();
    let model = always_adding(3);
    let agent = AgentBuilder::new("looping")
        .model(model.clone())
        .max_steps(2)
        .tool(Add::traced(&trace))
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("loop").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::MaxSteps));
    assert_eq!(result.text, "step 1");
    let mut expected = lines(TWO_STEPS_TO_THE_LIMIT);
    expected.extend(lines(&[
        "after_run(completed)",
        "on_chat_response(completed)",
    ]));
    assert_eq!(trace.take(), expected);
    assert_eq!(model.requests().len(), 2);
    assert_eq!(model.remaining(), 1, "the third step was never asked for");
}

#[tokio::test]
async fn on_stop_may_supply_the_final_output() {
    let trace = Trace::new();
    let responses = Seen::<ChatResponse>::new();
    let agent = AgentBuilder::new("looping")
        .model(always_adding(3))
        .max_steps(2)
        .tool(Add::traced(&trace))
        .record_all(&trace)
        .hook(Hook::<event::OnStop>::sync("summarize", |ctx| {
            StopDecision::Output(format!("gave up after {} steps", ctx.steps))
        }))
        .hook(responses.hook::<event::OnChatResponse>("responses"))
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let result = conversation.run("loop").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::MaxSteps));
    assert_eq!(result.text, "gave up after 2 steps");
    let mut expected = lines(TWO_STEPS_TO_THE_LIMIT);
    expected.extend(lines(&[
        "after_run(completed)",
        "on_chat_response(completed)",
    ]));
    assert_eq!(trace.take(), expected);
    let responses = responses.take();
    assert_eq!(responses.len(), 1);
    assert_eq!(
        responses[0].message,
        Message::assistant("gave up after 2 steps")
    );
    let history = conversation.history().await.unwrap();
    assert_eq!(
        history.last(),
        Some(&Message::assistant("gave up after 2 steps"))
    );
}

#[tokio::test]
async fn on_stop_may_fail_the_turn() {
    let trace = Trace::new();
    let errors = Seen::<ChatErrorContext>::new();
    let agent = AgentBuilder::new("looping")
        .model(always_adding(3))
        .max_steps(2)
        .tool(Add::traced(&trace))
        .record_all(&trace)
        .hook(Hook::<event::OnStop>::sync("strict", |_| {
            StopDecision::Fail("the step budget ran out".to_owned())
        }))
        .hook(errors.hook::<event::OnChatError>("errors"))
        .build()
        .unwrap();

    let result = agent.run("loop").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert_eq!(result.stop_reason, None);
    let error = result.error.expect("an error");
    assert_eq!(error.kind, TurnErrorKind::Stopped);
    assert_eq!(error.message, "the step budget ran out");
    let mut expected = lines(TWO_STEPS_TO_THE_LIMIT);
    expected.extend(lines(&[
        "classify_chat_error(turn)",
        "on_chat_error(turn)",
        "on_chat_response(error)",
    ]));
    assert_eq!(trace.take(), expected);
    assert_eq!(errors.take()[0].stage, ErrorStage::Turn);
}

#[tokio::test]
async fn on_stop_does_not_fire_when_the_model_finishes_on_its_own() {
    let trace = Trace::new();
    let agent = AgentBuilder::new("short")
        .model(ScriptedModel::new([ScriptedStep::new().text("hi")]))
        .max_steps(1)
        .record_turn(&trace)
        .build()
        .unwrap();
    let result = agent.run("hello").await;
    assert_eq!(result.stop_reason, Some(StopReason::Finished));
    assert!(!trace.take().iter().any(|e| e.starts_with("on_stop")));
}

// ---- Abort ----

/// Records everything and keeps the response and error contexts.
struct Watched {
    trace: Trace,
    errors: Seen<ChatErrorContext>,
    responses: Seen<ChatResponse>,
}

impl Watched {
    fn new() -> Self {
        Watched {
            trace: Trace::new(),
            errors: Seen::new(),
            responses: Seen::new(),
        }
    }

    fn builder(&self, model: &ScriptedModel) -> AgentBuilder {
        AgentBuilder::new("watched")
            .model(model.clone())
            .tool(Nap::traced(&self.trace))
            .record_all(&self.trace)
            .hook(self.errors.hook::<event::OnChatError>("errors"))
            .hook(self.responses.hook::<event::OnChatResponse>("responses"))
    }

    /// One on_chat_response with status Aborted, no on_chat_error.
    fn assert_aborted_once(&self) {
        assert!(self.errors.take().is_empty(), "on_chat_error fired");
        let responses = self.responses.take();
        assert_eq!(responses.len(), 1, "{responses:?}");
        assert_eq!(responses[0].status, TurnStatus::Aborted);
        assert_eq!(responses[0].error, None);
    }
}

#[tokio::test]
async fn cancelling_while_the_model_streams_aborts_and_keeps_the_partial_text() {
    let watched = Watched::new();
    let model = ScriptedModel::new([ScriptedStep::new()
        .text("Hel")
        .sleep(Duration::from_secs(60))
        .text("lo")]);
    let started = Arc::new(Notify::new());
    let s = started.clone();
    let conversation = watched
        .builder(&model)
        .hook(Hook::<event::OnChunk>::sync("started", move |_| {
            s.notify_one()
        }))
        .build()
        .unwrap()
        .conversation();
    let token = CancelToken::new();

    let (result, ()) = within("an aborted turn", async {
        tokio::join!(
            conversation.run(TurnRequest::new("hello").cancel(token.clone())),
            async {
                started.notified().await;
                token.cancel();
            }
        )
    })
    .await;

    assert_eq!(result.status, TurnStatus::Aborted, "{result:?}");
    assert_eq!(result.text, "Hel");
    assert_eq!(result.error, None);
    assert_eq!(result.stop_reason, None);
    assert_eq!(
        watched.trace.take(),
        lines(&[
            "before_run(hello)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:Hel)",
            "on_llm_end(0)",
            "on_chat_response(aborted)",
        ])
    );
    watched.assert_aborted_once();
    // The partial answer is stored, marked failed, and left out of the model's history.
    let rows: Vec<(Message, MessageStatus)> = conversation
        .rows()
        .await
        .unwrap()
        .into_iter()
        .map(|row| (row.message, row.status))
        .collect();
    assert_eq!(
        rows,
        [
            (Message::user("hello"), MessageStatus::Completed),
            (Message::assistant("Hel"), MessageStatus::Failed),
        ]
    );
    assert_eq!(
        conversation.history().await.unwrap(),
        [Message::user("hello")]
    );
}

#[tokio::test]
async fn cancelling_while_a_tool_runs_aborts_the_turn() {
    let watched = Watched::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Napping.")
            .tool_call("c1", "nap", r#"{"ms":60000}"#),
        ScriptedStep::new().text("never asked"),
    ]);
    let started = Arc::new(Notify::new());
    let s = started.clone();
    let conversation = watched
        .builder(&model)
        .before_tool_call(
            Matcher::tool("nap"),
            Hook::<event::BeforeToolCall<serde_json::Value>>::sync("started", move |_| {
                s.notify_one()
            }),
        )
        .build()
        .unwrap()
        .conversation();
    let token = CancelToken::new();

    let (result, ()) = within("an aborted turn", async {
        tokio::join!(
            conversation.run(TurnRequest::new("rest").cancel(token.clone())),
            async {
                started.notified().await;
                token.cancel();
            }
        )
    })
    .await;

    assert_eq!(result.status, TurnStatus::Aborted, "{result:?}");
    assert_eq!(result.text, "Napping.");
    assert_eq!(
        watched.trace.take(),
        lines(&[
            "before_run(rest)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:Napping.)",
            "on_chunk(tool_start:c1 nap)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 nap)",
            "on_llm_end(0)",
            "before_tool_call(nap c1)",
            "nap(60000)",
            "on_chat_response(aborted)",
        ])
    );
    watched.assert_aborted_once();
    assert_eq!(model.requests().len(), 1);

    // The stored assistant message keeps its tool call, answered by an error result, so the
    // history stays valid for the next turn.
    let history = conversation.history().await.unwrap();
    let summary: Vec<(&str, &str)> = history.iter().map(|m| (m.role(), m.text())).collect();
    assert_eq!(
        summary,
        [
            ("user", "rest"),
            ("assistant", "Napping."),
            ("tool", "tool `nap` did not finish: the turn was aborted"),
        ]
    );
    assert!(matches!(
        &history[2],
        Message::Tool { call_id, is_error: true, .. } if call_id == "c1"
    ));
}

#[tokio::test]
async fn a_turn_cancelled_before_it_starts_aborts_before_taking_its_session() {
    let watched = Watched::new();
    let model = ScriptedModel::new([ScriptedStep::new().text("never streamed")]);
    let agent = watched.builder(&model).build().unwrap();
    let token = CancelToken::new();
    token.cancel();

    let result = agent.run(TurnRequest::new("hi").cancel(token)).await;

    assert_eq!(result.status, TurnStatus::Aborted, "{result:?}");
    assert_eq!(result.text, "");
    assert_eq!(watched.trace.take(), lines(&["on_chat_response(aborted)"]));
    assert!(model.requests().is_empty(), "no model call is made");
    watched.assert_aborted_once();
}

// ---- Exactly one response per turn ----

#[tokio::test]
async fn on_chat_response_fires_once_per_turn_whatever_the_ending() {
    let watched = Watched::new();
    let model = ScriptedModel::new([
        // Turn 1 completes.
        ScriptedStep::new().text("fine"),
        // Turn 2 errors mid-stream.
        ScriptedStep::new().text("bro").fail("reset"),
        // Turn 3 is aborted mid-stream.
        ScriptedStep::new()
            .text("wai")
            .sleep(Duration::from_secs(60)),
    ]);
    let started = Arc::new(Notify::new());
    let s = started.clone();
    let conversation = watched
        .builder(&model)
        .hook(Hook::<event::OnChunk>::sync("started", move |ctx| {
            if matches!(&ctx.chunk, agent_core::Chunk::TextDelta(t) if t == "wai") {
                s.notify_one();
            }
        }))
        .build()
        .unwrap()
        .conversation();

    let completed = conversation.run("one").await;
    let errored = conversation.run("two").await;
    let token = CancelToken::new();
    let (aborted, ()) = within("an aborted turn", async {
        tokio::join!(
            conversation.run(TurnRequest::new("three").cancel(token.clone())),
            async {
                started.notified().await;
                token.cancel();
            }
        )
    })
    .await;

    let statuses = [completed.status, errored.status, aborted.status];
    assert_eq!(
        statuses,
        [
            TurnStatus::Completed,
            TurnStatus::Error,
            TurnStatus::Aborted
        ]
    );
    let responses: Vec<(TurnStatus, String)> = watched
        .responses
        .take()
        .into_iter()
        .map(|r| (r.status, r.message.text().to_owned()))
        .collect();
    assert_eq!(
        responses,
        [
            (TurnStatus::Completed, "fine".to_owned()),
            (TurnStatus::Error, "bro".to_owned()),
            (TurnStatus::Aborted, "wai".to_owned()),
        ]
    );
    let request_ids = [
        completed.request_id.clone(),
        errored.request_id.clone(),
        aborted.request_id.clone(),
    ];
    assert!(request_ids[0] != request_ids[1] && request_ids[1] != request_ids[2]);
    // Only the error turn reached on_chat_error, once, at the stream stage.
    let errors = watched.errors.take();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].stage, ErrorStage::Stream);
    assert!(errors[0].messages_persisted);
    assert_eq!(errors[0].request_id, errored.request_id);
    let ends: Vec<String> = watched
        .trace
        .take()
        .into_iter()
        .filter(|e| {
            e.starts_with("on_chat") || e.starts_with("after_run") || e.starts_with("before_run")
        })
        .collect();
    assert_eq!(
        ends,
        lines(&[
            "before_run(one)",
            "after_run(completed)",
            "on_chat_response(completed)",
            "before_run(two)",
            "on_chat_error(stream)",
            "on_chat_response(error)",
            "before_run(three)",
            "on_chat_response(aborted)",
        ])
    );
}
