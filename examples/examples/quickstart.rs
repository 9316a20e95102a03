//! An agent with two tools whose turn makes two tool calls, run offline against the scripted
//! model. Prints the hook timeline as a tree: event, tool, decision, and microseconds since the
//! turn began, in the order of docs/design.md §5.
//!
//! Run: `cargo run -p examples --example quickstart`

use std::sync::{Arc, Mutex};
use std::time::Instant;

use agent_core::{
    AgentSpec, ChatResponse, Chunk, ChunkContext, LlmEndContext, LlmStartContext, RunContext,
    ScriptedModel, ScriptedStep, StepContext, StepRecord, ToolCallContext, ToolCallDecision,
    ToolCallResultContext, TurnContext, TurnResult, agent,
};
use serde::Serialize;

/// The weather in a city.
#[derive(Clone, Debug, Serialize)]
struct Weather {
    city: String,
    celsius: i32,
    sky: &'static str,
}

/// Records every hook as (depth, label, microseconds since the turn began).
#[derive(Default)]
struct Assistant {
    started: Mutex<Option<Instant>>,
    timeline: Mutex<Vec<(usize, String, u128)>>,
}

impl Assistant {
    fn record(&self, depth: usize, label: impl Into<String>) {
        let started = *self
            .started
            .lock()
            .expect("timeline lock")
            .get_or_insert_with(Instant::now);
        let micros = started.elapsed().as_micros();
        self.timeline
            .lock()
            .expect("timeline lock")
            .push((depth, label.into(), micros));
    }
}

/// Answers questions about the weather and the time in a city.
#[agent(
    instructions = "Answer with the tools' results, briefly.",
    max_steps = 4
)]
impl Assistant {
    /// Current weather in a city.
    #[tool]
    async fn get_weather(
        &self,
        /** The city, e.g. "Oslo". */
        city: String,
    ) -> Weather {
        Weather {
            city,
            celsius: 7,
            sky: "overcast",
        }
    }

    /// Local time in a city (24-hour clock).
    #[tool]
    fn get_time(
        &self,
        /** The city, e.g. "Oslo". */
        city: String,
    ) -> String {
        format!("14:05 in {city}")
    }

    #[hook(before_run)]
    fn before_run(&self, ctx: &RunContext) {
        self.record(0, format!("before_run        input={:?}", ctx.input));
    }

    #[hook(before_turn)]
    fn before_turn(&self, ctx: &TurnContext) {
        self.record(
            0,
            format!(
                "before_turn       {} tools, model {}",
                ctx.tools.len(),
                ctx.model
            ),
        );
    }

    #[hook(before_step)]
    fn before_step(&self, ctx: &StepContext) {
        self.record(1, format!("before_step({})", ctx.step));
    }

    #[hook(on_llm_start)]
    fn on_llm_start(&self, ctx: &LlmStartContext) {
        self.record(
            1,
            format!("on_llm_start      {} messages", ctx.request.messages.len()),
        );
    }

    #[hook(on_chunk)]
    fn on_chunk(&self, ctx: &ChunkContext) {
        let what = match &ctx.chunk {
            Chunk::TextDelta(text) => format!("text {text:?}"),
            Chunk::ReasoningDelta(text) => format!("reasoning {text:?}"),
            Chunk::ToolInputStart { id, name } => format!("tool start {name} ({id})"),
            Chunk::ToolInputDelta { id, .. } => format!("tool input for {id}"),
            Chunk::ToolCall(call) => format!("tool call {}", call.name),
            Chunk::ToolResult { name, .. } => format!("tool result {name}"),
            Chunk::Discarded { reason } => format!("discarded ({reason})"),
            other => format!("{other:?}"),
        };
        self.record(2, format!("on_chunk          {what}"));
    }

