use agent_core::tool;

/// Search the notes.
#[tool(timeout_ms = 0)]
fn search(query: String) -> String {
    query
}

fn main() {
    let _ = search_tool::Search;
}
