use agent_core::{ToolStream, ToolUpdate, tool};

// A plain `fn` runs inline and cannot be stopped: `timeout_ms` would do nothing.
/// Search the notes.
#[tool(timeout_ms = 500)]
fn search(query: String) -> String {
    query
}

// A stream a plain `fn` returns is polled as the call runs, so its timeout applies: no error.
/// Count to three.
#[tool(timeout_ms = 500)]
fn count() -> ToolStream<u32, u32> {
    ToolStream::new(async_stream::stream! {
        yield ToolUpdate::Progress(1);
        yield ToolUpdate::Done(3);
    })
}

fn main() {
    // The tools are still generated: using them adds no error.
    let _ = (search_tool::Search, count_tool::Count);
}
