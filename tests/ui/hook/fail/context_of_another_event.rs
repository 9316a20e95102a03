use agent_core::{LlmStartContext, hook};

#[hook(on_llm_end)]
fn log_reply(ctx: &LlmStartContext) {
    let _ = ctx;
}

fn main() {}
