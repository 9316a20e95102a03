//! `#[agent]`, `#[tool]` and `#[hook]` together: the DSL of docs/design.md §2, run against the scripted model.

use std::sync::Mutex;

use agent_core::{
    AgentSpec, ChunkContext, ScriptedModel, ScriptedStep, ToolCallContext, ToolCallDecision,
    ToolCallResultContext, ToolError, TurnStatus, agent,
};
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
struct Weather {
    city: String,
    celsius: i32,
}

#[derive(Default)]
struct FileAgent {
    log: Mutex<Vec<String>>,
}

impl FileAgent {
    fn note(&self, entry: String) {
        self.log.lock().unwrap().push(entry);
    }
}

/// Reads and writes files inside a sandboxed workspace.
#[agent(instructions = "You are a careful file assistant.", max_steps = 8)]
impl FileAgent {
    /// Read a UTF-8 text file.
    #[tool]
    async fn read_file(
        &self,
        /** Path relative to the workspace root. */
        path: String,
    ) -> Result<String, ToolError> {
        self.note(format!("read_file({path})"));
        Ok(format!("contents of {path}"))
    }

    /// Replace a file's contents.
    #[tool]
    fn write_file(&self, path: String, contents: String) -> Result<usize, ToolError> {
        self.note(format!("write_file({path})"));
        Ok(contents.len())
    }

    /// Current weather for a city.
    #[tool]
    async fn get_weather(&self, city: String, #[arg(default = 20)] celsius: i32) -> Weather {
        Weather { city, celsius }
    }

    #[hook(before_tool_call, match = "..._file")]
    async fn sandbox(&self, ctx: &ToolCallContext<FileCall>) -> ToolCallDecision<FileCall> {
        match &ctx.input {
            FileCall::ReadFile(args) if args.path.starts_with('/') => {
                ToolCallDecision::block("outside the workspace")
            }
            FileCall::ReadFile(_) => ToolCallDecision::Allow,
            FileCall::WriteFile(args) => {
                ToolCallDecision::Modify(FileCall::WriteFile(file_agent_tools::WriteFileArgs {
                    path: format!("sandbox/{}", args.path),
                    contents: args.contents.clone(),
                }))
            }
        }
    }

    #[hook(after_tool_call, tool = "get_weather")]
    fn audit(&self, ctx: &ToolCallResultContext<file_agent_tools::GetWeatherArgs, Weather>) {
        let weather = ctx.output().cloned();
        self.note(format!("audit({:?})", weather.map(|w| w.celsius)));
    }

    #[hook(on_chunk, priority = -1)]
    fn meter(&self, ctx: &ChunkContext) {
        if let agent_core::Chunk::TextDelta(text) = &ctx.chunk {
            self.note(format!("chunk({text})"));
        }
    }
}

#[tokio::test]
async fn the_design_dsl_runs() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("working")
            .tool_call("c1", "read_file", r#"{"path":"notes.txt"}"#)
            .tool_call("c2", "read_file", r#"{"path":"/etc/passwd"}"#)
            .tool_call("c3", "write_file", r#"{"path":"a.txt","contents":"hi"}"#)
            .tool_call("c4", "get_weather", r#"{"city":"Oslo"}"#),
        ScriptedStep::new().text("done"),
    ]);
    let this = FileAgent::default();
    let agent = this.builder().model(model.clone()).build().unwrap();
    let result = agent.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let contents: Vec<&str> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| r.content.as_str())
        .collect();
    assert_eq!(
        contents,
        [
            "contents of notes.txt",
            "outside the workspace",
            "2",
            r#"{"city":"Oslo","celsius":20}"#
        ]
    );
    let request = &model.requests()[0];
    assert_eq!(
        request.system.as_deref(),
        Some("You are a careful file assistant.")
    );
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read_file", "write_file", "get_weather"]);
}

/// Receivers and lifetimes written out: `self: &Self` is `&self`, and lifetime parameters are
/// left to inference, on tools and hooks alike; the description written by `concat!`.
#[derive(Default)]
struct Spelled {
    seen: Mutex<Vec<String>>,
}

#[doc = concat!("Spells ", "things out.")]
#[agent]
#[allow(
    clippy::needless_arbitrary_self_type,
    clippy::needless_lifetimes,
    reason = "written out on purpose: the macros accept what `&self` and elision would say"
)]
impl Spelled {
    /// Echo the text.
    #[tool]
    fn echo(self: &Self, text: String) -> String {
        text
    }

    /// Shout the text.
    #[tool]
    async fn shout<'a>(&'a self, text: String) -> String {
        text.to_uppercase()
    }

    #[hook(on_chunk)]
    fn count<'a>(self: &'a Self, ctx: &'a ChunkContext) {
        if let agent_core::Chunk::TextDelta(text) = &ctx.chunk {
            self.seen.lock().unwrap().push(text.to_string());
        }
    }
}

#[tokio::test]
async fn written_out_receivers_and_lifetimes_are_accepted() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "echo", r#"{"text":"a"}"#)
            .tool_call("c2", "shout", r#"{"text":"b"}"#),
        ScriptedStep::new().text("done"),
    ]);
    let spelled = Spelled::default();
    let agent = spelled.builder().model(model).build().unwrap();
    // A doc written by a macro is the agent's description too.
    assert_eq!(agent.description(), Some("Spells things out."));
    let result = agent.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let read: Vec<&str> = result.steps[0]
        .tool_results
        .iter()
        .map(|result| result.content.as_str())
        .collect();
    assert_eq!(read, ["a", "B"]);
}

struct Analyst;

/// Writes quarterly reports.
#[agent(stop_at_tools("report"))]
impl Analyst {
    /// Look a figure up.
    #[tool]
    fn figure(&self, name: String) -> i64 {
        name.len() as i64
    }

    /// Write the report: its text is the answer.
    #[tool]
    fn report(&self, quarter: String) -> String {
        format!("{quarter} report")
    }
}

#[tokio::test]
async fn stop_at_tools_ends_the_turn_with_the_tools_result() {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "figure", r#"{"name":"revenue"}"#),
        ScriptedStep::new().tool_call("c2", "report", r#"{"quarter":"Q3"}"#),
        ScriptedStep::new().text("never asked"),
    ]);
    let agent = Analyst.builder().model(model.clone()).build().unwrap();
    let result = agent.run("Write the Q3 report.").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(agent_core::StopReason::Tool));
    assert_eq!(result.text, "Q3 report");
    assert_eq!(model.requests().len(), 2);
}
