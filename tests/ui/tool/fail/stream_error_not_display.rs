use agent_core::{ToolStream, ToolUpdate, tool};

#[derive(Debug)]
pub struct IndexError;

/// Index the files, reporting how far it got.
#[tool]
fn index(root: String) -> Result<ToolStream<u32, String>, IndexError> {
    if root.is_empty() {
        return Err(IndexError);
    }
    Ok(ToolStream::new(async_stream::stream! {
        yield ToolUpdate::Progress(50);
        yield ToolUpdate::Done(root);
    }))
}

fn main() {}
