use agent_core::{ToolUpdate, tool};

/// Index the files, reporting how far it got.
#[tool]
fn index() -> impl futures_core::Stream<Item = ToolUpdate<u32, String>> {
    async_stream::stream! {
        yield ToolUpdate::Progress(50);
        yield ToolUpdate::Done("indexed".to_owned());
    }
}

fn main() {}
