use agent_core::{agent, ScriptedModel};

struct Triage;

#[agent(handoffs(billing))]
impl Triage {}

fn main() {
    let _ = Triage.builder().model(ScriptedModel::new([])).build();
}
