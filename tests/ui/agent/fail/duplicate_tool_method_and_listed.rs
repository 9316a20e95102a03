use agent_core::{AgentSpec, agent, tool};

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

struct Calc;

#[agent(tools(add))]
impl Calc {
    /// Add two numbers, as a method: the name `add` is taken by the listed tool's.
    #[tool]
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

fn main() {
    let _ = Calc.builder();
}
