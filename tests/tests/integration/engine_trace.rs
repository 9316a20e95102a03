//! The order of events in a turn (docs/design.md §5), the stream API, and concurrent tool calls.

use std::sync::{Arc, OnceLock};

use agent_core::{
    AgentBuilder, Message, ScriptedModel, ScriptedStep, StopReason, Tool, ToolContext, ToolError,
    TurnEvent, TurnStatus, schema_for,
};
use serde::{Deserialize, Serialize};
use tests::{Add, GetWeather, Recorded, Trace, describe_chunk, lines, own_args, within};
use tokio::sync::{Barrier, Notify};

/// One step with two tool calls, then a step that answers.
fn two_call_script() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new()
            .reasoning("Two lookups.")
            .text("Let me check.")
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
            .tool_call("c2", "get_weather", r#"{"city":"Oslo"}"#)
            .usage(10, 5),
        ScriptedStep::new()
            .text("5, and ")
            .text("21 °C.")
            .usage(20, 4),
    ])
}

fn two_call_agent(model: &ScriptedModel, trace: &Trace) -> agent_core::Agent {
    AgentBuilder::new("tracer")
        .instructions("Be brief.")
        .model(model.clone())
        .tool(Add::traced(trace))
        .tool(GetWeather::traced(trace))
        .record_all(trace)
        .build()
        .expect("the agent builds")
}

fn two_call_chunks() -> Vec<String> {
    lines(&[
        "reasoning:Two lookups.",
        "text:Let me check.",
        "tool_start:c1 add",
        "tool_input:c1",
        "tool_call:c1 add",
        "tool_start:c2 get_weather",
        "tool_input:c2",
        "tool_call:c2 get_weather",
        "tool_result:c1 add ok",
        "tool_result:c2 get_weather ok",
        "text:5, and ",
        "text:21 °C.",
    ])
}

#[tokio::test]
async fn a_two_tool_call_turn_fires_every_hook_in_order() {
    let trace = Trace::new();
    let model = two_call_script();
    let agent = two_call_agent(&model, &trace);

    let result = agent.run("2+3, and the weather in Oslo?").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::Finished));
    assert_eq!(result.text, "5, and 21 °C.");
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(2+3, and the weather in Oslo?)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(reasoning:Two lookups.)",
            "on_chunk(text:Let me check.)",
            "on_chunk(tool_start:c1 add)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 add)",
            "on_chunk(tool_start:c2 get_weather)",
            "on_chunk(tool_input:c2)",
            "on_chunk(tool_call:c2 get_weather)",
            "on_llm_end(0)",
            "before_tool_call(add c1)",
            "add(2,3)",
            "after_tool_call(add c1 executed)",
            "before_tool_call(get_weather c2)",
            "get_weather(Oslo)",
            "after_tool_call(get_weather c2 executed)",
            "on_chunk(tool_result:c1 add ok)",
            "on_chunk(tool_result:c2 get_weather ok)",
            "on_step_finish(0)",
            "before_step(1)",
            "on_llm_start(1)",
            "on_chunk(text:5, and )",
            "on_chunk(text:21 °C.)",
            "on_llm_end(1)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );

    // The step records and the messages the turn added.
    assert_eq!(result.steps.len(), 2);
    let results: Vec<(&str, &str, bool, &str)> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                r.content.as_str(),
                r.is_error,
                r.outcome.as_str(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("add", "5", false, "executed"),
            (
                "get_weather",
                r#"{"city":"Oslo","celsius":21}"#,
                false,
                "executed"
            ),
        ]
    );
    assert_eq!(result.usage.input_tokens, 30);
    assert_eq!(result.usage.output_tokens, 9);
    let roles: Vec<&str> = result.messages.iter().map(Message::role).collect();
    assert_eq!(roles, ["assistant", "tool", "tool", "assistant"]);

    // The second request carries the system prompt, both tools and the tool results.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].system.as_deref(), Some("Be brief."));
    let tools: Vec<&str> = requests[1].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["add", "get_weather"]);
    let sent: Vec<(&str, &str)> = requests[1]
        .messages
        .iter()
        .map(|m| (m.role(), m.text()))
        .collect();
    assert_eq!(
        sent,
        [
            ("user", "2+3, and the weather in Oslo?"),
            ("assistant", "Let me check."),
            ("tool", "5"),
            ("tool", r#"{"city":"Oslo","celsius":21}"#),
        ]
    );
}

#[tokio::test]
async fn the_stream_api_yields_the_same_chunks_then_finished_last() {
    let trace = Trace::new();
    let model = two_call_script();
    let agent = two_call_agent(&model, &trace);

    let mut stream = agent.conversation().stream("2+3, and the weather in Oslo?");
    let mut events = Vec::new();
    let mut finished = None;
    while let Some(event) = within("the turn's stream", stream.next()).await {
        assert!(finished.is_none(), "an event after Finished: {event:?}");
        match event {
            TurnEvent::Chunk { step, chunk } => {
                events.push(format!("chunk({step} {})", describe_chunk(&chunk)));
            }
            TurnEvent::StepFinished(record) => {
                events.push(format!("step_finished({})", record.step));
            }
            TurnEvent::Finished(result) => finished = Some(result),
            other => panic!("an event this test does not know: {other:?}"),
        }
    }
    let result = finished.expect("the stream ends with Finished");
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "5, and 21 °C.");
    assert_eq!(
        events,
        lines(&[
            "chunk(0 reasoning:Two lookups.)",
            "chunk(0 text:Let me check.)",
            "chunk(0 tool_start:c1 add)",
            "chunk(0 tool_input:c1)",
            "chunk(0 tool_call:c1 add)",
            "chunk(0 tool_start:c2 get_weather)",
            "chunk(0 tool_input:c2)",
            "chunk(0 tool_call:c2 get_weather)",
            "chunk(0 tool_result:c1 add ok)",
            "chunk(0 tool_result:c2 get_weather ok)",
            "step_finished(0)",
            "chunk(1 text:5, and )",
            "chunk(1 text:21 °C.)",
            "step_finished(1)",
        ])
    );

    // The stream's chunks are exactly what on_chunk saw, in the same order.
    let hooked: Vec<String> = trace
        .take()
        .into_iter()
        .filter_map(|entry| {
            let chunk = entry.strip_prefix("on_chunk(")?.strip_suffix(')')?;
            Some(chunk.to_owned())
        })
        .collect();
    assert_eq!(hooked, two_call_chunks());
}

