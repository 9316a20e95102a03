use agent_core::{agent, ToolCallContext};

struct Notes;

#[agent]
impl Notes {
    /// Search the notes.
    #[tool(name = "search-notes")]
    fn search(&self, query: String) -> Vec<String> {
        vec![query]
    }

    #[hook(before_tool_call, tool = "search")]
    fn gate(&self, ctx: &ToolCallContext<notes_tools::SearchArgs>) {
        let _ = ctx;
    }
}

fn main() {}
