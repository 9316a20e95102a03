use agent_core::{AgentBuilder, AgentSpec, ChunkContext, agent, hook};

#[hook(on_chunk)]
unsafe fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

struct Counter;

#[agent]
impl Counter {
    #[hook(on_chunk)]
    unsafe fn count(&self, ctx: &ChunkContext) {
        let _ = ctx;
    }
}

fn main() {
    let _ = AgentBuilder::new("metered").hooks(Meter);
    let _ = Counter.builder();
}
