use agent_core::{RunAgent, run_hooks};

struct Timeline;

#[run_hooks]
impl Timeline {
    const PREFIX: &str = "run";

    fn on_agent_start(&self, agent: &RunAgent) {
        // The constant is kept: using it adds no error.
        println!("{} {}", Self::PREFIX, agent.name);
    }
}

fn main() {
    // The observer still implements `RunHooks`: the error above is the only one.
    let _ = agent_core::TurnRequest::new("hello").run_hooks(Timeline);
}
