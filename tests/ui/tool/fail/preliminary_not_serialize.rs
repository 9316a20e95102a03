use agent_core::{ToolStream, ToolUpdate, tool};

struct Percent(u32);

/// Index the files, reporting how far it got.
#[tool]
fn index() -> ToolStream<Percent, String> {
    ToolStream::new(async_stream::stream! {
        yield ToolUpdate::Progress(Percent(50));
        yield ToolUpdate::Done("indexed".to_owned());
    })
}

fn main() {}