    #[hook(on_llm_end)]
    fn on_llm_end(&self, ctx: &LlmEndContext) {
        self.record(
            1,
            format!(
                "on_llm_end        {} tool calls, {}",
                ctx.tool_calls.len(),
                ctx.finish_reason
                    .as_ref()
                    .map_or("no finish reason", |reason| reason.as_str())
            ),
        );
    }

    // One tool matched: the hook receives that tool's own args type.
    #[hook(before_tool_call, tool = "get_time")]
    fn title_case(
        &self,
        ctx: &ToolCallContext<assistant_tools::GetTimeArgs>,
    ) -> ToolCallDecision<assistant_tools::GetTimeArgs> {
        let mut chars = ctx.input.city.chars();
        let city = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        self.record(
            2,
            format!(
                "before_tool_call  get_time -> modify (city {:?} -> {city:?})",
                ctx.input.city
            ),
        );
        ToolCallDecision::Modify(assistant_tools::GetTimeArgs { city })
    }

    #[hook(before_tool_call, tool = "get_weather")]
    fn allow_weather(&self, ctx: &ToolCallContext<assistant_tools::GetWeatherArgs>) {
        self.record(
            2,
            format!(
                "before_tool_call  get_weather -> allow (city {:?})",
                ctx.input.city
            ),
        );
    }

    // No matcher: every tool, seen as JSON.
    #[hook(after_tool_call)]
    fn after_tool_call(&self, ctx: &ToolCallResultContext<serde_json::Value>) {
        let output = ctx.output().map(ToString::to_string).unwrap_or_default();
        self.record(
            2,
            format!(
                "after_tool_call   {} {} in {} µs: {output}",
                ctx.tool_name,
                ctx.outcome.kind(),
                ctx.duration.as_micros()
            ),
        );
    }

    #[hook(on_step_finish)]
    fn on_step_finish(&self, step: &StepRecord) {
        self.record(
            1,
            format!("on_step_finish({}) {}", step.step, step.finish_reason),
        );
    }

    #[hook(after_run)]
    fn after_run(&self, result: &TurnResult) {
        self.record(0, format!("after_run         {} steps", result.steps.len()));
    }

    #[hook(on_chat_response)]
    fn on_chat_response(&self, response: &ChatResponse) {
        self.record(0, format!("on_chat_response  {}", response.status));
    }
}

const USAGE: &str = "usage: quickstart

Runs one offline turn of a small assistant against a scripted model (two tool calls, then an
answer) and prints every hook it fired, with the microseconds since the turn began.";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(arg) = std::env::args().nth(1) {
        if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            return Ok(());
        }
        eprintln!("quickstart: unknown argument `{arg}`\n\n{USAGE}");
        std::process::exit(2);
    }
    // The scripted model plays the part of an LLM: first it asks for both tools, then answers.
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Let me check.")
            .tool_call("call_1", "get_weather", r#"{"city":"Oslo"}"#)
            .tool_call("call_2", "get_time", r#"{"city":"oslo"}"#)
            .usage(120, 30),
        ScriptedStep::new()
            .text("It is 14:05 in Oslo, ")
            .text("7 °C and overcast.")
            .usage(190, 12),
    ]);
    let assistant = Arc::new(Assistant::default());
    let agent = Assistant::shared_builder(assistant.clone())
        .model(model)
        .build()?;
    let result = agent.run("What's the weather and time in Oslo?").await;

    println!("hook timeline (µs since the turn began):");
    for (depth, label, micros) in assistant.timeline.lock().expect("timeline lock").iter() {
        println!("{:>8} µs  {}{label}", micros, "  ".repeat(*depth));
    }
    println!(
        "\nstatus: {}, {} steps, {} tokens",
        result.status,
        result.steps.len(),
        result.usage.total_tokens()
    );
    println!("answer: {}", result.text);
    if !result.is_completed() {
        let error = result
            .error
            .as_ref()
            .map_or(String::new(), ToString::to_string);
        return Err(format!("the turn ended {}: {error}", result.status).into());
    }
    Ok(())
}
