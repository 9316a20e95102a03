//! Two agents in one module with a tool of the same name: each agent's generated types live in
//! its own module (`reader_tools`, `writer_tools`), so they do not collide.

use agent_core::{AgentSpec, ScriptedModel, ToolCallContext, agent};

struct Reader;

#[agent]
impl Reader {
    /// Read a file.
    #[tool]
    fn read_file(&self, path: String) -> String {
        path
    }

    #[hook(before_tool_call, tool = "read_file")]
    fn guard(&self, ctx: &ToolCallContext<reader_tools::ReadFileArgs>) {
        let _ = &ctx.input.path;
    }
}

struct Writer;

#[agent]
impl Writer {
    /// Read a file.
    #[tool]
    fn read_file(&self, path: String, line: u32) -> String {
        format!("{path}:{line}")
    }

    #[hook(before_tool_call, tool = "read_file")]
    fn guard(&self, ctx: &ToolCallContext<writer_tools::ReadFileArgs>) {
        let _ = ctx.input.line;
    }
}

fn main() {
    let reader = Reader.builder().model(ScriptedModel::new([])).build().unwrap();
    let writer = Writer.builder().model(ScriptedModel::new([])).build().unwrap();
    assert_eq!(reader.tools()[0].name, "read_file");
    assert_eq!(writer.tools()[0].name, "read_file");
    let _ = reader_tools::ReadFile(std::sync::Arc::new(Reader));
}
