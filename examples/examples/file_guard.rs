//! A sandbox hook on every `..._file` tool: it blocks paths outside a temporary workspace,
//! substitutes a cached read without touching the disk, and modifies writes (normalising the
//! text). Prints what the model received for each call.
//!
//! Run: `cargo run -p examples --example file_guard`

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_core::{
    AgentSpec, ScriptedModel, ScriptedStep, ToolCallContext, ToolCallDecision, ToolError, agent,
};
use serde_json::Value;

/// Files inside one workspace directory, with a read cache.
struct FileAgent {
    root: PathBuf,
    cache: Mutex<HashMap<String, String>>,
}

impl FileAgent {
    /// The path inside the workspace, or `None` when it would leave it.
    fn inside(&self, path: &str) -> Option<PathBuf> {
        let relative = Path::new(path);
        let escapes = relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
        (!escapes).then(|| self.root.join(relative))
    }
}

/// Reads and writes text files in a sandboxed workspace.
#[agent(instructions = "You are a careful file assistant.")]
impl FileAgent {
    /// Read a UTF-8 text file.
    #[tool]
    async fn read_file(
        &self,
        /** Path relative to the workspace root. */
        path: String,
    ) -> Result<String, ToolError> {
        let full = self
            .inside(&path)
            .ok_or_else(|| ToolError::new("path outside the workspace"))?;
        Ok(std::fs::read_to_string(full)?)
    }

    /// Replace a file's contents; returns the number of bytes written.
    #[tool]
    async fn write_file(
        &self,
        /** Path relative to the workspace root. */
        path: String,
        /** The new contents. */
        contents: String,
    ) -> Result<usize, ToolError> {
        let full = self
            .inside(&path)
            .ok_or_else(|| ToolError::new("path outside the workspace"))?;
        std::fs::write(full, &contents)?;
        Ok(contents.len())
    }

    /// Current weather for a city (not a file tool: the sandbox does not apply).
    #[tool]
    fn get_weather(&self, city: String) -> String {
        format!("sunny in {city}")
    }

    // `..._file` matches read_file and write_file (searched unanchored), not get_weather: the
    // input enum `FileCall` has exactly those two variants, so this match needs no wildcard.
    #[hook(before_tool_call, match = "..._file")]
    fn sandbox(&self, ctx: &ToolCallContext<FileCall>) -> ToolCallDecision<FileCall> {
        let path = match &ctx.input {
            FileCall::ReadFile(args) => &args.path,
            FileCall::WriteFile(args) => &args.path,
        };
        if self.inside(path).is_none() {
            return ToolCallDecision::block(format!(
                "`{path}` is outside the workspace; use a relative path"
            ));
        }
        match &ctx.input {
            FileCall::ReadFile(args) => {
                match self.cache.lock().expect("cache lock").get(&args.path) {
                    Some(cached) => ToolCallDecision::Substitute(Value::String(cached.clone())),
                    None => ToolCallDecision::Allow,
                }
            }
            FileCall::WriteFile(args) => {
                let normalised = args
                    .contents
                    .lines()
                    .map(str::trim_end)
                    .collect::<Vec<_>>()
                    .join("\n")
                    + "\n";
                ToolCallDecision::Modify(FileCall::WriteFile(file_agent_tools::WriteFileArgs {
                    path: args.path.clone(),
                    contents: normalised,
                }))
            }
        }
    }
}

const USAGE: &str = "usage: file_guard

Runs one offline turn of a file agent whose before_tool_call hook (`match = \"..._file\"`)
sandboxes reads and writes in a temporary folder: it blocks, serves from a cache, or rewrites
calls, and the example prints what the model received for each.";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(arg) = std::env::args().nth(1) {
        if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            return Ok(());
        }
        eprintln!("file_guard: unknown argument `{arg}`\n\n{USAGE}");
        std::process::exit(2);
    }
    let root = std::env::temp_dir().join(format!("file_guard_{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    std::fs::write(root.join("todo.txt"), "water the plants\n")?;

    let files = Arc::new(FileAgent {
        root: root.clone(),
        cache: Mutex::new(HashMap::new()),
    });
    files
        .cache
        .lock()
        .expect("cache lock")
        .insert("notes.txt".into(), "(cached) meeting at 10".into());

    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "read_file", r#"{"path":"notes.txt"}"#)
            .tool_call("c2", "read_file", r#"{"path":"../../etc/passwd"}"#)
            .tool_call(
                "c3",
                "write_file",
                r#"{"path":"draft.txt","contents":"hello   \nworld  "}"#,
            )
            .tool_call("c4", "read_file", r#"{"path":"todo.txt"}"#)
            .tool_call("c5", "get_weather", r#"{"city":"Lisbon"}"#),
        ScriptedStep::new()
            .text("Done: notes read from cache, the draft saved, the escape blocked."),
    ]);
    let agent = FileAgent::shared_builder(files.clone())
        .model(model)
        .build()?;
    let result = agent.run("Tidy up my workspace.").await;

    println!("workspace: {}\n", root.display());
    for call in result.steps.iter().flat_map(|step| &step.tool_results) {
        println!(
            "{:<3} {:<12} {:<12} model received: {:?}",
            call.call_id, call.name, call.outcome, call.content
        );
    }
    let written = std::fs::read_to_string(root.join("draft.txt"))?;
    println!("\ndraft.txt on disk: {written:?}");
    println!("answer: {}", result.text);
    std::fs::remove_dir_all(&root)?;
    if !result.is_completed() {
        let error = result
            .error
            .as_ref()
            .map_or(String::new(), ToString::to_string);
        return Err(format!("the turn ended {}: {error}", result.status).into());
    }
    Ok(())
}
