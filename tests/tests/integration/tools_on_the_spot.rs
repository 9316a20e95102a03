//! Calls of plain `fn` tools run on the spot (issue 16): `#[tool]` on a function that is not
//! `async` implements `Tool::call_now`, and the engine runs a call whose hooks are sync too
//! without a future. Nothing a user sees may change: the full traces of hooks and run hooks
//! keep the model's call order (with a tool that waits among them; the same trace as with an
//! async before_tool_call hook that never waits, every call a future as before), preliminary
//! results come before after_tool_call, a panic is an error result, a cancel before the calls
//! runs none of them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{
    AgentBuilder, CancelToken, DynTool, FnTool, Hook, Matcher, RunAgent, RunHooks, ScriptedModel,
    ScriptedStep, Tool, ToolCall, ToolCallContext, ToolContext, ToolResultRecord, TurnRequest,
    TurnStatus, event, tool, tool_progress,
};
use serde_json::{Value, json};
use tests::{Trace, describe_chunk, lines};

/// Upper-cases the text.
#[tool]
fn shout(text: String) -> String {
    text.to_uppercase()
}

/// Counts to two, reporting each number as a preliminary result.
#[tool]
fn count() -> String {
    for n in 1..=2 {
        assert!(tool_progress(n), "a call run on the spot reports");
    }
    "counted".to_owned()
}

/// Panics.
#[tool]
fn explode() -> String {
    panic!("boom")
}

/// Waits, then answers: a tool that is not run on the spot.
#[tool]
async fn wait(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("waited {ms} ms")
}

/// The run hooks' tool events, into the trace.
struct Timeline(Trace);

impl RunHooks for Timeline {
    fn on_tool_start(&self, _: &RunAgent, call: &ToolCall) {
        self.0.push(format!("tool_start:{}", call.id));
    }

    fn on_tool_end(&self, _: &RunAgent, result: &ToolResultRecord) {
        self.0.push(format!("tool_end:{}", result.call_id));
    }
}

/// An agent with the four tools, tracing before_tool_call (sync, or async when `waits`),
/// after_tool_call, on_chunk's tool chunks and the run hooks' tool events.
fn agent(trace: &Trace, model: &ScriptedModel, waits: bool) -> AgentBuilder {
    let (before, after, chunks) = (trace.clone(), trace.clone(), trace.clone());
    let gate = if waits {
        Hook::<event::BeforeToolCall<Value>>::new_async_with(
            "gate",
            before,
            // Async, so no call runs on the spot, but it never waits: the calls' futures
            // are polled exactly as the sync hook's calls run.
            async |trace: &Trace, ctx: &ToolCallContext<Value>| {
                trace.push(format!("before:{}", ctx.call_id));
            },
        )
    } else {
        Hook::<event::BeforeToolCall<Value>>::sync("gate", move |ctx| {
            before.push(format!("before:{}", ctx.call_id));
        })
    };
    AgentBuilder::new("spot")
        .model(model.clone())
        .tool(shout_tool::Shout)
        .tool(count_tool::Count)
        .tool(explode_tool::Explode)
        .tool(wait_tool::Wait)
        .before_tool_call(Matcher::all(), gate)
        .after_tool_call(
            Matcher::all(),
            Hook::<event::AfterToolCall<Value>>::sync("audit", move |ctx| {
                let outcome = if ctx.success() { "ok" } else { "error" };
                let seen = ctx.preliminary;
                after.push(format!(
                    "after:{} {outcome} {seen} preliminary",
                    ctx.call_id
                ));
            }),
        )
        .hook(Hook::<event::OnChunk>::sync("chunks", move |ctx| {
            if matches!(
                ctx.chunk,
                agent_core::Chunk::ToolResult { .. } | agent_core::Chunk::ToolPreliminary { .. }
            ) {
                chunks.push(describe_chunk(&ctx.chunk));
            }
        }))
}

/// One step calling `calls` (id, tool, arguments), then a final answer.
fn model(calls: &[(&str, &str, &str)]) -> ScriptedModel {
    let step = calls
        .iter()
        .fold(ScriptedStep::new(), |step, (id, name, args)| {
            step.tool_call(*id, *name, *args)
        });
    ScriptedModel::new([step, ScriptedStep::new().text("Done.")])
}

/// The trace of a turn over `calls`, with sync hooks or (`waits`) an async before hook, and
/// what the model read of each call.
async fn traced(calls: &[(&str, &str, &str)], waits: bool) -> (Vec<String>, Vec<String>) {
    let trace = Trace::new();
    let model = model(calls);
    let result = agent(&trace, &model, waits)
        .build()
        .unwrap()
        .run(TurnRequest::new("go").run_hooks(Timeline(trace.clone())))
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    let read = model.requests()[1]
        .messages
        .iter()
        .filter(|message| message.role() == "tool")
        .map(|message| message.text().to_owned())
        .collect();
    (trace.take(), read)
}

