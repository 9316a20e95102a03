use agent_core::{AgentBuilder, tool};

/// Open a file.
#[tool(name = "open file")]
fn open_file(path: String) -> String {
    path
}

fn main() {
    let _ = AgentBuilder::new("files").tool(open_file_tool::OpenFile);
    let _ = open_file_tool::OpenFileArgs { path: String::new() };
}
