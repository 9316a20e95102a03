//! A hook matching several tools gets an enum of just those tools: an exhaustive `match`
//! without a wildcard arm compiles, and the agent's enum of all tools exists too.

use agent_core::{ToolCallContext, ToolCallDecision, ToolError, agent};

struct Files;

#[agent]
impl Files {
    /// Read a file.
    #[tool]
    async fn read_file(&self, path: String) -> Result<String, ToolError> {
        Ok(path)
    }

    /// Write a file.
    #[tool]
    fn write_file(&self, path: String, contents: String) -> usize {
        let _ = path;
        contents.len()
    }

    /// Weather for a city.
    #[tool]
    fn get_weather(&self, city: String) -> String {
        city
    }

    #[hook(before_tool_call, match = "..._file")]
    fn sandbox(&self, ctx: &ToolCallContext<FileCall>) -> ToolCallDecision<FileCall> {
        match &ctx.input {
            FileCall::ReadFile(args) => {
                let _ = &args.path;
                ToolCallDecision::Allow
            }
            FileCall::WriteFile(args) => {
                let _ = &args.contents;
                ToolCallDecision::Allow
            }
        }
    }

    #[hook(before_tool_call, tools = ["read_file", "get_weather"])]
    fn either(&self, ctx: &ToolCallContext<ReadOrWeather>) {
        match &ctx.input {
            ReadOrWeather::ReadFile(_) | ReadOrWeather::GetWeather(_) => {}
        }
    }

    #[hook(before_tool_call)]
    fn any(&self, ctx: &ToolCallContext<FilesInput>) {
        match &ctx.input {
            FilesInput::ReadFile(_) | FilesInput::WriteFile(_) | FilesInput::GetWeather(_) => {}
        }
    }
}

fn main() {}
