use agent_core::agent;

struct Clock;

#[agent(instructons = "Tell the time.")]
impl Clock {}

fn main() {}
