//! A value of the user's whose `Drop` panics, dropped by the engine, is caught where it is
//! dropped, never left to unwind through the turn: a tool's output fails that call (the model
//! reads that the tool panicked; after_tool_call, which ran before the drop, saw the output)
//! and the turn goes on; a tool's future stopped by its timeout
//! keeps the timeout's result, saying the drop panicked too; a model's stream, read to its end,
//! ends the step as that model's error, its text kept. In each case the session's next turn
//! runs as usual.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use agent_core::{
    AgentBuilder, ErrorStage, FinishReason, FnTool, Model, ModelError, ModelErrorKind, ModelEvent,
    ModelRequest, ModelStream, ScriptedModel, ScriptedStep, ToolError, ToolOutcomeKind,
    TurnErrorKind, TurnResult, TurnStatus,
};
use futures_core::Stream;
use tests::{Recorded, Trace, lines};

/// An output whose `Drop` panics.
#[derive(serde::Serialize)]
struct Brittle(&'static str);

impl Drop for Brittle {
    fn drop(&mut self) {
        panic!("output drop");
    }
}

/// Gives a brittle output, on the spot.
#[agent_core::tool]
fn brittle() -> Brittle {
    Brittle("now")
}

/// Gives a brittle output, later.
#[agent_core::tool]
async fn brittle_later() -> Brittle {
    tokio::task::yield_now().await;
    Brittle("later")
}

/// A tool's future that never finishes and panics when dropped.
struct Endless;

impl Future for Endless {
    type Output = Result<serde_json::Value, ToolError>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Pending
    }
}

impl Drop for Endless {
    fn drop(&mut self) {
        panic!("future drop");
    }
}

/// `endless`: a tool whose call is an [`Endless`] future.
fn endless() -> FnTool {
    let schema = serde_json::json!({"type": "object"});
    FnTool::new("endless", "Never ends.", schema, |_, _| Endless)
}

/// Each tool result of a turn: what the model read and whether it was an error.
fn results(result: &TurnResult) -> Vec<(String, bool)> {
    let records = result.steps.iter().flat_map(|step| &step.tool_results);
    records
        .map(|record| (record.content.to_string(), record.is_error))
        .collect()
}

/// Runs "again" on the conversation: it completes with "Again.".
async fn next_turn_works(conversation: &agent_core::Conversation) {
    let again = conversation.run("again").await;
    assert_eq!(
        (again.status, again.text.as_str()),
        (TurnStatus::Completed, "Again."),
        "{:?}",
        again.error
    );
}

#[tokio::test]
async fn a_tool_output_whose_drop_panics_fails_that_call_and_the_turn_goes_on() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "brittle", "{}")
            .tool_call("c2", "brittle_later", "{}"),
        ScriptedStep::new().text("Done."),
        ScriptedStep::new().text("Again."),
    ]);
    let trace = Trace::new();
    let agent = AgentBuilder::new("a")
        .model(model)
        .tool(brittle_tool::Brittle)
        .tool(brittle_later_tool::BrittleLater)
        .record_all(&trace)
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(result.text, "Done.");
    let panicked = |tool: &str| (format!("tool `{tool}` panicked: output drop"), true);
    assert_eq!(
        results(&result),
        [panicked("brittle"), panicked("brittle_later")]
    );
    let outcomes: Vec<ToolOutcomeKind> = result.steps[0]
        .tool_results
        .iter()
        .map(|record| record.outcome)
        .collect();
    assert_eq!(outcomes, [ToolOutcomeKind::Failed, ToolOutcomeKind::Failed]);
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(go)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c1 brittle)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 brittle)",
            "on_chunk(tool_start:c2 brittle_later)",
            "on_chunk(tool_input:c2)",
            "on_chunk(tool_call:c2 brittle_later)",
            "on_llm_end(0)",
            "before_tool_call(brittle c1)",
            "after_tool_call(brittle c1 executed)",
            "before_tool_call(brittle_later c2)",
            "after_tool_call(brittle_later c2 executed)",
            "on_chunk(tool_result:c1 brittle error)",
            "on_chunk(tool_result:c2 brittle_later error)",
            "on_step_finish(0)",
            "before_step(1)",
            "on_llm_start(1)",
            "on_chunk(text:Done.)",
            "on_llm_end(1)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    next_turn_works(&conversation).await;
}

#[tokio::test(start_paused = true)]
async fn a_tool_future_whose_drop_panics_as_its_timeout_stops_it_keeps_the_timeout() {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "endless", "{}"),
        ScriptedStep::new().text("Done."),
        ScriptedStep::new().text("Again."),
    ]);
    let endless = endless().with_timeout(Duration::from_millis(50));
    let trace = Trace::new();
    let agent = AgentBuilder::new("a")
        .model(model)
        .dyn_tool(endless)
        .record_all(&trace)
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    let stopped = "tool `endless` timed out after 50ms and was stopped; dropping its future \
                   panicked: future drop";
    assert_eq!(results(&result), [(stopped.to_owned(), true)]);
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(go)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c1 endless)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 endless)",
            "on_llm_end(0)",
            "before_tool_call(endless c1)",
            "after_tool_call(endless c1 failed)",
            "on_chunk(tool_result:c1 endless error)",
            "on_step_finish(0)",
            "before_step(1)",
            "on_llm_start(1)",
            "on_chunk(text:Done.)",
            "on_llm_end(1)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    next_turn_works(&conversation).await;
}