#[test]
fn a_plain_fn_tool_runs_now_and_an_async_one_does_not() {
    const { assert!(shout_tool::Shout::RUNS_NOW) };
    const { assert!(!wait_tool::Wait::RUNS_NOW) };
    let ctx = ToolContext::new(
        RunAgent::new("spot", "req_1"),
        "c1",
        shout_tool::Shout::NAME,
    );
    let args = shout_tool::ShoutArgs {
        text: "hi".to_owned(),
    };
    assert_eq!(shout_tool::Shout.call_now(args, ctx).unwrap(), "HI");
}

#[tokio::test(start_paused = true)]
async fn calls_run_on_the_spot_keep_the_model_order_with_a_waiting_tool_among_them() {
    let calls = [
        ("c1", "shout", r#"{"text":"a"}"#),
        ("c2", "wait", r#"{"ms":5}"#),
        ("c3", "shout", r#"{"text":"b"}"#),
    ];
    let (on_the_spot, read) = traced(&calls, false).await;
    let expected = [
        "tool_start:c1",
        "before:c1",
        "after:c1 ok 0 preliminary",
        "tool_end:c1",
        "tool_start:c2",
        "before:c2",
        "tool_start:c3",
        "before:c3",
        "after:c3 ok 0 preliminary",
        "tool_end:c3",
        "after:c2 ok 0 preliminary",
        "tool_end:c2",
        "tool_result:c1 shout ok",
        "tool_result:c2 wait ok",
        "tool_result:c3 shout ok",
    ];
    assert_eq!(on_the_spot, lines(&expected));
    assert_eq!(read, ["A", "waited 5 ms", "B"]);
    let (as_futures, read_as_futures) = traced(&calls, true).await;
    assert_eq!(as_futures, on_the_spot);
    assert_eq!(read_as_futures, read);
}

#[tokio::test(start_paused = true)]
async fn preliminary_results_of_a_call_run_on_the_spot_come_before_after_tool_call() {
    let calls = [("c1", "count", "{}"), ("c2", "shout", r#"{"text":"x"}"#)];
    let (on_the_spot, read) = traced(&calls, false).await;
    let expected = [
        "tool_start:c1",
        "before:c1",
        "tool_start:c2",
        "before:c2",
        "after:c2 ok 0 preliminary",
        "tool_end:c2",
        "tool_preliminary:c1 count 1",
        "tool_preliminary:c1 count 2",
        "after:c1 ok 2 preliminary",
        "tool_end:c1",
        "tool_result:c1 count ok",
        "tool_result:c2 shout ok",
    ];
    // The order every call made a future gives with these (sync) hooks: c1 yields once its
    // tool reported, c2 runs meanwhile, then the step forwards c1's preliminary results. (An
    // async hook changes when the step polls the calls, so it is not compared here.)
    assert_eq!(on_the_spot, lines(&expected));
    assert_eq!(read, ["counted", "X"]);
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_a_call_run_on_the_spot_is_an_error_result_and_bad_calls_stay_readable() {
    let calls = [
        ("c1", "explode", "{}"),
        ("c2", "nowhere", "{}"),
        ("c3", "shout", r#"{"text":1}"#),
        ("c4", "shout", r#"{"text":"y"}"#),
    ];
    let (on_the_spot, read) = traced(&calls, false).await;
    let expected = [
        "tool_start:c1",
        "before:c1",
        "after:c1 error 0 preliminary",
        "tool_end:c1",
        "tool_start:c2",
        "tool_end:c2",
        "tool_start:c3",
        "tool_end:c3",
        "tool_start:c4",
        "before:c4",
        "after:c4 ok 0 preliminary",
        "tool_end:c4",
        "tool_result:c1 explode error",
        "tool_result:c2 nowhere error",
        "tool_result:c3 shout error",
        "tool_result:c4 shout ok",
    ];
    assert_eq!(on_the_spot, lines(&expected));
    assert_eq!(read[0], "tool `explode` panicked: boom");
    assert!(read[1].starts_with("unknown tool `nowhere`"), "{}", read[1]);
    assert!(
        read[2].starts_with("invalid arguments for tool `shout`"),
        "{}",
        read[2]
    );
    assert_eq!(read[3], "Y");
    assert_eq!(traced(&calls, true).await, (on_the_spot, read));
}

#[tokio::test(start_paused = true)]
async fn a_turn_cancelled_before_its_calls_runs_none_of_them() {
    static SHOUTED: AtomicUsize = AtomicUsize::new(0);
    /// Counts its calls.
    #[tool]
    fn counted() -> String {
        SHOUTED.fetch_add(1, Ordering::SeqCst);
        "ran".to_owned()
    }
    let token = CancelToken::new();
    let cancel = token.clone();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "counted", "{}")
            .tool_call("c2", "counted", "{}"),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = AgentBuilder::new("spot")
        .model(model)
        .tool(counted_tool::Counted)
        // The reply's last chunk is seen before its calls run.
        .hook(Hook::<event::OnChunk>::sync("stop", move |ctx| {
            if matches!(&ctx.chunk, agent_core::Chunk::ToolCall(call) if call.id.as_str() == "c2") {
                cancel.cancel();
            }
        }))
        .build()
        .unwrap();
    let result = agent.run(TurnRequest::new("go").cancel(token)).await;
    assert_eq!(result.status, TurnStatus::Aborted);
    assert_eq!(SHOUTED.load(Ordering::SeqCst), 0, "no call ran");
}

/// A sync gate that cancels its own turn while the step's calls run on the spot stops the
/// step there, as a cancel before the calls does: the later call's gate and tool do not run
/// (its tool ran before, after the turn was cancelled).
#[tokio::test(start_paused = true)]
async fn a_gate_cancelling_its_turn_on_the_spot_runs_no_later_call() {
    static RAN: AtomicUsize = AtomicUsize::new(0);
    /// Counts its calls.
    #[tool]
    fn tally() -> String {
        RAN.fetch_add(1, Ordering::SeqCst);
        "ran".to_owned()
    }
    let gates = Trace::new();
    let seen = gates.clone();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "tally", "{}")
            .tool_call("c2", "tally", "{}"),
        ScriptedStep::new().text("Done."),
    ]);
    let result = AgentBuilder::new("spot")
        .model(model)
        .tool(tally_tool::Tally)
        .before_tool_call(
            Matcher::tool("tally"),
            Hook::<event::BeforeToolCall<Value>>::sync("kill switch", move |ctx| {
                seen.push(format!("gate {}", ctx.call_id));
                if &*ctx.call_id == "c1" {
                    ctx.cancel.cancel();
                }
            }),
        )
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(result.status, TurnStatus::Aborted);
    assert_eq!(gates.take(), ["gate c1"]);
    assert_eq!(
        RAN.load(Ordering::SeqCst),
        0,
        "no tool ran after the cancel"
    );
}

/// A hand-written tool that says it runs now but implements only `call`.
struct Halfway;

impl Tool for Halfway {
    const NAME: &'static str = "halfway";
    const DESCRIPTION: &'static str = "Says it runs now.";
    const RUNS_NOW: bool = true;
    type Args = Value;
    type Output = String;

    fn schema() -> &'static Value {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| serde_json::json!({"type": "object"}))
    }

    async fn call(&self, _: Value, _: ToolContext) -> Result<String, agent_core::ToolError> {
        Ok("called".to_owned())
    }
}

#[tokio::test]
async fn a_tool_that_runs_now_without_call_now_is_an_error_result_saying_so() {
    let model = model(&[("c1", "halfway", "{}")]);
    let result = AgentBuilder::new("spot")
        .model(model.clone())
        .tool(Halfway)
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    let read = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .text()
        .to_owned();
    assert_eq!(
        read,
        "tool `halfway` sets `RUNS_NOW` but does not implement `call_now`"
    );
}

#[tokio::test]
async fn an_fn_tool_made_sync_runs_on_the_spot_and_its_panic_is_an_error_result() {
    let add = FnTool::sync(
        "add",
        "Adds a and b.",
        json!({"type": "object"}),
        |args, _| {
            let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
            Ok(json!(sum))
        },
    );
    let boom = FnTool::sync("boom", "Panics.", json!({"type": "object"}), |_, _| {
        panic!("sync body")
    });
    assert!(add.runs_now());
    assert!(!FnTool::new("later", "Waits.", json!({}), |args, _| async { Ok(args) }).runs_now());
    let model = model(&[("c1", "add", r#"{"a":2,"b":3}"#), ("c2", "boom", "{}")]);
    let trace = Trace::new();
    let seen = trace.clone();
    let result = AgentBuilder::new("spot")
        .model(model.clone())
        .dyn_tool(add)
        .dyn_tool(boom)
        .after_tool_call(
            Matcher::all(),
            Hook::<event::AfterToolCall<Value>>::sync("audit", move |ctx| {
                seen.push(format!("after:{} {}", ctx.call_id, ctx.success()));
            }),
        )
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(trace.take(), lines(&["after:c1 true", "after:c2 false"]));
    let read: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .filter(|message| message.role() == "tool")
        .map(|message| message.text().to_owned())
        .collect();
    assert_eq!(read, ["5", "tool `boom` panicked: sync body"]);
}

/// A call run on the spot (no result hook) gives after_tool_call the tool's own text as what
/// the model reads, not replaced.
#[tokio::test]
async fn a_call_run_on_the_spot_gives_after_tool_call_what_the_model_reads() {
    let trace = Trace::new();
    let seen = trace.clone();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "shout", r#"{"text":"hi"}"#),
        ScriptedStep::new().text("done"),
    ]);
    let agent = AgentBuilder::new("spot")
        .model(model)
        .tool(shout_tool::Shout)
        .after_tool_call(
            Matcher::all(),
            Hook::<event::AfterToolCall<Value>>::sync("audit", move |ctx| {
                let read = &ctx.model_result;
                seen.push(format!(
                    "after_tool_call({} reads={} error={} replaced={} dropped={})",
                    ctx.call_id, read.content, read.is_error, read.replaced, read.dropped,
                ));
            }),
        )
        .build()
        .unwrap();
    let result = agent.run("shout").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        ["after_tool_call(c1 reads=HI error=false replaced=false dropped=false)"]
    );
}
