use agent_core::tool;

/// Read a file.
#[tool(nmae = "read")]
fn read_file(path: String) -> String {
    path
}

fn main() {}
