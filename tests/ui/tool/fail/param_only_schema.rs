use agent_core::tool;

/// What to search for, without any serde derive.
#[derive(schemars::JsonSchema)]
pub struct Query {
    pub text: String,
}

/// Search the notes.
#[tool]
fn search(query: Query) -> String {
    query.text
}

fn main() {
    let _ = search_tool::Search;
}
