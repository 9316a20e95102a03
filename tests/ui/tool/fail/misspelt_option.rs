use agent_core::tool;

/// Search the notes.
#[tool(nmae = "search_notes")]
fn search(query: String) -> String {
    query
}

fn main() {}
