//! Chat with a real model from the terminal: the answer streams as it arrives (each tool named
//! as its call starts, `[calling current_time…]`), then the hook timeline is printed. Configured from the environment, so pointing `OPENAI_BASE_URL` at Ollama
//! or any OpenAI-compatible server just works.
//!
//! ```sh
//! OPENAI_API_KEY=... cargo run -p examples --example chat_cli -- --provider openai "What time is it?"
//! ANTHROPIC_API_KEY=... cargo run -p examples --example chat_cli -- --provider anthropic "Summarise Cargo.toml"
//! OPENAI_BASE_URL=http://localhost:11434/v1 cargo run -p examples --example chat_cli -- --provider openai --model llama3.2 "hi"
//! ```

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use agent_core::{
    AgentSpec, Chunk, ChunkContext, LlmEndContext, Model, StepRecord, ToolCallResultContext,
    ToolError, TurnEvent, agent,
};
use agent_providers::{Anthropic, OpenAi};

const USAGE: &str = "usage: chat_cli --provider openai|anthropic [--model MODEL] \"prompt\"

environment:
  openai:     OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server such as Ollama)
  anthropic:  ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL)";

/// A small assistant with a clock and read access to the working directory.
struct Assistant {
    root: PathBuf,
    started: Instant,
    timeline: Mutex<Vec<String>>,
}

impl Assistant {
    fn record(&self, entry: String) {
        let micros = self.started.elapsed().as_micros();
        self.timeline
            .lock()
            .expect("timeline lock")
            .push(format!("{micros:>10} µs  {entry}"));
    }
}

/// Answers questions, using the clock and the files under the working directory.
#[agent(
    instructions = "You are a concise assistant. Use the tools when they help.",
    max_steps = 6
)]
impl Assistant {
    /// The current date and time in UTC (ISO 8601).
    #[tool]
    fn current_time(&self) -> String {
        utc_now()
    }

    /// Read a UTF-8 text file under the working directory (at most 20 000 characters).
    #[tool]
    fn read_file(
        &self,
        /** A path relative to the working directory. */
        path: String,
    ) -> Result<String, ToolError> {
        let relative = Path::new(&path);
        if relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(ToolError::new(
                "only paths inside the working directory can be read",
            ));
        }
        let text = std::fs::read_to_string(self.root.join(relative))?;
        Ok(text.chars().take(20_000).collect())
    }

    #[hook(on_chunk)]
    fn print_text(&self, ctx: &ChunkContext) {
        match &ctx.chunk {
            Chunk::ToolCall(call) => self.record(format!(
                "  on_chunk tool call {}({})",
                call.name, call.arguments
            )),
            Chunk::Discarded { reason } => self.record(format!("  on_chunk discarded: {reason}")),
            _ => {}
        }
    }

    #[hook(after_tool_call)]
    fn after_tool_call(&self, ctx: &ToolCallResultContext<serde_json::Value>) {
        self.record(format!(
            "    after_tool_call {} {} in {} µs",
            ctx.tool_name,
            ctx.outcome.kind(),
            ctx.duration.as_micros()
        ));
    }

    #[hook(on_llm_end)]
    fn on_llm_end(&self, ctx: &LlmEndContext) {
        self.record(format!(
            "  on_llm_end step {} model {}: {} in / {} out tokens, {} ms",
            ctx.step,
            ctx.model,
            ctx.usage.input_tokens,
            ctx.usage.output_tokens,
            ctx.latency.as_millis()
        ));
    }

    #[hook(on_step_finish)]
    fn on_step_finish(&self, step: &StepRecord) {
        self.record(format!(
            "on_step_finish({}) {}",
            step.step, step.finish_reason
        ));
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` from the system clock (civil-from-days, no dependency).
fn utc_now() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

struct Args {
    provider: String,
    model: Option<String>,
    prompt: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut provider, mut model, mut prompt) = (None, None, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--provider" => provider = Some(args.next().ok_or("--provider needs a value")?),
            "--model" => model = Some(args.next().ok_or("--model needs a value")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other if other.starts_with("--") => return Err(format!("unknown option `{other}`")),
            other => prompt.push(other.to_owned()),
        }
    }
    let provider = provider.ok_or("--provider is required")?;
    if prompt.is_empty() {
        return Err("a prompt is required".to_owned());
    }
    Ok(Args {
        provider,
        model,
        prompt: prompt.join(" "),
    })
}

fn model(args: &Args) -> Result<Box<dyn Model>, String> {
    match args.provider.as_str() {
        "openai" => {
            let client = OpenAi::from_env().map_err(|e| e.to_string())?;
            Ok(Box::new(match &args.model {
                Some(model) => client.model(model),
                None => client,
            }))
        }
        "anthropic" => {
            let client = Anthropic::from_env().map_err(|e| e.to_string())?;
            Ok(Box::new(match &args.model {
                Some(model) => client.model(model),
                None => client,
            }))
        }
        other => Err(format!(
            "unknown provider `{other}`: use openai or anthropic"
        )),
    }
}

struct BoxedModel(Box<dyn Model>);

impl Model for BoxedModel {
    fn id(&self) -> &str {
        self.0.id()
    }

    fn stream(&self, request: agent_core::ModelRequest) -> agent_core::ModelStream {
        self.0.stream(request)
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("chat_cli: {problem}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let model = match model(&args) {
        Ok(model) => model,
        Err(problem) => {
            eprintln!("chat_cli: {problem}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let assistant = Arc::new(Assistant {
        root,
        started: Instant::now(),
        timeline: Mutex::new(Vec::new()),
    });
    let agent = match Assistant::shared_builder(assistant.clone())
        .model(BoxedModel(model))
        .build()
    {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("chat_cli: {error}");
            return ExitCode::FAILURE;
        }
    };

    let mut events = agent.conversation().stream(args.prompt.as_str());
    let mut stdout = std::io::stdout();
    let mut result = None;
    while let Some(event) = events.next().await {
        match event {
            TurnEvent::Chunk {
                chunk: Chunk::TextDelta(text),
                ..
            } => {
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
            }
            // A tool call begins: say which tool before its arguments stream.
            TurnEvent::Chunk {
                chunk: Chunk::ToolInputStart { name, .. },
                ..
            } => println!("[calling {name}…]"),
            // The provider broke off and is retrying the step from its start: what this step
            // printed so far is void. It is on the screen already, so it is marked as such;
            // the retried attempt's text follows, once.
            TurnEvent::Chunk {
                chunk: Chunk::Discarded { reason },
                ..
            } => {
                println!("\n[discarded: the stream broke ({reason}); retrying]");
            }
            TurnEvent::StepFinished(step) if !step.text.is_empty() => println!(),
            TurnEvent::Finished(finished) => result = Some(finished),
            _ => {}
        }
    }
    println!("\nhook timeline:");
    for entry in assistant.timeline.lock().expect("timeline lock").iter() {
        println!("{entry}");
    }
    match result {
        Some(result) if result.is_completed() => {
            println!(
                "\n{}, {} steps, {} tokens",
                result.status,
                result.steps.len(),
                result.usage.total_tokens()
            );
            ExitCode::SUCCESS
        }
        Some(result) => {
            let error = result.error.map(|e| e.to_string()).unwrap_or_default();
            eprintln!("\nthe turn ended {}: {error}", result.status);
            ExitCode::FAILURE
        }
        None => ExitCode::FAILURE,
    }
}
