use agent_core::agent;

struct Empty;

#[agent(colour = "red")]
impl Empty {}

fn main() {}
