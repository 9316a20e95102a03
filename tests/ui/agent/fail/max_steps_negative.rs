use agent_core::agent;

struct Helper;

#[agent(max_steps = -1)]
impl Helper {}

fn main() {}
