use agent_core::{AgentSpec, agent};

/// Add two numbers.
fn add(a: i64, b: i64) -> i64 {
    a + b
}

struct Calc;

#[agent(tools(add))]
impl Calc {}

fn main() {
    let _ = Calc.builder();
}
