// A tool-call hook given to `AgentBuilder::hook` (which takes turn-wide events' hooks): one
// error saying to register it with a matcher.
use agent_core::{AgentBuilder, Hook, ToolCallContext, ToolCallDecision, event};
use serde_json::Value;

fn main() {
    let _ = AgentBuilder::new("guarded").hook(Hook::<event::BeforeToolCall<Value>>::sync(
        "no_rm",
        |ctx: &ToolCallContext<Value>| {
            let _ = ctx;
            ToolCallDecision::<Value>::Allow
        },
    ));
}