/// A model whose first stream sends "Hi" and ends, cleanly or (`breaks`) with an error, then
/// panics as it is dropped; its later calls answer "Again.".
struct BrittleStreams {
    dropped_once: Arc<AtomicBool>,
    breaks: bool,
}

struct BrittleStream {
    sent: u8,
    brittle: bool,
    breaks: bool,
}

impl Stream for BrittleStream {
    type Item = Result<ModelEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.sent += 1;
        let text = if self.brittle { "Hi" } else { "Again." };
        Poll::Ready(match self.sent {
            1 => Some(Ok(ModelEvent::TextDelta(text.into()))),
            2 if self.brittle && self.breaks => Some(Err(ModelError::new(
                ModelErrorKind::Disconnected,
                "connection reset",
            ))),
            2 => Some(Ok(ModelEvent::Finish(FinishReason::Stop))),
            _ => None,
        })
    }
}

impl Drop for BrittleStream {
    fn drop(&mut self) {
        if self.brittle {
            panic!("stream drop");
        }
    }
}

impl Model for BrittleStreams {
    fn id(&self) -> &str {
        "brittle"
    }

    fn stream(&self, _: ModelRequest) -> ModelStream {
        let brittle = !self.dropped_once.swap(true, Ordering::SeqCst);
        let breaks = self.breaks;
        Box::pin(BrittleStream {
            sent: 0,
            brittle,
            breaks,
        })
    }
}

#[tokio::test]
async fn a_model_stream_whose_drop_panics_ends_the_turn_as_a_stream_error_keeping_its_text() {
    let model = BrittleStreams {
        dropped_once: Arc::default(),
        breaks: false,
    };
    let trace = Trace::new();
    let agent = AgentBuilder::new("a")
        .model(model)
        .record_turn(&trace)
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("go").await;
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(result.text, "Hi");
    let error = result.error.expect("an error");
    assert_eq!(
        (error.kind, error.message.as_str()),
        (
            TurnErrorKind::Model(ModelErrorKind::Other),
            "the model's stream panicked as it was dropped: stream drop"
        )
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(go)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:Hi)",
            "on_llm_end(0)",
            &format!("classify_chat_error({})", ErrorStage::Stream.as_str()),
            "on_chat_error(stream)",
            "on_chat_response(error)",
        ])
    );
    next_turn_works(&conversation).await;
}

/// A tool's future that panics as the turn's cancel stops it: the turn ends aborted, as any
/// cancelled turn does (the cancel wins over the failure it caused), the panic logged (it was
/// lost), and the session's next turn runs.
#[test]
fn a_tool_future_whose_drop_panics_as_a_cancel_stops_it_leaves_the_turn_aborted() {
    let spans = crate::tracing_spans::Spans::default();
    let _guard = crate::tracing_spans::record_on_this_thread(&spans);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let model = ScriptedModel::new([
            ScriptedStep::new()
                .text("Working.")
                .tool_call("c1", "endless", "{}"),
            ScriptedStep::new().text("Again."),
        ]);
        let agent = AgentBuilder::new("a")
            .model(model)
            .dyn_tool(endless())
            .build()
            .unwrap();
        let conversation = agent.conversation();
        let cancel = agent_core::CancelToken::new();
        let later = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            later.cancel();
        });
        let result = conversation
            .run(agent_core::TurnRequest::new("go").cancel(cancel))
            .await;
        assert_eq!(
            (result.status, result.error, result.text.as_str()),
            (TurnStatus::Aborted, None, "Working.")
        );
        let messages = spans.messages();
        let panics: Vec<&String> = messages.iter().filter(|m| m.contains("panic")).collect();
        assert_eq!(
            panics,
            ["the turn panicked: future drop (the turn was cancelled, and ends aborted)"]
        );
        next_turn_works(&conversation).await;
    });
}

/// A model's stream that broke, then panics as it is dropped: the turn ends with the stream's
/// own error (the panic logged), not the panic's.
#[tokio::test]
async fn a_broken_model_stream_whose_drop_panics_keeps_its_own_error() {
    let model = BrittleStreams {
        dropped_once: Arc::default(),
        breaks: true,
    };
    let agent = AgentBuilder::new("a").model(model).build().unwrap();
    let conversation = agent.conversation();
    let result = conversation.run("go").await;
    assert_eq!(
        (result.status, result.text.as_str()),
        (TurnStatus::Error, "Hi")
    );
    let error = result.error.expect("an error");
    assert_eq!(
        (error.kind, error.message.as_str()),
        (
            TurnErrorKind::Model(ModelErrorKind::Disconnected),
            "connection reset"
        )
    );
    next_turn_works(&conversation).await;
}
