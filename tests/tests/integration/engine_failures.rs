//! The failure policy (docs/design.md §4): failing, panicking and timing-out hooks of each class
//! (gates, observers, turn-level hooks), `on_error` overrides, and panicking tools.

use std::sync::OnceLock;

use agent_core::{
    AgentBuilder, ChatErrorContext, ChatResponse, ErrorStage, FailurePolicy, FnTool, Hook, Matcher,
    Message, ScriptedModel, ScriptedStep, Tool, ToolContext, ToolError, TurnErrorKind, TurnStatus,
    TurnWideEvent, event, schema_for,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tests::{Add, Failure, Recorded, Seen, Trace, failing, lines, own_args};

/// One step calling `add`, then an answer.
fn add_then_answer() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("five"),
    ])
}

/// The trace of [`add_then_answer`] when nothing fails.
const NORMAL_TURN: &[&str] = &[
    "before_run(2+3?)",
    "before_turn",
    "before_step(0)",
    "on_llm_start(0)",
    "on_chunk(tool_start:c1 add)",
    "on_chunk(tool_input:c1)",
    "on_chunk(tool_call:c1 add)",
    "on_llm_end(0)",
    "before_tool_call(add c1)",
    "add(2,3)",
    "after_tool_call(add c1 executed)",
    "on_chunk(tool_result:c1 add ok)",
    "on_step_finish(0)",
    "before_step(1)",
    "on_llm_start(1)",
    "on_chunk(text:five)",
    "on_llm_end(1)",
    "on_step_finish(1)",
    "after_run(completed)",
    "on_chat_response(completed)",
];

/// What the model read as the result of `c1`: (content, is_error).
fn result_of_c1(model: &ScriptedModel) -> (String, bool) {
    model
        .requests()
        .get(1)
        .and_then(|request| {
            request.messages.iter().find_map(|m| match m {
                Message::Tool {
                    call_id,
                    content,
                    is_error,
                    ..
                } if call_id == "c1" => Some((content.to_string(), *is_error)),
                _ => None,
            })
        })
        .expect("a second request with the result of c1")
}

// ---- Gates: before_tool_call fails closed ----

async fn gate_fails_closed(failure: Failure) {
    let trace = Trace::new();
    let model = add_then_answer();
    let agent = AgentBuilder::new("gated")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            failing::<event::BeforeToolCall<tests::AddArgs>>("gate", failure).priority(-1),
        )
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("2+3?").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    // The gate stopped the chain: neither the recorder's before hook nor the tool ran, and the
    // after hook saw a failed outcome.
    let mut expected = lines(NORMAL_TURN);
    expected.retain(|e| e != "before_tool_call(add c1)" && e != "add(2,3)");
    for entry in &mut expected {
        *entry = entry
            .replace("add c1 executed", "add c1 failed")
            .replace("c1 add ok", "c1 add error");
    }
    assert_eq!(trace.take(), expected);
    assert_eq!(
        result_of_c1(&model),
        (
            format!(
                "tool `add` did not run: before_tool_call hook `gate` {}",
                failure.reported()
            ),
            true
        )
    );
    assert_eq!(
        result.steps[0].tool_results[0].outcome,
        agent_core::ToolOutcomeKind::Failed
    );
}

#[tokio::test]
async fn a_gate_returning_an_error_fails_the_call_closed() {
    gate_fails_closed(Failure::Error).await;
}

#[tokio::test]
async fn a_panicking_gate_fails_the_call_closed() {
    gate_fails_closed(Failure::Panic).await;
}

#[tokio::test]
async fn a_timing_out_gate_fails_the_call_closed() {
    gate_fails_closed(Failure::Timeout).await;
}

#[tokio::test]
async fn after_tool_call_sees_a_failed_gate_as_unsuccessful() {
    let trace = Trace::new();
    let t = trace.clone();
    let agent = AgentBuilder::new("gated")
        .model(add_then_answer())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            failing::<event::BeforeToolCall<tests::AddArgs>>("gate", Failure::Error),
        )
        .after_tool_call(
            Matcher::tool("add"),
            Hook::<event::AfterToolCall<tests::AddArgs, i64>>::sync("audit", move |ctx| {
                t.push(format!(
                    "audit(success={} error={})",
                    ctx.success(),
                    ctx.error().map(ToolError::message).unwrap_or_default()
                ));
            }),
        )
        .build()
        .unwrap();
    let result = agent.run("2+3?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "audit(success=false error=tool `add` did not run: before_tool_call hook `gate` returned an error: it broke)"
        ])
    );
}

#[tokio::test]
async fn a_fail_open_gate_lets_the_tool_run() {
    let trace = Trace::new();
    let model = add_then_answer();
    let agent = AgentBuilder::new("gated")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            failing::<event::BeforeToolCall<tests::AddArgs>>("gate", Failure::Panic)
                .priority(-1)
                .on_error(FailurePolicy::FailOpen),
        )
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("2+3?").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(trace.take(), lines(NORMAL_TURN));
    assert_eq!(result_of_c1(&model), ("5".to_owned(), false));
}

