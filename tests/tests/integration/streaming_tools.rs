//! Streaming tools (issue 10 item 2): a tool reports preliminary results while it runs
//! (`tool_progress`); they reach on_chunk and the stream API in order, before the final
//! result; the model reads only the final value; after_tool_call counts them; a blocked call
//! streams nothing; a cancel stops the tool's stream.

use std::time::Duration;

use agent_core::{
    AgentBuilder, CancelToken, FnTool, Hook, Matcher, ScriptedModel, ScriptedStep,
    ToolCallDecision, ToolError, TurnEvent, TurnRequest, TurnStatus, event, tool_progress,
};
use serde_json::{Value, json};
use tests::{Trace, describe_chunk, lines};

/// A tool that reports `steps` percentages, pausing 10 ms between them, then answers.
fn indexer(steps: usize) -> FnTool {
    FnTool::new(
        "index",
        "Indexes the files.",
        json!({"type": "object"}),
        move |_, _| async move {
            for i in 1..=steps {
                tokio::time::sleep(Duration::from_millis(10)).await;
                assert!(tool_progress(json!({ "percent": i * 100 / steps })));
            }
            Ok::<Value, ToolError>(json!("indexed 120 files"))
        },
    )
}

fn agent(trace: &Trace, model: &ScriptedModel, block: bool) -> AgentBuilder {
    let (t1, t2) = (trace.clone(), trace.clone());
    AgentBuilder::new("streamer")
        .model(model.clone())
        .dyn_tool(indexer(3))
        .hook(Hook::<event::OnChunk>::sync("chunks", move |ctx| {
            if !matches!(ctx.chunk, agent_core::Chunk::TextDelta(_)) {
                t1.push(describe_chunk(&ctx.chunk));
            }
        }))
        .before_tool_call(
            Matcher::all(),
            Hook::<event::BeforeToolCall<Value>>::sync("gate", move |_| {
                if block {
                    ToolCallDecision::block("not now")
                } else {
                    ToolCallDecision::Allow
                }
            }),
        )
        .after_tool_call(
            Matcher::all(),
            Hook::<event::AfterToolCall<Value>>::sync("count", move |ctx| {
                t2.push(format!("after_tool_call: {} preliminary", ctx.preliminary));
            }),
        )
}

fn model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().tool_call("i1", "index", "{}"),
        ScriptedStep::new().text("Done."),
    ])
}

#[tokio::test(start_paused = true)]
async fn preliminary_results_reach_on_chunk_and_the_stream_and_the_model_reads_the_final_value() {
    let trace = Trace::new();
    let model = model();
    let agent = agent(&trace, &model, false).build().unwrap();
    let mut stream = agent.conversation().stream("index it");
    let mut streamed = Vec::new();
    while let Some(event) = stream.next().await {
        if let TurnEvent::Chunk { chunk, .. } = event
            && !matches!(chunk, agent_core::Chunk::TextDelta(_))
        {
            streamed.push(describe_chunk(&chunk));
        }
    }
    let expected = [
        "tool_start:i1 index",
        "tool_input:i1",
        "tool_call:i1 index",
        r#"tool_preliminary:i1 index {"percent":33}"#,
        r#"tool_preliminary:i1 index {"percent":66}"#,
        r#"tool_preliminary:i1 index {"percent":100}"#,
        "tool_result:i1 index ok",
    ];
    assert_eq!(streamed, lines(&expected));
    let mut hooks = lines(&expected);
    hooks.insert(6, "after_tool_call: 3 preliminary".to_owned());
    assert_eq!(trace.take(), hooks);
    let read = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .text()
        .to_owned();
    assert_eq!(
        read, "indexed 120 files",
        "the model reads only the final value"
    );
}

#[tokio::test(start_paused = true)]
async fn a_blocked_call_streams_nothing() {
    let trace = Trace::new();
    let result = agent(&trace, &model(), true)
        .build()
        .unwrap()
        .run("index it")
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(
        trace.take(),
        lines(&[
            "tool_start:i1 index",
            "tool_input:i1",
            "tool_call:i1 index",
            "after_tool_call: 0 preliminary",
            "tool_result:i1 index ok",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancel_stops_the_tools_stream() {
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("i1", "index", "{}")]);
    let agent = AgentBuilder::new("streamer")
        .model(model)
        .dyn_tool(indexer(100))
        .hook({
            let t = trace.clone();
            Hook::<event::OnChunk>::sync("chunks", move |ctx| {
                if matches!(ctx.chunk, agent_core::Chunk::ToolPreliminary { .. }) {
                    t.push("preliminary");
                }
            })
        })
        .build()
        .unwrap();
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            // Between the third and the fourth report.
            tokio::time::sleep(Duration::from_millis(35)).await;
            token.cancel();
        })
    };
    let result = agent.run(TurnRequest::new("go").cancel(token)).await;
    canceller.await.unwrap();
    assert_eq!(result.status, TurnStatus::Aborted);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(trace.take().len(), 3, "no report after the cancel");
}
