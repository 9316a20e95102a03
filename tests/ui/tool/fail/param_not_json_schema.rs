use agent_core::tool;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
struct Query {
    text: String,
}

/// Search the notes.
#[tool]
fn search(query: Query) -> String {
    query.text
}

fn main() {}
