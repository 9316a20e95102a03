use agent_core::{LlmStartContext, hook};

/// The macro cannot see through an alias: rustc reports it, once, on the parameter's type.
type Reply = LlmStartContext;

#[hook(on_llm_end)]
fn log_reply(ctx: &Reply) {
    let _ = ctx;
}

fn main() {}
