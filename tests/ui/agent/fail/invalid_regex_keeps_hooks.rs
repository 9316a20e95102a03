// A hook whose regex does not parse matches tools no one knows: it is left out (with no input
// enum of the wrong tools), so its match on the enum adds no error to the regex's.
use agent_core::{AgentSpec, ToolCallContext, ToolCallDecision, agent};

#[derive(Default)]
pub struct Files;

#[agent]
impl Files {
    /// Read a file.
    #[tool]
    fn read_file(&self, path: String) -> String {
        path
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

    #[hook(before_tool_call, match = "(read|write_file")]
    fn sandbox(&self, ctx: &ToolCallContext<FileCall>) -> ToolCallDecision<FileCall> {
        match &ctx.input {
            FileCall::ReadFile(args) if args.path.starts_with('/') => {
                ToolCallDecision::block("outside the sandbox")
            }
            FileCall::ReadFile(_) | FileCall::WriteFile(_) => ToolCallDecision::Allow,
        }
    }
}

fn main() {
    let _ = Files.builder();
}
