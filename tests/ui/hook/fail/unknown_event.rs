use agent_core::{ChunkContext, hook};

#[hook(on_every_thing)]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {}
