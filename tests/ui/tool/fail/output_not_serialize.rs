use agent_core::tool;

struct Handle;

/// Open a file.
#[tool]
fn open_file(path: String) -> Handle {
    let _ = path;
    Handle
}

fn main() {}
