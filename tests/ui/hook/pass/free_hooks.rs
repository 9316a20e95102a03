//! Free-function hooks, attached through `#[agent(hooks(...))]` and the builder.

use agent_core::{
    AgentBuilder, ChunkContext, HookError, ScriptedModel, ToolCallContext, ToolCallDecision, TurnConfig, TurnContext,
    hook,
};
use serde_json::Value;

#[hook(on_chunk, priority = -5, on_error = "fail_closed")]
fn meter(ctx: &ChunkContext) {
    let _ = ctx.step;
}

#[hook(before_turn)]
async fn shorten(ctx: &TurnContext) -> Result<Option<TurnConfig>, HookError> {
    Ok((ctx.messages.len() > 100).then(|| TurnConfig::new().max_steps(3)))
}

#[hook(before_tool_call, match = "^rm_", dynamic, timeout_ms = 250)]
async fn no_deletes(ctx: &ToolCallContext<Value>) -> ToolCallDecision<Value> {
    ToolCallDecision::block(format!("{} is not allowed", ctx.tool_name))
}

fn main() {
    let built = AgentBuilder::new("plain")
        .model(ScriptedModel::new([]))
        .hooks(Meter)
        .hooks(Shorten)
        .hooks(NoDeletes)
        .build();
    assert!(built.is_ok());
}
