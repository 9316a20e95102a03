use agent_core::run_hooks;

#[run_hooks]
struct Timeline;

fn main() {
    let _ = Timeline;
}
