use agent_core as my_agents;
use my_agents::{AgentSpec, ChunkContext, ScriptedModel};

struct Clock;

#[my_agents::agent]
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
    let _ = Clock.builder().model(ScriptedModel::new([]));
}
