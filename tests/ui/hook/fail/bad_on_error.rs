use agent_core::{ChunkContext, hook};

#[hook(on_chunk, on_error = "sometimes")]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
