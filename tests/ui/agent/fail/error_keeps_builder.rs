use agent_core::{agent, AgentSpec, ScriptedModel, ToolCallContext};

struct Files;

#[agent]
impl Files {
    #[tool]
    fn read_file(&self, path: String) -> String {
        path
    }

    #[hook(before_tool_call, tool = "read_file")]
    fn guard(&self, ctx: &ToolCallContext<files_tools::ReadFileArgs>) {
        let _ = &ctx.input.path;
    }
}

fn main() {
    let _ = Files.builder().model(ScriptedModel::new([])).build();
    let _ = files_tools::ReadFile(std::sync::Arc::new(Files));
}
