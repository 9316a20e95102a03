use agent_core::{agent, AgentBuilder, Handoff, Subagent, ScriptedModel};

struct Triage;

#[agent(handoffs(billing, tech, billing), subagents(ledger))]
impl Triage {}

fn main() {
    let other = AgentBuilder::new("other").model(ScriptedModel::new([])).build().unwrap();
    let _ = Triage.builder_with(triage_targets::Targets {
        billing: Handoff::to(&other),
        tech: Handoff::to(&other),
        ledger: Subagent::of(&other),
    });
}
