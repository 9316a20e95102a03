use agent_core::{AgentSpec, agent, tool};

/// Version one point two.
#[tool]
fn v1_2() -> u32 {
    12
}

/// Version twelve.
#[tool]
fn v12() -> u32 {
    12
}

struct Versions;

// Both would be the variant `V12` of the generated `VersionsInput`.
#[agent(tools(v1_2, v12))]
impl Versions {}

fn main() {
    let _ = Versions.builder();
}
