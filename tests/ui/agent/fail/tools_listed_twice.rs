// A tool listed twice in a hook's `tools` is a slip (another tool was meant): one error on the
// repeated name, and the hook's body adds none.
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

    #[hook(before_tool_call, tools = ["read_file", "read_file"])]
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
