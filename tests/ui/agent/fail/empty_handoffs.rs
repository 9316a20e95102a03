use agent_core::{agent, AgentBuilder, Subagent, ScriptedModel};

struct Triage;

#[agent(handoffs(), subagents(ledger))]
impl Triage {}

fn main() {
    let ledger = AgentBuilder::new("ledger").model(ScriptedModel::new([])).build().unwrap();
    let _ = Triage.builder_with(triage_targets::Targets {
        ledger: Subagent::of(&ledger),
    });
}
