//! Tools and hooks defined apart from the agent, the agent's options, and a renamed dependency
//! through `crate = ...`. A private tool named in `tools(...)` gives no warning from the
//! generated code (a `-D warnings` build must pass).

#![deny(private_interfaces)]

use core2::{AgentSpec, ChunkContext, ScriptedModel, StepRecord};
use agent_core as core2;

/// Current time.
#[core2::tool(crate = core2)]
fn current_time() -> String {
    "noon".to_owned()
}

#[core2::hook(on_step_finish, crate = core2)]
fn finished(step: &StepRecord) {
    let _ = step.step;
}

/// Tells the time.
#[core2::agent(
    name = "clock",
    instructions = "Tell the time.",
    max_steps = 3,
    tools(current_time),
    hooks(finished),
    crate = core2
)]
impl Clock {
    #[hook(on_chunk)]
    async fn meter(&self, ctx: &ChunkContext) {
        let _ = ctx.step;
    }
}

struct Clock;

fn main() {
    let agent = Clock.builder().model(ScriptedModel::new([])).build().unwrap();
    assert_eq!(agent.name(), "clock");
    assert_eq!(agent.description(), Some("Tells the time."));
    assert_eq!(agent.max_steps(), 3);
    assert_eq!(agent.tools()[0].name, "current_time");
}
