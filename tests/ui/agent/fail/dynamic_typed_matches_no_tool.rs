use agent_core::{agent, ToolCallContext};

struct Files;

#[agent]
impl Files {
    /// Read a file.
    #[tool]
    fn read_file(&self, path: String) -> String {
        path
    }

    #[hook(before_tool_call, match = "^mcp_", dynamic)]
    fn guard(&self, ctx: &ToolCallContext<files_tools::ReadFileArgs>) {
        let _ = ctx;
    }
}

fn main() {}
