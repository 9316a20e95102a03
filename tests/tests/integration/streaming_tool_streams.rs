//! Streaming tools that return a stream (issue 10 item 2): `#[tool]` on a function returning
//! `ToolStream<P, T>` and `FnTool::streaming`. Each `Progress` reaches on_chunk and the stream
//! API as a preliminary result, before the call's result; the model reads only the final value;
//! a blocked or substituted call never polls the stream; after_tool_call sees the final value
//! (typed for `#[tool]`) and the count; a cancel or the tool's timeout drops the stream; a
//! stream that ends without a final value, fails or panics is an error result the model reads.

use std::time::Duration;

use agent_core::{
    AgentBuilder, AgentSpec, CancelToken, Chunk, ChunkContext, FnTool, Hook, Matcher,
    ScriptedModel, ScriptedStep, ToolCallContext, ToolCallDecision, ToolCallResultContext,
    ToolError, ToolOutcome, ToolStream, ToolUpdate, TurnEvent, TurnRequest, TurnStatus, agent,
    event,
};
use serde::Serialize;
use serde_json::{Value, json};
use tests::{Trace, describe_chunk, lines, status_name};

#[derive(Clone, Debug, PartialEq, Serialize)]
struct Progress {
    percent: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct Summary {
    files: usize,
}

/// Records `entry` when dropped: shows when the engine drops a tool's stream.
struct OnDrop(Trace, &'static str);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.push(self.1);
    }
}

fn pause() -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_millis(10))
}

#[derive(Default)]
struct Indexer {
    trace: Trace,
}

/// Indexes a workspace.
#[agent(instructions = "Index what you are asked to.")]
impl Indexer {
    /// Index the files under a root, reporting how far it got.
    #[tool]
    fn index(&self, root: String) -> ToolStream<Progress, Summary> {
        self.trace.push(format!("index({root})"));
        let trace = self.trace.clone();
        ToolStream::new(async_stream::stream! {
            let _dropped = OnDrop(trace.clone(), "stream dropped");
            trace.push("stream polled");
            for percent in [50, 100] {
                pause().await;
                yield ToolUpdate::Progress(Progress { percent });
            }
            pause().await;
            yield ToolUpdate::Done(Summary { files: 120 });
            // Never reached: the engine drops the stream at its final value.
            trace.push("polled after the final value");
            yield ToolUpdate::Progress(Progress { percent: 101 });
        })
    }

    /// Scan the files to a depth, reporting each level; it stalls after the first.
    #[tool(timeout_ms = 50)]
    async fn scan(&self, depth: u32) -> Result<ToolStream<Progress, Summary>, ToolError> {
        self.trace.push(format!("scan({depth})"));
        if depth == 0 {
            return Err(ToolError::new("depth must be at least 1"));
        }
        let trace = self.trace.clone();
        Ok(ToolStream::new(async_stream::stream! {
            let _dropped = OnDrop(trace, "stream dropped");
            yield ToolUpdate::Progress(Progress { percent: 1 });
            std::future::pending::<()>().await;
            yield ToolUpdate::Done(Summary { files: 0 });
        }))
    }

    #[hook(before_tool_call, tool = "index")]
    fn gate(
        &self,
        ctx: &ToolCallContext<indexer_tools::IndexArgs>,
    ) -> ToolCallDecision<indexer_tools::IndexArgs> {
        self.trace
            .push(format!("before_tool_call({})", ctx.input.root));
        match ctx.input.root.as_str() {
            "/secret" => ToolCallDecision::block("outside the workspace"),
            "cached" => ToolCallDecision::Substitute(Summary { files: 7 }),
            _ => ToolCallDecision::Allow,
        }
    }

    #[hook(after_tool_call, tool = "index")]
    fn audit(&self, ctx: &ToolCallResultContext<indexer_tools::IndexArgs, Summary>) {
        let output: Option<&Summary> = ctx.output();
        self.trace.push(format!(
            "after_tool_call({output:?}, {} preliminary)",
            ctx.preliminary
        ));
    }

    #[hook(after_tool_call, tool = "scan")]
    fn audit_scan(&self, ctx: &ToolCallResultContext<indexer_tools::ScanArgs, Summary>) {
        self.trace.push(format!(
            "after_tool_call({}, {} preliminary)",
            outcome(&ctx.outcome),
            ctx.preliminary
        ));
    }

