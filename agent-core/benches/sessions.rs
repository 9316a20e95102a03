//! Many sessions at once (docs/design.md §9): `SESSIONS` conversations (10,000 by default) on
//! one agent and one `MemoryStore`, each running one turn at the same time: a model call that
//! asks for a tool call, the tool, a second model call streaming 50 text chunks, with an
//! on_chunk hook and a before/after tool-call hook pair attached. The model holds each call
//! `HOLD_MS` (1,000 ms by default) before it answers, as a remote model would, so the turns'
//! own time is two holds; no network is involved.
//!
//! Run with `cargo bench -p agent-core --bench sessions` (`SESSIONS=1000 HOLD_MS=200` for a
//! quicker run). It does two things, in this order:
//!
//! 1. In a fresh process, on a multi-thread Tokio runtime and the real clock: runs the turns
//!    and prints the peak resident set (`VmHWM` of `/proc/self/status`), the resident set
//!    before the conversations were opened, the wall time and its ratio to the model's own
//!    time (two holds).
//! 2. divan's `heap` group, on a current-thread runtime with a paused clock (the holds cost no
//!    time), counting every allocation: `max alloc` is the most heap bytes live at once while
//!    `n` turns run together (each session with its turn in flight), and
//!    `alloc + grow - dealloc` what the `n` idle sessions keep after their turn (its four rows,
//!    the conversation handle and the store's entry). Divide both by `n`.

use std::hint::black_box;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use agent_core::{
    __private, Agent, AgentBuilder, AnyValue, ChunkContext, Conversation, DynTool, FinishReason,
    Hook, Matcher, MemoryStore, Message, Model, ModelEvent, ModelRequest, ModelStream, Tool,
    ToolCall, ToolCallDecision, ToolContext, ToolError, ToolInput, TurnResult, TurnStatus, event,
    schema_for,
};
use divan::{AllocProfiler, Bencher};
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    concurrent_rss();
    divan::main();
}

/// Text chunks the second model call streams.
const CHUNKS: usize = 50;

/// A number from the environment, or its default.
fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// A model that holds every call for `hold`, then answers at once: with one tool call when the
/// conversation ends with the user's message, with [`CHUNKS`] text chunks once it ends with
/// the tool's result. It keeps nothing of the request (a remote model's memory is not ours).
struct HeldModel {
    hold: Duration,
}

impl Model for HeldModel {
    fn id(&self) -> &str {
        "held"
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let answered = matches!(request.messages.last(), Some(Message::Tool { .. }));
        drop(request);
        let hold = self.hold;
        Box::pin(async_stream::stream! {
            tokio::time::sleep(hold).await;
            if answered {
                for _ in 0..CHUNKS {
                    yield Ok(ModelEvent::TextDelta("tok ".into()));
                }
                yield Ok(ModelEvent::Finish(FinishReason::Stop));
            } else {
                yield Ok(ModelEvent::ToolCall(ToolCall::new("call_1", ForecastTool::NAME, ARGS)));
                yield Ok(ModelEvent::Finish(FinishReason::ToolCalls));
            }
        })
    }
}

/// The arguments of the benchmark tool.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct ForecastArgs {
    city: String,
    days: u8,
}

#[derive(Clone, Debug, Serialize)]
struct Forecast {
    city: String,
    high: i32,
    low: i32,
}

const ARGS: &str = r#"{"city":"Lisbon","days":3}"#;

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
        Ok(Forecast {
            city: args.city,
            high: 21 + i32::from(args.days),
            low: 12,
        })
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

/// The agent every session runs: the held model, the tool, a before/after tool-call hook pair
/// and an on_chunk hook, on a `MemoryStore`.
fn agent(hold: Duration) -> Agent {
    AgentBuilder::new("sessions")
        .model(HeldModel { hold })
        .store(Arc::new(MemoryStore::new()))
        .tool(ForecastTool)
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
        )
        .hook(Hook::<event::OnChunk>::sync(
            "chunks",
            |ctx: &ChunkContext| {
                black_box(&ctx.chunk);
            },
        ))
        .build()
        .expect("agent builds")
}

/// Checks a turn did what the benchmark claims: two steps, the tool's result, 50 chunks.
fn check(result: &TurnResult) {
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.steps.len(), 2, "steps");
    assert_eq!(result.text.len(), 4 * CHUNKS, "answer length");
}

/// Runs one turn on each conversation, all at once, and checks each.
async fn run_all(conversations: &[Conversation]) {
    let turns: Vec<_> = conversations
        .iter()
        .map(|conversation| {
            let conversation = conversation.clone();
            tokio::spawn(async move {
                let result = conversation.run("What is the forecast for Lisbon?").await;
                check(&result);
            })
        })
        .collect();
    for turn in turns {
        turn.await.expect("turn task");
    }
}

/// A field of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`); 0 where there is none.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Part 1: the sessions on the real clock, in this fresh process; prints what it measured.
fn concurrent_rss() {
    let sessions = setting("SESSIONS", 10_000) as usize;
    let hold = Duration::from_millis(setting("HOLD_MS", 1_000));
    if sessions == 0 {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .expect("tokio runtime");
    let agent = agent(hold);
    let before = status_kib("VmRSS");
    let conversations: Vec<Conversation> = (0..sessions).map(|_| agent.conversation()).collect();
    let started = Instant::now();
    runtime.block_on(run_all(&conversations));
    let wall = started.elapsed();
    let peak = status_kib("VmHWM");
    let after = status_kib("VmRSS");
    let model = hold * 2;
    println!(
        "sessions: {sessions} concurrent turns (1 tool call, {CHUNKS} chunks, each model call held \
         {} ms)",
        hold.as_millis()
    );
    println!(
        "  wall time {:.3} s = {:.3}x the model's own {:.3} s",
        wall.as_secs_f64(),
        wall.as_secs_f64() / model.as_secs_f64(),
        model.as_secs_f64()
    );
    println!(
        "  peak RSS {:.1} MiB (VmHWM; {:.1} MiB before the sessions opened, {:.1} MiB after \
         the turns, {:.1} KiB a session over the start)",
        mib(peak),
        mib(before),
        mib(after),
        (peak.saturating_sub(before)) as f64 / sessions as f64
    );
    drop(conversations);
}

/// A current-thread runtime on a paused clock: every hold passes at once, and the whole run
/// happens on the benchmark's thread, where divan counts the allocations.
fn paused_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime")
}

/// Part 2: per-session heap (see the module doc for how to read divan's columns).
mod heap {
    use super::*;

    /// Opens `n` conversations, runs their turns at once and keeps the conversations (dropped
    /// after the timed region): `max alloc / n` is a session with its turn in flight,
    /// `(alloc + grow - dealloc) / n` an idle session after its turn.
    #[divan::bench(args = [1_000], sample_count = 10, sample_size = 1)]
    fn sessions_with_one_turn(bencher: Bencher, n: usize) {
        let runtime = paused_runtime();
        bencher
            .with_inputs(|| agent(Duration::from_secs(1)))
            .bench_local_refs(|agent| {
                runtime.block_on(async {
                    let conversations: Vec<Conversation> =
                        (0..n).map(|_| agent.conversation()).collect();
                    run_all(&conversations).await;
                    conversations
                })
            });
    }
}
