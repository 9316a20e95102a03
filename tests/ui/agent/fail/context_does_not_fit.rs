use agent_core::{agent, ToolError, ToolCallContext};

struct Files;

#[agent]
impl Files {
    /// Read a file.
    #[tool]
    async fn read_file(&self, path: String) -> Result<String, ToolError> {
        Ok(path)
    }

    /// Write a file.
    #[tool]
    fn write_file(&self, path: String, contents: String) -> usize {
        let _ = path;
        contents.len()
    }

    /// Weather for a city.
    #[tool]
    fn get_weather(&self, city: String) -> String {
        city
    }

    #[hook(before_tool_call, tool = "get_weather")]
    fn guard(&self, ctx: &ToolCallContext<files_tools::ReadFileArgs>) {
        let _ = ctx;
    }
}

fn main() {}