// ---- Observers fail open ----

/// Registers a failing observer of event `E` before the recorder and checks the turn is
/// unaffected.
async fn observer_fails_open<E>(failure: Failure)
where
    E: TurnWideEvent,
    (): agent_core::HookReturn<E>,
{
    let trace = Trace::new();
    let model = add_then_answer();
    let agent = AgentBuilder::new("observed")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .hook(failing::<E>("observer", failure).priority(-1))
        .record_all(&trace)
        .build()
        .unwrap();
    let result = agent.run("2+3?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "five");
    assert_eq!(trace.take(), lines(NORMAL_TURN));
    assert_eq!(result_of_c1(&model), ("5".to_owned(), false));
}

/// The same for a failing after_tool_call hook.
async fn after_tool_call_fails_open(failure: Failure) {
    let trace = Trace::new();
    let model = add_then_answer();
    let agent = AgentBuilder::new("observed")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .after_tool_call(
            Matcher::all(),
            failing::<event::AfterToolCall<serde_json::Value>>("observer", failure).priority(-1),
        )
        .record_all(&trace)
        .build()
        .unwrap();
    let result = agent.run("2+3?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(trace.take(), lines(NORMAL_TURN));
    assert_eq!(result_of_c1(&model), ("5".to_owned(), false));
}

#[tokio::test]
async fn an_on_chunk_hook_returning_an_error_is_logged_and_the_turn_goes_on() {
    observer_fails_open::<event::OnChunk>(Failure::Error).await;
}

#[tokio::test]
async fn a_panicking_on_chunk_hook_is_logged_and_the_turn_goes_on() {
    observer_fails_open::<event::OnChunk>(Failure::Panic).await;
}

#[tokio::test]
async fn a_timing_out_on_chunk_hook_is_logged_and_the_turn_goes_on() {
    observer_fails_open::<event::OnChunk>(Failure::Timeout).await;
}

#[tokio::test]
async fn an_after_tool_call_hook_returning_an_error_is_logged_and_the_turn_goes_on() {
    after_tool_call_fails_open(Failure::Error).await;
}

#[tokio::test]
async fn a_panicking_after_tool_call_hook_is_logged_and_the_turn_goes_on() {
    after_tool_call_fails_open(Failure::Panic).await;
}

#[tokio::test]
async fn a_timing_out_after_tool_call_hook_is_logged_and_the_turn_goes_on() {
    after_tool_call_fails_open(Failure::Timeout).await;
}

#[tokio::test]
async fn an_on_step_finish_hook_returning_an_error_is_logged_and_the_turn_goes_on() {
    observer_fails_open::<event::OnStepFinish>(Failure::Error).await;
}

#[tokio::test]
async fn a_panicking_on_step_finish_hook_is_logged_and_the_turn_goes_on() {
    observer_fails_open::<event::OnStepFinish>(Failure::Panic).await;
}

#[tokio::test]
async fn a_timing_out_on_step_finish_hook_is_logged_and_the_turn_goes_on() {
    observer_fails_open::<event::OnStepFinish>(Failure::Timeout).await;
}

#[tokio::test]
async fn failing_llm_and_response_observers_are_logged_and_the_turn_goes_on() {
    observer_fails_open::<event::OnLlmStart>(Failure::Error).await;
    observer_fails_open::<event::OnLlmEnd>(Failure::Panic).await;
    observer_fails_open::<event::OnChatResponse>(Failure::Error).await;
}

// ---- Fail-closed observers fail the turn ----

/// An agent whose hooks record into `trace`, with `on_chat_error` and `on_chat_response`
/// contexts kept.
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
            .tool(Add::traced(&self.trace))
            .record_all(&self.trace)
            .hook(self.errors.hook::<event::OnChatError>("errors"))
            .hook(self.responses.hook::<event::OnChatResponse>("responses"))
    }

    /// Checks the one on_chat_error and the one on_chat_response of a failed turn.
    fn assert_failed(&self, stage: ErrorStage, persisted: bool, message: &str) {
        let errors = self.errors.take();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].stage, stage);
        assert_eq!(errors[0].messages_persisted, persisted);
        assert_eq!(errors[0].error.message, message);
        let responses = self.responses.take();
        assert_eq!(responses.len(), 1, "{responses:?}");
        assert_eq!(responses[0].status, TurnStatus::Error);
        assert_eq!(
            responses[0].error.as_ref().map(|e| e.message.as_str()),
            Some(message)
        );
    }
}

