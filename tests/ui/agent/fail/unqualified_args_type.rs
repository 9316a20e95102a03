use agent_core::{ToolCallContext, agent};

struct Weather;

#[agent]
impl Weather {
    /// Weather for a city.
    #[tool]
    fn get_weather(&self, city: String) -> String {
        city
    }

    // The args type lives in the generated module `weather_tools`: one error, on the name.
    #[hook(before_tool_call, tool = "get_weather")]
    fn check(&self, ctx: &ToolCallContext<GetWeatherArgs>) {
        let _ = ctx;
    }
}

fn main() {}