#[tokio::test]
async fn the_stream_api_works_without_any_hook() {
    let model = ScriptedModel::new([ScriptedStep::new().text("Hel").text("lo")]);
    let agent = AgentBuilder::new("plain").model(model).build().unwrap();
    let mut stream = agent.conversation().stream("hi");
    let mut events = Vec::new();
    while let Some(event) = within("the turn's stream", stream.next()).await {
        events.push(match event {
            TurnEvent::Chunk { chunk, .. } => describe_chunk(&chunk),
            TurnEvent::StepFinished(record) => format!("step_finished({})", record.step),
            TurnEvent::Finished(result) => format!("finished({})", result.text),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(
        events,
        lines(&["text:Hel", "text:lo", "step_finished(0)", "finished(Hello)"])
    );
}

/// Both calls of one step must be in flight at once to pass the barrier; `first` then waits
/// until `second` has finished, so the calls finish in the reverse of the model's order.
#[derive(Clone)]
struct Rendezvous {
    trace: Trace,
    barrier: Arc<Barrier>,
    second_done: Arc<Notify>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct RendezvousArgs {
    /// `first` or `second`.
    label: String,
}

impl Tool for Rendezvous {
    const NAME: &'static str = "rendezvous";
    const DESCRIPTION: &'static str = "Meet another call of this tool.";
    type Args = RendezvousArgs;
    type Output = String;

    fn schema() -> &'static serde_json::Value {
        static SCHEMA: OnceLock<serde_json::Value> = OnceLock::new();
        SCHEMA.get_or_init(schema_for::<RendezvousArgs>)
    }

    async fn call(&self, args: RendezvousArgs, _ctx: ToolContext) -> Result<String, ToolError> {
        self.trace.push(format!("{} arrives", args.label));
        self.barrier.wait().await;
        if args.label == "first" {
            self.second_done.notified().await;
        }
        self.trace.push(format!("{} leaves", args.label));
        if args.label == "second" {
            self.second_done.notify_one();
        }
        Ok(format!("{} result", args.label))
    }
}

own_args!(RendezvousArgs => Rendezvous);

#[tokio::test]
async fn tool_calls_of_one_step_run_concurrently_and_results_keep_the_models_order() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "rendezvous", r#"{"label":"first"}"#)
            .tool_call("c2", "rendezvous", r#"{"label":"second"}"#),
        ScriptedStep::new().text("both met"),
    ]);
    let tool = Rendezvous {
        trace: trace.clone(),
        barrier: Arc::new(Barrier::new(2)),
        second_done: Arc::new(Notify::new()),
    };
    let agent = AgentBuilder::new("meet")
        .model(model.clone())
        .tool(tool)
        .record_tool_calls(&trace)
        .build()
        .unwrap();

    let result = within("two calls meeting at a barrier", agent.run("meet")).await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    // Each call's hooks stay in order around its own execution; the calls overlap.
    assert_eq!(
        trace.take(),
        lines(&[
            "before_tool_call(rendezvous c1)",
            "first arrives",
            "before_tool_call(rendezvous c2)",
            "second arrives",
            "second leaves",
            "after_tool_call(rendezvous c2 executed)",
            "first leaves",
            "after_tool_call(rendezvous c1 executed)",
        ])
    );
    // History holds the results in the model's call order, not the order they finished.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let tool_messages: Vec<(&str, &str)> = requests[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id, content, ..
            } => Some((call_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        tool_messages,
        [("c1", "first result"), ("c2", "second result")]
    );
    let call_ids: Vec<&str> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| r.call_id.as_str())
        .collect();
    assert_eq!(call_ids, ["c1", "c2"]);
}

#[tokio::test]
async fn calls_that_never_wait_run_one_after_another_in_the_models_order() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "add", r#"{"a":1,"b":1}"#)
            .tool_call("c2", "get_weather", r#"{"city":"Rome"}"#)
            .tool_call("c3", "add", r#"{"a":2,"b":2}"#)
            .tool_call("c4", "get_weather", r#"{"city":"Lima"}"#),
        ScriptedStep::new().text("done"),
    ]);
    let agent = AgentBuilder::new("ordered")
        .model(model)
        .tool(Add::traced(&trace))
        .tool(GetWeather::traced(&trace))
        .record_tool_calls(&trace)
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "before_tool_call(add c1)",
            "add(1,1)",
            "after_tool_call(add c1 executed)",
            "before_tool_call(get_weather c2)",
            "get_weather(Rome)",
            "after_tool_call(get_weather c2 executed)",
            "before_tool_call(add c3)",
            "add(2,2)",
            "after_tool_call(add c3 executed)",
            "before_tool_call(get_weather c4)",
            "get_weather(Lima)",
            "after_tool_call(get_weather c4 executed)",
        ])
    );
}
