use agent_core::{TurnContext, hook};

#[hook(before_tool_call)]
fn guard(ctx: &TurnContext) {
    let _ = ctx;
}

fn main() {}
