//! Engine hot paths (docs/design.md §9): on_chunk dispatch, one tool-call step, and long streams.
//!
//! Run with `cargo bench -p agent-core` (add a filter such as `-- on_chunk` to run one group).
//!
//! Every benchmark drives whole turns through the public API (`Agent::run` on a
//! [`ScriptedModel`]) on a current-thread Tokio runtime built once per benchmark. Each iteration
//! gets a freshly built agent and model from divan's input generator, which is not timed: the
//! scripted model records every request and the default store keeps every session, so reusing
//! one agent would make later iterations carry the history of earlier ones. What is timed is
//! `block_on(agent.run(..))`: opening a one-turn conversation and running the turn to its
//! result, persisting included; dropping the result is deferred past the timed region by divan.
//!
//! Allocation counts per iteration come from divan's [`AllocProfiler`] (it adds a few ns per
//! allocation to every timing, floors included).

use std::hint::black_box;
use std::sync::{Arc, OnceLock};

use agent_core::{
    __private, Agent, AgentBuilder, AnyValue, ChunkContext, DynTool, Extension, ExtensionEvent,
    Hook, Matcher, RunAgent, ScriptedModel, ScriptedStep, Tool, ToolCallDecision, ToolContext,
    ToolError, ToolInput, TurnResult, TurnStatus, TypedTool, event, schema_for,
};
use divan::counter::ItemsCount;
use divan::{AllocProfiler, Bencher};
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

/// A current-thread runtime: the whole turn runs on the benchmark's thread.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime")
}

/// One model step streaming `n` text chunks of `piece` each.
fn text_step(n: usize, piece: &str) -> ScriptedStep {
    (0..n).fold(ScriptedStep::new(), |step, _| step.text(piece))
}

/// An agent on a fresh scripted model, with `hooks` sync on_chunk observers.
fn chunk_agent(step: &ScriptedStep, hooks: usize) -> Agent {
    (0..hooks)
        .fold(
            AgentBuilder::new("bench").model(ScriptedModel::new([step.clone()])),
            |builder, i| {
                builder.hook(Hook::<event::OnChunk>::sync(
                    format!("observer_{i}"),
                    |ctx: &ChunkContext| {
                        black_box(&ctx.chunk);
                    },
                ))
            },
        )
        .build()
        .expect("agent builds")
}

/// Runs one turn outside any measurement and checks it did what the benchmark claims.
fn check(rt: &Runtime, agent: &Agent, text_len: usize, steps: usize) {
    let result = rt.block_on(agent.run("go"));
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text.len(), text_len, "answer length");
    assert_eq!(result.steps.len(), steps, "steps");
}

fn run(rt: &Runtime, agent: &Agent) -> TurnResult {
    rt.block_on(agent.run(black_box("go")))
}

/// on_chunk dispatch in its real place: a streamed turn of `CHUNKS` text chunks with 0, 1 or 8
/// sync observers. Throughput is per chunk.
mod on_chunk {
    use super::*;

    const CHUNKS: usize = 1_000;

    /// Realistic chunks ("tok ", 4 bytes): the per-chunk time includes the model stream, the
    /// accumulation, dropping the chunk's `String` and the hooks.
    #[divan::bench(args = [0, 1, 8], sample_count = 1000)]
    fn streamed_turn(bencher: Bencher, hooks: usize) {
        let rt = runtime();
        let step = text_step(CHUNKS, "tok ");
        check(&rt, &chunk_agent(&step, hooks), 4 * CHUNKS, 1);
        bencher
            .counter(ItemsCount::new(CHUNKS))
            .with_inputs(|| chunk_agent(&step, hooks))
            .bench_local_refs(|agent| run(&rt, agent));
    }

    /// The same turn with empty chunks: no text is allocated, copied or freed per chunk, so the
    /// differences are the dispatch: `(hooks=8 - hooks=1) / 7` per additional hook per chunk,
    /// and `hooks=1 - hooks=0` for the first one, which adds the once-per-chunk context (skipped
    /// when nobody listens).
    #[divan::bench(args = [0, 1, 8], sample_count = 1000)]
    fn dispatch_only(bencher: Bencher, hooks: usize) {
        let rt = runtime();
        let step = text_step(CHUNKS, "");
        check(&rt, &chunk_agent(&step, hooks), 0, 1);
        bencher
            .counter(ItemsCount::new(CHUNKS))
            .with_inputs(|| chunk_agent(&step, hooks))
            .bench_local_refs(|agent| run(&rt, agent));
    }