    #[hook(on_chunk)]
    fn chunks(&self, ctx: &ChunkContext) {
        if !matches!(ctx.chunk, Chunk::TextDelta(_)) {
            self.trace
                .push(format!("on_chunk({})", describe_chunk(&ctx.chunk)));
        }
    }
}

fn outcome(outcome: &ToolOutcome) -> String {
    match outcome {
        ToolOutcome::Executed(value) => format!("executed {value:?}"),
        ToolOutcome::Failed(error) => format!("failed: {error}"),
        other => format!("{other:?}"),
    }
}

/// A stream API event as these traces spell it (text deltas left out).
fn describe_event(event: &TurnEvent) -> Option<String> {
    match event {
        TurnEvent::Chunk {
            chunk: Chunk::TextDelta(_),
            ..
        } => None,
        TurnEvent::Chunk { chunk, .. } => Some(describe_chunk(chunk)),
        TurnEvent::StepFinished(record) => Some(format!("step_finished({})", record.step)),
        TurnEvent::Finished(result) => Some(format!("finished({})", status_name(result.status))),
        other => Some(format!("{other:?}")),
    }
}

/// What the model read as the result of each of its tool calls, in order.
fn tool_results_read(model: &ScriptedModel) -> Vec<String> {
    let requests = model.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.messages
        .iter()
        .filter_map(|message| match message {
            agent_core::Message::Tool {
                content, is_error, ..
            } => Some(format!(
                "{}{content}",
                if *is_error { "error: " } else { "" }
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_tool_returning_a_stream_reports_each_update_before_its_result_and_the_model_reads_the_final_value()
 {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("i1", "index", r#"{"root":"src"}"#),
        ScriptedStep::new().text("Indexed."),
    ]);
    let agent = Indexer {
        trace: trace.clone(),
    }
    .builder()
    .model(model.clone())
    .build()
    .unwrap();
    let mut stream = agent.conversation().stream("index src");
    let mut streamed = Vec::new();
    while let Some(event) = stream.next().await {
        streamed.extend(describe_event(&event));
    }
    assert_eq!(
        streamed,
        lines(&[
            "tool_start:i1 index",
            "tool_input:i1",
            "tool_call:i1 index",
            r#"tool_preliminary:i1 index {"percent":50}"#,
            r#"tool_preliminary:i1 index {"percent":100}"#,
            "tool_result:i1 index ok",
            "step_finished(0)",
            "step_finished(1)",
            "finished(completed)",
        ])
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "on_chunk(tool_start:i1 index)",
            "on_chunk(tool_input:i1)",
            "on_chunk(tool_call:i1 index)",
            "before_tool_call(src)",
            "index(src)",
            "stream polled",
            r#"on_chunk(tool_preliminary:i1 index {"percent":50})"#,
            r#"on_chunk(tool_preliminary:i1 index {"percent":100})"#,
            "stream dropped",
            "after_tool_call(Some(Summary { files: 120 }), 2 preliminary)",
            "on_chunk(tool_result:i1 index ok)",
        ])
    );
    assert_eq!(tool_results_read(&model), [r#"{"files":120}"#]);
}

#[tokio::test(start_paused = true)]
async fn a_blocked_or_substituted_call_never_calls_the_tool_or_polls_its_stream() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("i1", "index", r#"{"root":"/secret"}"#),
        ScriptedStep::new().tool_call("i2", "index", r#"{"root":"cached"}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = Indexer {
        trace: trace.clone(),
    }
    .builder()
    .model(model.clone())
    .build()
    .unwrap();
    let result = agent.run("index").await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(
        trace.take(),
        lines(&[
            "on_chunk(tool_start:i1 index)",
            "on_chunk(tool_input:i1)",
            "on_chunk(tool_call:i1 index)",
            "before_tool_call(/secret)",
            "after_tool_call(None, 0 preliminary)",
            "on_chunk(tool_result:i1 index ok)",
            "on_chunk(tool_start:i2 index)",
            "on_chunk(tool_input:i2)",
            "on_chunk(tool_call:i2 index)",
            "before_tool_call(cached)",
            "after_tool_call(Some(Summary { files: 7 }), 0 preliminary)",
            "on_chunk(tool_result:i2 index ok)",
        ])
    );
    assert_eq!(
        tool_results_read(&model),
        ["outside the workspace", r#"{"files":7}"#]
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancel_mid_stream_drops_the_stream() {
    let trace = Trace::new();
    let model =
        ScriptedModel::new([ScriptedStep::new().tool_call("i1", "index", r#"{"root":"src"}"#)]);
    let agent = Indexer {
        trace: trace.clone(),
    }
    .builder()
    .model(model)
    .build()
    .unwrap();
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            // Between the first update (at 10 ms) and the second (at 20 ms).
            tokio::time::sleep(Duration::from_millis(15)).await;
            token.cancel();
        })
    };
    let result = agent.run(TurnRequest::new("go").cancel(token)).await;
    canceller.await.unwrap();
    assert_eq!(result.status, TurnStatus::Aborted);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        trace.take(),
        lines(&[
            "on_chunk(tool_start:i1 index)",
            "on_chunk(tool_input:i1)",
            "on_chunk(tool_call:i1 index)",
            "before_tool_call(src)",
            "index(src)",
            "stream polled",
            r#"on_chunk(tool_preliminary:i1 index {"percent":50})"#,
            "stream dropped",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn an_async_tool_fails_before_its_stream_and_its_timeout_drops_a_stalled_stream() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("s1", "scan", r#"{"depth":0}"#),
        ScriptedStep::new().tool_call("s2", "scan", r#"{"depth":3}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = Indexer {
        trace: trace.clone(),
    }
    .builder()
    .model(model.clone())
    .build()
    .unwrap();
    let result = agent.run("scan").await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(
        trace.take(),
        lines(&[
            "on_chunk(tool_start:s1 scan)",
            "on_chunk(tool_input:s1)",
            "on_chunk(tool_call:s1 scan)",
            "scan(0)",
            "after_tool_call(failed: depth must be at least 1, 0 preliminary)",
            "on_chunk(tool_result:s1 scan error)",
            "on_chunk(tool_start:s2 scan)",
            "on_chunk(tool_input:s2)",
            "on_chunk(tool_call:s2 scan)",
            "scan(3)",
            r#"on_chunk(tool_preliminary:s2 scan {"percent":1})"#,
            "stream dropped",
            "after_tool_call(failed: tool `scan` timed out after 50ms and was stopped, 1 preliminary)",
            "on_chunk(tool_result:s2 scan error)",
        ])
    );
    assert_eq!(
        tool_results_read(&model),
        [
            "error: depth must be at least 1",
            "error: tool `scan` timed out after 50ms and was stopped",
        ]
    );
}

/// The builder form: counts to `args.to`, reporting each number, then answers; `end` says how
/// the stream ends instead: `"early"` (no final value), `"failed"` or `"panic"`.
fn counter(trace: &Trace) -> FnTool {
    let trace = trace.clone();
    FnTool::streaming(
        "count",
        "Counts, reporting each number.",
        json!({"type": "object"}),
        move |args, _ctx| {
            let trace = trace.clone();
            ToolStream::new(async_stream::stream! {
                let _dropped = OnDrop(trace.clone(), "stream dropped");
                trace.push("stream polled");
                let to = args["to"].as_u64().unwrap_or(1);
                for n in 1..=to {
                    pause().await;
                    yield ToolUpdate::Progress(n);
                }
                pause().await;
                match args["end"].as_str() {
                    Some("early") => {}
                    Some("failed") => yield ToolUpdate::Failed(ToolError::new("disk full")),
                    Some("panic") => panic!("boom"),
                    _ => yield ToolUpdate::Done(json!({ "counted": to })),
                }
            })
        },
    )
}

fn counting_agent(trace: &Trace, model: &ScriptedModel) -> AgentBuilder {
    let (t1, t2, t3) = (trace.clone(), trace.clone(), trace.clone());
    AgentBuilder::new("counter")
        .model(model.clone())
        .dyn_tool(counter(trace))
        .hook(Hook::<event::OnChunk>::sync("chunks", move |ctx| {
            if !matches!(ctx.chunk, Chunk::TextDelta(_)) {
                t1.push(format!("on_chunk({})", describe_chunk(&ctx.chunk)));
            }
        }))
        .before_tool_call(
            Matcher::all(),
            Hook::<event::BeforeToolCall<Value>>::sync("gate", move |ctx| {
                t2.push(format!("before_tool_call({})", ctx.input));
                if ctx.input["skip"] == true {
                    ToolCallDecision::block("skipped")
                } else {
                    ToolCallDecision::Allow
                }
            }),
        )
        .after_tool_call(
            Matcher::all(),
            Hook::<event::AfterToolCall<Value>>::sync("count", move |ctx| {
                t3.push(format!(
                    "after_tool_call({}, {} preliminary)",
                    outcome(&ctx.outcome),
                    ctx.preliminary
                ));
            }),
        )
}

#[tokio::test(start_paused = true)]
async fn a_builder_streaming_tool_reports_each_update_and_a_blocked_call_polls_nothing() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "count", r#"{"to":3}"#),
        ScriptedStep::new().tool_call("c2", "count", r#"{"to":3,"skip":true}"#),
        ScriptedStep::new().text("Counted."),
    ]);
    let agent = counting_agent(&trace, &model).build().unwrap();
    let mut stream = agent.conversation().stream("count to 3");
    let mut streamed = Vec::new();
    while let Some(event) = stream.next().await {
        streamed.extend(describe_event(&event));
    }
    assert_eq!(
        streamed,
        lines(&[
            "tool_start:c1 count",
            "tool_input:c1",
            "tool_call:c1 count",
            "tool_preliminary:c1 count 1",
            "tool_preliminary:c1 count 2",
            "tool_preliminary:c1 count 3",
            "tool_result:c1 count ok",
            "step_finished(0)",
            "tool_start:c2 count",
            "tool_input:c2",
            "tool_call:c2 count",
            "tool_result:c2 count ok",
            "step_finished(1)",
            "step_finished(2)",
            "finished(completed)",
        ])
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "on_chunk(tool_start:c1 count)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 count)",
            r#"before_tool_call({"to":3})"#,
            "stream polled",
            "on_chunk(tool_preliminary:c1 count 1)",
            "on_chunk(tool_preliminary:c1 count 2)",
            "on_chunk(tool_preliminary:c1 count 3)",
            "stream dropped",
            r#"after_tool_call(executed {"counted":3}, 3 preliminary)"#,
            "on_chunk(tool_result:c1 count ok)",
            "on_chunk(tool_start:c2 count)",
            "on_chunk(tool_input:c2)",
            "on_chunk(tool_call:c2 count)",
            r#"before_tool_call({"skip":true,"to":3})"#,
            "after_tool_call(Blocked(\"skipped\"), 0 preliminary)",
            "on_chunk(tool_result:c2 count ok)",
        ])
    );
    assert_eq!(tool_results_read(&model), [r#"{"counted":3}"#, "skipped"]);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_early_fails_or_panics_is_an_error_result_the_model_reads() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "count", r#"{"end":"early"}"#),
        ScriptedStep::new().tool_call("c2", "count", r#"{"end":"failed"}"#),
        ScriptedStep::new().tool_call("c3", "count", r#"{"end":"panic"}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let result = counting_agent(&trace, &model)
        .build()
        .unwrap()
        .run("count")
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    let call = |id: &str, end: &str, after: &str| {
        vec![
            format!("on_chunk(tool_start:{id} count)"),
            format!("on_chunk(tool_input:{id})"),
            format!("on_chunk(tool_call:{id} count)"),
            format!(r#"before_tool_call({{"end":"{end}"}})"#),
            "stream polled".to_owned(),
            format!("on_chunk(tool_preliminary:{id} count 1)"),
            "stream dropped".to_owned(),
            format!("after_tool_call(failed: {after}, 1 preliminary)"),
            format!("on_chunk(tool_result:{id} count error)"),
        ]
    };
    let expected = [
        call(
            "c1",
            "early",
            "tool `count` ended its stream without a final value",
        ),
        call("c2", "failed", "disk full"),
        call("c3", "panic", "tool `count` panicked: boom"),
    ]
    .concat();
    assert_eq!(trace.take(), expected);
    assert_eq!(
        tool_results_read(&model),
        [
            "error: tool `count` ended its stream without a final value",
            "error: disk full",
            "error: tool `count` panicked: boom",
        ]
    );
}
