use agent_core::{RunAgent, RunHooks, run_hooks};

struct Timeline;

#[run_hooks]
impl RunHooks for Timeline {
    fn on_agent_start(&self, agent: &RunAgent) {
        println!("{}", agent.name);
    }
}

fn main() {
    let _ = agent_core::TurnRequest::new("hello").run_hooks(Timeline);
}