    /// The empty-chunk turn with an extension subscribed to onChunk for tool calls only: the
    /// text chunks it ignores build no snapshot (compare the allocations with `dispatch_only`).
    #[divan::bench(sample_count = 1000)]
    fn extension_ignoring_text(bencher: Bencher) {
        let rt = runtime();
        let step = text_step(CHUNKS, "");
        let agent = |step: &ScriptedStep| {
            let calls_only = Extension::new("calls", |_, snapshot| async move {
                black_box(snapshot);
                Ok(serde_json::Value::Null)
            })
            .subscribe([ExtensionEvent::OnChunk])
            .chunk_types(["tool-call"]);
            AgentBuilder::new("bench")
                .model(ScriptedModel::new([step.clone()]))
                .extension(calls_only)
                .build()
                .expect("agent builds")
        };
        check(&rt, &agent(&step), 0, 1);
        bencher
            .counter(ItemsCount::new(CHUNKS))
            .with_inputs(|| agent(&step))
            .bench_local_refs(|agent| run(&rt, agent));
    }
}

/// A streamed turn of 1k, 10k and 100k text chunks with one on_chunk observer: the time per
/// chunk must not grow with the length (accumulation is linear).
mod stream_length {
    use super::*;

    #[divan::bench(args = [1_000, 10_000, 100_000], sample_count = 100, sample_size = 1)]
    fn streamed_turn(bencher: Bencher, chunks: usize) {
        let rt = runtime();
        let step = text_step(chunks, "tok ");
        check(&rt, &chunk_agent(&step, 1), 4 * chunks, 1);
        bencher
            .counter(ItemsCount::new(chunks))
            .with_inputs(|| chunk_agent(&step, 1))
            .bench_local_refs(|agent| run(&rt, agent));
    }

    /// The same through the stream API (`Conversation::stream`): the turn runs on a spawned
    /// task and every chunk also crosses the event channel to the consumer.
    #[divan::bench(args = [1_000, 10_000, 100_000], sample_count = 100, sample_size = 1)]
    fn stream_api(bencher: Bencher, chunks: usize) {
        let rt = runtime();
        let step = text_step(chunks, "tok ");
        bencher
            .counter(ItemsCount::new(chunks))
            .with_inputs(|| chunk_agent(&step, 1))
            .bench_local_refs(|agent| {
                rt.block_on(async {
                    let mut stream = agent.conversation().stream(black_box("go"));
                    let mut events = 0usize;
                    while let Some(event) = stream.next().await {
                        black_box(&event);
                        events += 1;
                    }
                    assert_eq!(events, chunks + 2);
                    events
                })
            });
    }
}

/// The arguments of the benchmark tool: a typical small object (a string, an enum, a number,
/// a list).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct ForecastArgs {
    city: String,
    units: Units,
    days: u8,
    fields: Vec<String>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Units {
    Celsius,
    Fahrenheit,
}

#[derive(Clone, Debug, Serialize)]
struct Forecast {
    city: String,
    high: i32,
    low: i32,
}

const ARGS: &str = r#"{"city":"Lisbon","units":"celsius","days":3,"fields":["temp","wind"]}"#;

/// The tool's body, callable directly for the floor.
fn forecast(args: ForecastArgs) -> Forecast {
    let offset = i32::from(args.days) + args.fields.len() as i32;
    let (high, low) = match args.units {
        Units::Celsius => (21 + offset, 12),
        Units::Fahrenheit => (70 + offset, 54),
    };
    Forecast {
        city: args.city,
        high,
        low,
    }
}

struct ForecastTool;

impl Tool for ForecastTool {
    const NAME: &'static str = "forecast";
    const DESCRIPTION: &'static str = "The weather forecast for a city.";
    type Args = ForecastArgs;
    type Output = Forecast;
    fn schema() -> &'static serde_json::Value {
        static SCHEMA: OnceLock<serde_json::Value> = OnceLock::new();
        SCHEMA.get_or_init(schema_for::<ForecastArgs>)
    }
    async fn call(&self, args: ForecastArgs, _ctx: ToolContext) -> Result<Forecast, ToolError> {
        Ok(forecast(args))
    }
}

