use agent_core::{ChunkContext, hook};

#[hook(on_chunk, timeout_ms = "fast")]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
