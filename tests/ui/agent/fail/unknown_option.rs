use agent_core::agent;

struct Empty;

#[agent(max_stesp = 3)]
impl Empty {}

fn main() {}
