use agent_core::{ToolStream, tool};

/// Index the files, reporting how far it got.
#[tool]
fn index() -> ToolStream<u32> {
    ToolStream::new(async_stream::stream! {
        yield agent_core::ToolUpdate::Progress(50);
    })
}

fn main() {}
