use agent_core::{agent, AgentSpec, ScriptedModel};

struct Clock;

trait Named {
    fn name(&self) -> String;
}

#[agent]
impl Named for Clock {
    fn name(&self) -> String {
        "clock".to_owned()
    }
}

fn main() {
    let _ = Clock.builder().model(ScriptedModel::new([]));
}