impl ToolInput for ForecastArgs {
    type Output = Forecast;
    fn accepts(tool: &str) -> bool {
        tool == ForecastTool::NAME
    }
    fn from_args(tool: &str, args: &AnyValue) -> Option<Self> {
        __private::args_from(tool, ForecastTool::NAME, args)
    }
    fn into_args(self, tool: &dyn DynTool) -> Result<AnyValue, String> {
        __private::args_into(self, ForecastTool::NAME, tool)
    }
}

/// One tool-call step. The engine numbers are whole turns; a tool-call step is
/// `turn_one_call - turn_no_tool` and one more call in a step is
/// `turn_two_calls - turn_one_call`, with the same hooks.
mod tool_call {
    use super::*;

    /// The floor: serde_json parses the arguments into the struct and the tool's function is
    /// called directly.
    #[divan::bench(sample_count = 5000)]
    fn floor_parse_call(bencher: Bencher) {
        bencher.bench_local(|| {
            let args: ForecastArgs = serde_json::from_str(black_box(ARGS)).expect("valid");
            forecast(args)
        });
    }

    /// The floor plus serializing the output to the JSON text the model reads.
    #[divan::bench(sample_count = 5000)]
    fn floor_parse_call_serialize(bencher: Bencher) {
        bencher.bench_local(|| {
            let args: ForecastArgs = serde_json::from_str(black_box(ARGS)).expect("valid");
            serde_json::to_string(&forecast(args)).expect("serializable")
        });
    }

    /// The erased tool through the public `DynTool` API, without turn or hooks: `parse_args`,
    /// `call` (a boxed future, run with `block_on`) and `to_model_text`.
    #[divan::bench(sample_count = 5000)]
    fn dyn_tool_parse_call_text(bencher: Bencher) {
        let rt = runtime();
        let tool = TypedTool::new(ForecastTool);
        let ctx = ToolContext::new(RunAgent::new("bench", "req_1"), "c1", ForecastTool::NAME);
        bencher.bench_local(|| {
            let args = tool.parse_args(black_box(ARGS)).expect("valid");
            let ctx = ctx.clone();
            let output = rt
                .block_on(tool.call(Arc::new(args), ctx))
                .expect("tool runs");
            output.to_model_text().expect("serializable")
        });
    }

    #[derive(Clone, Copy, Debug)]
    enum Hooks {
        None,
        Pair,
    }

    fn tool_agent(steps: &[ScriptedStep], hooks: Hooks) -> Agent {
        let builder = AgentBuilder::new("bench")
            .model(ScriptedModel::new(steps.iter().cloned()))
            .tool(ForecastTool);
        let builder = match hooks {
            Hooks::None => builder,
            Hooks::Pair => builder
                .before_tool_call(
                    Matcher::tool(ForecastTool::NAME),
                    Hook::<event::BeforeToolCall<ForecastArgs>>::sync("guard", |ctx| {
                        if ctx.input.days > 14 {
                            ToolCallDecision::block("at most 14 days")
                        } else {
                            ToolCallDecision::Allow
                        }
                    }),
                )
                .after_tool_call(
                    Matcher::tool(ForecastTool::NAME),
                    Hook::<event::AfterToolCall<ForecastArgs, Forecast>>::sync("audit", |ctx| {
                        black_box(ctx.output());
                    }),
                ),
        };
        builder.build().expect("agent builds")
    }

    fn calls_step(calls: usize) -> ScriptedStep {
        (0..calls).fold(ScriptedStep::new(), |step, i| {
            step.tool_call(format!("call_{i}"), ForecastTool::NAME, ARGS)
        })
    }

