use agent_core::tool;

/// What to search for: it derives only what reading the model's call needs, not `Clone`,
/// `Debug` or `Serialize`, which hooks and the stored call read.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Query {
    pub text: String,
}

/// Search the notes.
#[tool]
fn search(query: Query) -> String {
    query.text
}

fn main() {
    // The tool's types are still generated: the error above is the only one.
    let _ = search_tool::Search;
}