#[tokio::test]
async fn a_fail_closed_on_chunk_hook_fails_the_turn() {
    let watched = Watched::new();
    let model = ScriptedModel::new([ScriptedStep::new().text("one").text("two")]);
    let agent = watched
        .builder(&model)
        .hook(
            Hook::<event::OnChunk>::sync("strict", |ctx| match &ctx.chunk {
                agent_core::Chunk::TextDelta(text) if text == "two" => Err("no twos"),
                _ => Ok(()),
            })
            .on_error(FailurePolicy::FailClosed),
        )
        .build()
        .unwrap();

    let result = agent.run("count").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert_eq!(result.text, "onetwo");
    assert_eq!(
        watched.trace.take(),
        lines(&[
            "before_run(count)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:one)",
            "on_chunk(text:two)",
            "on_llm_end(0)",
            "classify_chat_error(turn)",
            "on_chat_error(turn)",
            "on_chat_response(error)",
        ])
    );
    watched.assert_failed(
        ErrorStage::Turn,
        true,
        "on_chunk hook `strict` returned an error: no twos",
    );
}

#[tokio::test]
async fn a_fail_closed_after_tool_call_hook_fails_the_turn_after_its_step() {
    let watched = Watched::new();
    let model = add_then_answer();
    let agent = watched
        .builder(&model)
        .after_tool_call(
            Matcher::tool("add"),
            failing::<event::AfterToolCall<serde_json::Value>>("strict", Failure::Panic)
                .on_error(FailurePolicy::FailClosed),
        )
        .build()
        .unwrap();

    let result = agent.run("2+3?").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert_eq!(
        watched.trace.take(),
        lines(&[
            "before_run(2+3?)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c1 add)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 add)",
            "on_llm_end(0)",
            "before_tool_call(add c1)",
            "add(2,3)",
            "after_tool_call(add c1 executed)",
            "on_chunk(tool_result:c1 add ok)",
            "on_step_finish(0)",
            "classify_chat_error(turn)",
            "on_chat_error(turn)",
            "on_chat_response(error)",
        ])
    );
    watched.assert_failed(
        ErrorStage::Turn,
        true,
        "after_tool_call hook `strict` panicked: it exploded",
    );
    assert_eq!(model.requests().len(), 1);
    // The step's messages, tool result included, are kept.
    let roles: Vec<&str> = result.messages.iter().map(Message::role).collect();
    assert_eq!(roles, ["assistant", "tool"]);
}

#[tokio::test]
async fn a_fail_closed_on_step_finish_hook_fails_the_turn() {
    let watched = Watched::new();
    let model = add_then_answer();
    let agent = watched
        .builder(&model)
        .hook(
            failing::<event::OnStepFinish>("strict", Failure::Timeout)
                .on_error(FailurePolicy::FailClosed),
        )
        .build()
        .unwrap();

    let result = agent.run("2+3?").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    let trace = watched.trace.take();
    assert_eq!(
        trace[trace.len() - 4..],
        lines(&[
            "on_step_finish(0)",
            "classify_chat_error(turn)",
            "on_chat_error(turn)",
            "on_chat_response(error)",
        ])
    );
    watched.assert_failed(
        ErrorStage::Turn,
        true,
        "on_step_finish hook `strict` timed out after 20 ms",
    );
}

// ---- Turn-level hooks fail the turn ----

/// Registers a failing hook of event `E` before the recorder; the turn must fail with stage
/// `turn` and the trace must end as `expected`.
async fn turn_hook_fails_the_turn<E>(failure: Failure, persisted: bool, expected: &[&str])
where
    E: TurnWideEvent,
    (): agent_core::HookReturn<E>,
{
    let watched = Watched::new();
    let model = add_then_answer();
    let agent = watched
        .builder(&model)
        .hook(failing::<E>("broken", failure).priority(-1))
        .build()
        .unwrap();

    let result = agent.run("2+3?").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert_eq!(watched.trace.take(), lines(expected));
    let message = format!("{} hook `broken` {}", E::NAME, failure.reported());
    watched.assert_failed(ErrorStage::Turn, persisted, &message);
    let error = result.error.expect("an error");
    assert_eq!(
        error.kind,
        TurnErrorKind::Hook {
            event: E::NAME,
            hook: "broken".to_owned()
        }
    );
    assert!(model.requests().is_empty(), "no model call");
}

const FAILED_BEFORE_RUN: &[&str] = &[
    "classify_chat_error(turn)",
    "on_chat_error(turn)",
    "on_chat_response(error)",
];

const FAILED_BEFORE_TURN: &[&str] = &[
    "before_run(2+3?)",
    "classify_chat_error(turn)",
    "on_chat_error(turn)",
    "on_chat_response(error)",
];

const FAILED_BEFORE_STEP: &[&str] = &[
    "before_run(2+3?)",
    "before_turn",
    "classify_chat_error(turn)",
    "on_chat_error(turn)",
    "on_chat_response(error)",
];