    fn bench_turn(bencher: Bencher, steps: Vec<ScriptedStep>, hooks: Hooks, expect_steps: usize) {
        let rt = runtime();
        let agent = tool_agent(&steps, hooks);
        check(&rt, &agent, "done".len(), expect_steps);
        let result = rt.block_on(tool_agent(&steps, hooks).run("go"));
        for record in result.steps.iter().flat_map(|s| &s.tool_results) {
            assert!(!record.is_error, "{record:?}");
            assert_eq!(record.content, r#"{"city":"Lisbon","high":26,"low":12}"#);
        }
        bencher
            .with_inputs(|| tool_agent(&steps, hooks))
            .bench_local_refs(|agent| run(&rt, agent));
    }

    /// Baseline: a one-step turn that answers "done" without calling a tool.
    #[divan::bench(sample_count = 5000)]
    fn turn_no_tool(bencher: Bencher) {
        bench_turn(
            bencher,
            vec![ScriptedStep::new().text("done")],
            Hooks::None,
            1,
        );
    }

    /// A two-step turn: one tool call, then "done". Minus `turn_no_tool`: one tool-call step
    /// (the extra model step, the call and its result message).
    #[divan::bench(args = [Hooks::None, Hooks::Pair], sample_count = 5000)]
    fn turn_one_call(bencher: Bencher, hooks: Hooks) {
        let steps = vec![calls_step(1), ScriptedStep::new().text("done")];
        bench_turn(bencher, steps, hooks, 2);
    }

    /// Two calls in the first step. Minus `turn_one_call`: one more call in a step.
    #[divan::bench(args = [Hooks::None, Hooks::Pair], sample_count = 5000)]
    fn turn_two_calls(bencher: Bencher, hooks: Hooks) {
        let steps = vec![calls_step(2), ScriptedStep::new().text("done")];
        bench_turn(bencher, steps, hooks, 2);
    }

    /// Two agents: the first hands off (one transfer call) and the second answers "done". The
    /// same two model steps as `turn_one_call`, with a handoff in place of the tool call.
    #[divan::bench(sample_count = 5000)]
    fn turn_handoff(bencher: Bencher) {
        let rt = runtime();
        let agents = || {
            let target = AgentBuilder::new("target")
                .model(ScriptedModel::new([ScriptedStep::new().text("done")]))
                .build()
                .expect("target builds");
            AgentBuilder::new("bench")
                .model(ScriptedModel::new([ScriptedStep::new().tool_call(
                    "h1",
                    "transfer_to_target",
                    "{}",
                )]))
                .handoff(&target)
                .build()
                .expect("agent builds")
        };
        check(&rt, &agents(), "done".len(), 2);
        bencher
            .with_inputs(agents)
            .bench_local_refs(|agent| run(&rt, agent));
    }

    /// A turn of `steps` tool-call steps (a short text and one call each), then "done";
    /// throughput is per step. Each step hands the model its own copy of the history so far
    /// (`ModelRequest` owns its messages, and the scripted model keeps every request), so the
    /// time per step grows with the turn's length: this shows by how much.
    #[divan::bench(args = [1, 4, 16, 64], sample_count = 300)]
    fn turn_many_steps(bencher: Bencher, steps: usize) {
        let rt = runtime();
        let mut script: Vec<ScriptedStep> = (0..steps)
            .map(|i| {
                ScriptedStep::new()
                    .text("Checking the forecast.")
                    .tool_call(format!("call_{i}"), ForecastTool::NAME, ARGS)
            })
            .collect();
        script.push(ScriptedStep::new().text("done"));
        let agent = |script: &[ScriptedStep]| {
            AgentBuilder::new("bench")
                .model(ScriptedModel::new(script.iter().cloned()))
                .tool(ForecastTool)
                .max_steps(steps + 1)
                .build()
                .expect("agent builds")
        };
        check(&rt, &agent(&script), "done".len(), steps + 1);
        bencher
            .counter(ItemsCount::new(steps))
            .with_inputs(|| agent(&script))
            .bench_local_refs(|agent| run(&rt, agent));
    }
}

/// A typed turn against a text turn on the same scripted model (one step answering the same
/// JSON, no stream API, so no partial values): the typed turn should cost about one parse of
/// the answer more (`floor_from_str`: what the engine does with it).
mod typed_output {
    use super::*;
    use agent_core::OutputMode;

    #[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
    struct Invoice {
        number: String,
        customer: String,
        lines: Vec<Line>,
        total_cents: u64,
    }

    #[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
    struct Line {
        description: String,
        quantity: u32,
        unit_cents: u64,
    }

