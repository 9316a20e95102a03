use agent_core::{AgentBuilder, tool};

/// Search the notes.
#[tool]
fn search(query: String, #[arg(default)] limit: u32) -> Vec<String> {
    vec![query; limit as usize]
}

fn main() {
    let _ = AgentBuilder::new("notes").tool(search_tool::Search);
}
