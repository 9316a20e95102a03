use agent_core::tool;

struct Files;

impl Files {
    /// Read a file.
    #[tool]
    fn read_file(&self, path: String) -> String {
        path
    }
}

fn main() {}
