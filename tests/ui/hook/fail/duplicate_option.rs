use agent_core::{ChunkContext, hook};

#[hook(on_chunk, priority = 1, priority = 2)]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
