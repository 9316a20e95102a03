use agent_core::{agent, AgentSpec};

struct Desk;

#[agent(context = "User")]
impl Desk {
    /// Says hello.
    #[tool]
    fn hello(&self) -> String {
        "hello".to_owned()
    }
}

fn main() {
    let _ = Desk.builder();
}
