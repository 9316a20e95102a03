use agent_core::{AgentSpec, agent};

struct Versions;

#[agent]
impl Versions {
    /// Version one point two.
    #[tool]
    fn v1_2(&self) -> u32 {
        12
    }

    /// Version twelve: its type would be `V12`, as `v1_2`'s is.
    #[tool]
    fn v12(&self) -> u32 {
        12
    }
}

fn main() {
    // The agent and the first tool's types are still generated: the error is the only one.
    let _ = Versions.builder();
    let _ = versions_tools::V12Args {};
}
