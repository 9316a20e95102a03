use agent_core::{agent, ToolResultContext};

struct Notes;

#[agent]
impl Notes {
    /// Adds two integers.
    #[tool]
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    #[hook(after_tool_call_success)]
    fn tag(&self, ctx: &ToolResultContext) -> Option<String> {
        Some(format!("[{}] {}", ctx.call.name, ctx.content))
    }
}

fn main() {}
