use agent_core::{ChunkContext, hook};

#[hook(on_chunk, priority = 99999999999)]
fn first(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
