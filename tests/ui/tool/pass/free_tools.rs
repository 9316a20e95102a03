//! Free-function tools: sync and async, optional and defaulted parameters, a context parameter,
//! plain and fallible outputs, a name override.

use add_tool::{Add, AddArgs};
use agent_core::{Tool, ToolContext, ToolError, tool};
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

fn main() {
    assert_eq!(<Add as Tool>::NAME, "add");
    assert_eq!(<Search as Tool>::NAME, "search-notes");
    assert_eq!(<Search as Tool>::DESCRIPTION, "Search the notes.");
    let schema = Search::schema();
    assert_eq!(schema["properties"]["limit"]["default"], 10);
    assert_eq!(schema["required"], serde_json::json!(["query"]));
    let _ = (nothing_tool::Nothing, fail_tool::Fail, AddArgs { a: 1, b: 2 });
}
