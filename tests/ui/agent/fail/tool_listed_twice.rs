use agent_core::{AgentSpec, agent, tool};

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

struct Calc;

#[agent(tools(add, add))]
impl Calc {}

fn main() {
    let _ = Calc.builder();
}
