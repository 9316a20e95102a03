use agent_core::{agent, tool, ToolCallContext};
use serde_json::Value;

/// Current time.
#[tool]
fn current_time() -> String {
    "noon".to_owned()
}

struct Clock;

#[agent]
impl Clock {
    #[hook(before_tool_call, tool = "current_time")]
    fn guard(&self, ctx: &ToolCallContext<Value>) {
        let _ = ctx;
    }
}

fn main() {}
