use agent_core::tool;

/// Search the notes.
#[tool(retries = -1)]
fn search(query: String) -> String {
    query
}

fn main() {
    let _ = search_tool::Search;
}
