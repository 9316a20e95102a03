use agent_core::{ToolCallContext, hook};

// `Value` is not imported: one error, on it.
#[hook(before_tool_call, match = "^rm_", dynamic)]
fn no_rm(ctx: &ToolCallContext<Value>) {
    let _ = ctx;
}

fn main() {}
