use agent_core::{hook, OutputCheck, OutputContext};

#[hook(validate_output)]
fn non_zero(ctx: &OutputContext<u64>) -> OutputCheck {
    let _ = ctx;
    OutputCheck::Accept
}

fn main() {}
