//! A renamed dependency: with `crate = my_agents`, the inner `#[my_agents::tool]` and
//! `#[my_agents::hook]` are the agent's.

use agent_core as my_agents;
use my_agents::{AgentSpec, ChunkContext, ScriptedModel};

struct Clock;

#[my_agents::agent(crate = my_agents)]
impl Clock {
    /// Current time.
    #[my_agents::tool]
    fn now(&self) -> String {
        "noon".to_owned()
    }

    #[my_agents::hook(on_chunk)]
    fn meter(&self, ctx: &ChunkContext) {
        let _ = ctx.step;
    }
}

fn main() {
    let agent = Clock.builder().model(ScriptedModel::new([])).build().unwrap();
    assert_eq!(agent.tools()[0].name, "now");
}
