use agent_core::{agent, AgentSpec, ScriptedModel};

#[agent]
struct Clock;

fn main() {
    let _ = Clock.builder().model(ScriptedModel::new([]));
}
