use agent_core::{agent, ToolError, ToolCallContext, ToolCallDecision};

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

    #[hook(before_tool_call, tool = "read_file")]
    fn guard(&self, ctx: &ToolCallContext<files_tools::ReadFileArgs>) -> ToolCallDecision<files_tools::GetWeatherArgs> {
        let _ = ctx;
        ToolCallDecision::Allow
    }
}

fn main() {}
