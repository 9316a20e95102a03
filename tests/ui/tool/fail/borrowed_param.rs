use agent_core::tool;

/// Read a file.
#[tool]
fn read_file(path: &str) -> String {
    path.to_owned()
}

fn main() {}
