use agent_core::{AgentBuilder, ChunkContext, ScriptedModel, hook};

// A sync hook runs inline and cannot be stopped: `timeout_ms` would do nothing.
#[hook(on_chunk, timeout_ms = 250)]
fn meter(ctx: &ChunkContext) {
    let _ = ctx;
}

fn main() {
    // The hook is still generated: using it adds no error.
    let _ = AgentBuilder::new("a").model(ScriptedModel::new([])).hooks(Meter);
}
