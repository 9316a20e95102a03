use agent_core::{agent, ToolError, ToolCallResultContext};

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

    #[hook(after_tool_call, tool = "get_weather")]
    fn audit(&self, ctx: &ToolCallResultContext<files_tools::GetWeatherArgs, usize>) {
        let _ = ctx;
    }
}

fn main() {}
