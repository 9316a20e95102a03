use agent_core::hook;

#[hook(on_step_finish)]
fn finished() {}

fn main() {}
