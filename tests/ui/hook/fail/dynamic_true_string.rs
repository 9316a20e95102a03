use agent_core::{ToolCallContext, hook};
use serde_json::Value;

#[hook(before_tool_call, match = "^rm_", dynamic = "true")]
fn no_deletes(ctx: &ToolCallContext<Value>) {
    let _ = ctx;
}

fn main() {}