#[tokio::test]
async fn a_before_run_hook_returning_an_error_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeRun>(Failure::Error, false, FAILED_BEFORE_RUN).await;
}

#[tokio::test]
async fn a_panicking_before_run_hook_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeRun>(Failure::Panic, false, FAILED_BEFORE_RUN).await;
}

#[tokio::test]
async fn a_timing_out_before_run_hook_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeRun>(Failure::Timeout, false, FAILED_BEFORE_RUN).await;
}

#[tokio::test]
async fn a_before_turn_hook_returning_an_error_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeTurn>(Failure::Error, true, FAILED_BEFORE_TURN).await;
}

#[tokio::test]
async fn a_panicking_before_turn_hook_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeTurn>(Failure::Panic, true, FAILED_BEFORE_TURN).await;
}

#[tokio::test]
async fn a_timing_out_before_turn_hook_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeTurn>(Failure::Timeout, true, FAILED_BEFORE_TURN).await;
}

#[tokio::test]
async fn a_before_step_hook_returning_an_error_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeStep>(Failure::Error, true, FAILED_BEFORE_STEP).await;
}

#[tokio::test]
async fn a_panicking_before_step_hook_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeStep>(Failure::Panic, true, FAILED_BEFORE_STEP).await;
}

#[tokio::test]
async fn a_timing_out_before_step_hook_fails_the_turn() {
    turn_hook_fails_the_turn::<event::BeforeStep>(Failure::Timeout, true, FAILED_BEFORE_STEP).await;
}

#[tokio::test]
async fn a_before_step_hook_failing_in_a_later_step_keeps_the_earlier_steps() {
    let watched = Watched::new();
    let model = add_then_answer();
    let agent = watched
        .builder(&model)
        .hook(Hook::<event::BeforeStep>::sync("second_step", |ctx| {
            if ctx.step == 1 {
                Err("not twice")
            } else {
                Ok(())
            }
        }))
        .build()
        .unwrap();

    let result = agent.run("2+3?").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    let mut expected = lines(&NORMAL_TURN[..14]);
    expected.extend(lines(&[
        "classify_chat_error(turn)",
        "on_chat_error(turn)",
        "on_chat_response(error)",
    ]));
    assert_eq!(watched.trace.take(), expected);
    watched.assert_failed(
        ErrorStage::Turn,
        true,
        "before_step hook `second_step` returned an error: not twice",
    );
    assert_eq!(result.steps.len(), 1);
    assert_eq!(model.requests().len(), 1);
}

// ---- Panicking tools ----

/// `explode`: always panics.
struct Explode;

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct ExplodeArgs {}

impl Tool for Explode {
    const NAME: &'static str = "explode";
    const DESCRIPTION: &'static str = "Panic.";
    type Args = ExplodeArgs;
    type Output = String;

    fn schema() -> &'static serde_json::Value {
        static SCHEMA: OnceLock<serde_json::Value> = OnceLock::new();
        SCHEMA.get_or_init(schema_for::<ExplodeArgs>)
    }

    async fn call(&self, _args: ExplodeArgs, _ctx: ToolContext) -> Result<String, ToolError> {
        panic!("kaboom")
    }
}

own_args!(ExplodeArgs => Explode);

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_turn_goes_on() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "explode", "{}")
            .tool_call("c2", "add", r#"{"a":1,"b":1}"#),
        ScriptedStep::new().text("survived"),
    ]);
    let agent = AgentBuilder::new("robust")
        .model(model.clone())
        .tool(Explode)
        .tool(Add::traced(&trace))
        .record_tool_calls(&trace)
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "survived");
    assert_eq!(
        trace.take(),
        lines(&[
            "before_tool_call(explode c1)",
            "after_tool_call(explode c1 failed)",
            "before_tool_call(add c2)",
            "add(1,1)",
            "after_tool_call(add c2 executed)",
        ])
    );
    assert_eq!(
        result_of_c1(&model),
        ("tool `explode` panicked: kaboom".to_owned(), true)
    );
}

#[tokio::test]
async fn a_run_time_tool_panicking_before_its_future_becomes_an_error_result() {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "brittle", r#"{"n":1}"#),
        ScriptedStep::new().text("survived"),
    ]);
    // The closure panics while making its future, not while the future runs.
    let brittle = FnTool::new(
        "brittle",
        "Panics at once.",
        json!({"type": "object"}),
        |args, _ctx| {
            assert!(args["n"] == 0, "brittle got {}", args["n"]);
            async move { Ok::<_, ToolError>(args) }
        },
    );
    let agent = AgentBuilder::new("robust")
        .model(model.clone())
        .dyn_tool(brittle)
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "survived");
    assert_eq!(
        result_of_c1(&model),
        ("tool `brittle` panicked: brittle got 1".to_owned(), true)
    );
}
