use agent_core::{ToolCallContext, hook};
use serde_json::Value;

#[hook(before_tool_cal)]
fn guard(ctx: &ToolCallContext<Value>) {
    let _ = ctx;
}

fn main() {}
