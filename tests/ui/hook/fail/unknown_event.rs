use agent_core::{ChunkContext, hook};

#[hook(on_chunks)]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
