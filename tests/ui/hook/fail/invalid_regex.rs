use agent_core::{ToolCallContext, hook};
use serde_json::Value;

#[hook(before_tool_call, match = "read_(file")]
fn guard(ctx: &ToolCallContext<Value>) {
    let _ = ctx;
}

fn main() {}