    /// A typical answer (383 bytes), its keys in the order `Invoice` declares them (the typed
    /// turn's text is the model's own, this text, in every mode here).
    const ANSWER: &str = r#"{"number":"INV-2024-0117","customer":"Acme Logistics GmbH","lines":[{"description":"Freight, Lisbon to Hamburg","quantity":2,"unit_cents":48500},{"description":"Customs clearance","quantity":1,"unit_cents":12000},{"description":"Insurance (cargo value 18,000 EUR)","quantity":1,"unit_cents":5400},{"description":"Fuel surcharge","quantity":2,"unit_cents":3150}],"total_cents":120700}"#;

    /// The answer streamed in 8 pieces, as text or as a final-answer call's arguments.
    fn pieces() -> Vec<&'static str> {
        let size = ANSWER.len().div_ceil(8);
        let mut pieces = Vec::new();
        let mut rest = ANSWER;
        while !rest.is_empty() {
            let (piece, tail) = rest.split_at(size.min(rest.len()));
            pieces.push(piece);
            rest = tail;
        }
        pieces
    }

    /// How the turn answers.
    #[derive(Clone, Copy, Debug)]
    enum Answer {
        /// No output type: the text is the answer.
        Text,
        /// `Invoice` in the native mode: the same text, parsed and validated.
        Native,
        /// `Invoice` in the prompted mode: the same text (the schema in the system prompt).
        Prompted,
        /// `Invoice` by the final-answer tool: the answer as the call's arguments (the model
        /// script differs; the call also gets its result row).
        Tool,
    }

    fn agent(answer: Answer) -> Agent {
        let step = match answer {
            Answer::Tool => ScriptedStep::new().streamed_tool_call("c1", "final_result", pieces()),
            _ => pieces()
                .into_iter()
                .fold(ScriptedStep::new(), |step, piece| step.text(piece)),
        };
        let builder =
            AgentBuilder::new("bench").model(ScriptedModel::new([step]).supporting_output_schema());
        let builder = match answer {
            Answer::Text => builder,
            Answer::Native => builder.output::<Invoice>().output_mode(OutputMode::Native),
            Answer::Prompted => builder
                .output::<Invoice>()
                .output_mode(OutputMode::Prompted),
            Answer::Tool => builder.output::<Invoice>().output_mode(OutputMode::Tool),
        };
        builder.build().expect("agent builds")
    }

    /// What the engine did with the answer's text before it kept the model's own JSON as the
    /// turn's `text`: parsed into the type, and the value written back as text.
    #[divan::bench(sample_count = 5000)]
    fn floor_parse(bencher: Bencher) {
        bencher.bench_local(|| {
            let value: Invoice = serde_json::from_str(black_box(ANSWER)).expect("an invoice");
            let text = serde_json::to_string(&value).expect("serializable");
            (value, text)
        });
    }

    /// The least a typed answer could cost, and what the engine does with an answer that is
    /// the model's own JSON: serde_json straight from the text into the type (the text kept).
    #[divan::bench(sample_count = 5000)]
    fn floor_from_str(bencher: Bencher) {
        bencher.bench_local(|| serde_json::from_str::<Invoice>(black_box(ANSWER)).expect("json"));
    }

    /// What naming the JSON path of an error costs when parsing: `serde_path_to_error` over
    /// the same text (the engine takes it only to say why an answer failed).
    #[divan::bench(sample_count = 5000)]
    fn path_tracking(bencher: Bencher) {
        bencher.bench_local(|| {
            let mut json = serde_json::Deserializer::from_str(black_box(ANSWER));
            let value: Invoice = serde_path_to_error::deserialize(&mut json).expect("an invoice");
            value
        });
    }

    /// One turn answering `ANSWER`. `Native` (or `Prompted`) minus `Text`: what a typed answer
    /// costs over a text one.
    #[divan::bench(args = [Answer::Text, Answer::Native, Answer::Prompted, Answer::Tool], sample_count = 5000)]
    fn turn(bencher: Bencher, answer: Answer) {
        let rt = runtime();
        let result = rt.block_on(agent(answer).run("go"));
        assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
        assert_eq!(result.text, ANSWER);
        assert_eq!(
            result.output.is_some(),
            !matches!(answer, Answer::Text),
            "typed output"
        );
        bencher
            .with_inputs(|| agent(answer))
            .bench_local_refs(|agent| run(&rt, agent));
    }
}
