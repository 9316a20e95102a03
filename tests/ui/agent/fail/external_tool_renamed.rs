use agent_core::agent;

/// Current time.
#[agent_core::tool(name = "now")]
fn current_time() -> String {
    "noon".to_owned()
}

struct Clock;

#[agent(tools(current_time))]
impl Clock {}

fn main() {}
