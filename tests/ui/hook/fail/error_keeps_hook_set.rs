use agent_core::{AgentBuilder, ChunkContext, hook};

#[hook(on_chunk, timeout_ms = 0)]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {
    let _ = AgentBuilder::new("metered").hooks(Meter);
}
