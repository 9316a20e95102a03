use agent_core::{RunAgent, run_hooks};

struct Timeline;

#[run_hooks]
impl Timeline {
    fn on_handoff(&self, from: &RunAgent) {
        println!("{}", from.name);
    }
}

fn main() {
    // The observer still implements `RunHooks`: the error above is the only one.
    let _ = agent_core::TurnRequest::new("hello").run_hooks(Timeline);
}
