use agent_core::{ChunkContext, hook};

#[hook]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
