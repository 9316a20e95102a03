use agent_core::{ChunkContext, hook};

#[hook(on_chunk, priorty = 2)]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
