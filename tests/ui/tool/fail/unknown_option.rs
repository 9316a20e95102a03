use agent_core::tool;

/// Read a file.
#[tool(colour = "red")]
fn read_file(path: String) -> String {
    path
}

fn main() {}
