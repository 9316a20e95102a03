use agent_core::{ChunkContext, hook};

#[hook(on_chunk, tool = "read_file")]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
