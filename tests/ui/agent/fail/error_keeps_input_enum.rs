// After an error (here a tool without a description) the agent's tools are stubs, and the enum
// a hook matches on still holds each tool's args struct: the hook reading their fields adds no
// error to the one reported.
use agent_core::{AgentSpec, ToolCallContext, ToolCallDecision, ToolError, agent};

#[derive(Default)]
pub struct Files;

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

    #[tool]
    fn get_weather(&self, city: String) -> String {
        city
    }

    #[hook(before_tool_call, match = "_file$")]
    fn sandbox(&self, ctx: &ToolCallContext<FileCall>) -> ToolCallDecision<FileCall> {
        match &ctx.input {
            FileCall::ReadFile(args) if args.path.starts_with('/') => {
                ToolCallDecision::block("outside the sandbox")
            }
            FileCall::ReadFile(_) => ToolCallDecision::Allow,
            FileCall::WriteFile(args) => {
                ToolCallDecision::Modify(FileCall::WriteFile(files_tools::WriteFileArgs {
                    path: format!("sandbox/{}", args.path),
                    contents: args.contents.clone(),
                }))
            }
        }
    }

    #[hook(before_tool_call, tool = "get_weather")]
    fn city(
        &self,
        ctx: &ToolCallContext<files_tools::GetWeatherArgs>,
    ) -> ToolCallDecision<files_tools::GetWeatherArgs> {
        let mut input = ctx.input.clone();
        input.city = input.city.to_uppercase();
        ToolCallDecision::Modify(input)
    }
}

fn main() {
    let _ = Files.builder();
}
