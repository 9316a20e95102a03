//! Free-function tools: sync and async, optional and defaulted parameters, a context parameter,
//! plain and fallible outputs, a name override, streams (sync, and async and fallible) whose
//! `Output` is the final value's type.

use add_tool::{Add, AddArgs};
use agent_core::{Tool, ToolContext, ToolError, ToolStream, ToolUpdate, tool};
use search_tool::Search;

/// Add two numbers.
#[tool]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Search the notes.
#[tool(name = "search-notes")]
async fn search(
    /// What to look for.
    query: String,
    /// How many hits at most.
    #[arg(default = 10)]
    limit: u32,
    /// Only notes with this tag.
    tag: Option<String>,
    ctx: ToolContext,
) -> Result<Vec<String>, std::io::Error> {
    let _ = (tag, ctx.call_id);
    Ok(vec![query; limit as usize])
}

/// Say nothing.
#[tool]
fn nothing() {}

/// Fail on purpose.
#[tool]
fn fail() -> Result<String, ToolError> {
    Err(ToolError::new("no"))
}

/// Count to three, reporting each number.
#[tool]
fn count() -> ToolStream<u32, String> {
    ToolStream::new(async_stream::stream! {
        for n in 1..=3 {
            yield ToolUpdate::Progress(n);
        }
        yield ToolUpdate::Done("three".to_owned());
    })
}

/// Follow a log, reporting each line.
#[tool]
async fn follow(path: String) -> Result<agent_core::ToolStream<String, usize>, std::io::Error> {
    Ok(ToolStream::new(async_stream::stream! {
        yield ToolUpdate::Progress(path);
        yield ToolUpdate::Done(1);
    }))
}

fn output_is<T: Tool<Output = O>, O>() {}

fn main() {
    output_is::<count_tool::Count, String>();
    output_is::<follow_tool::Follow, usize>();
    assert_eq!(<Add as Tool>::NAME, "add");
    assert_eq!(<Search as Tool>::NAME, "search-notes");
    assert_eq!(<Search as Tool>::DESCRIPTION, "Search the notes.");
    let schema = Search::schema();
    assert_eq!(schema["properties"]["limit"]["default"], 10);
    assert_eq!(schema["required"], serde_json::json!(["query"]));
    let _ = (nothing_tool::Nothing, fail_tool::Fail, AddArgs { a: 1, b: 2 });
}
