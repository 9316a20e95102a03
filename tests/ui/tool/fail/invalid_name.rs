use agent_core::tool;

/// Read a file.
#[tool(name = "read file")]
fn read_file(path: String) -> String {
    path
}

fn main() {}
