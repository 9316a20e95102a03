//! A tool named like one of the user's own types: the user's type keeps its name, the tool's
//! types are reached through the tool's module (`weather_tool::Weather`).

use agent_core::{AgentBuilder, AgentSpec, ScriptedModel, ToolCallContext, agent, tool};
use serde::Serialize;

#[derive(Serialize)]
struct Weather {
    celsius: i32,
}

/// Current weather for a city.
#[tool]
fn weather(city: String) -> Weather {
    let _ = city;
    Weather { celsius: 20 }
}

#[derive(Serialize)]
struct Forecast {
    days: u32,
}

struct Desk;

#[agent(tools(weather))]
impl Desk {
    /// A forecast.
    #[tool]
    fn forecast(&self, days: u32) -> Forecast {
        Forecast { days }
    }

    #[hook(before_tool_call, tool = "weather")]
    fn check(&self, ctx: &ToolCallContext<weather_tool::WeatherArgs>) {
        let _ = &ctx.input.city;
    }
}

fn main() {
    let own = Weather { celsius: 1 };
    let _ = (own.celsius, Forecast { days: 2 }.days);
    let _ = AgentBuilder::new("plain").tool(weather_tool::Weather);
    let desk = Desk.builder().model(ScriptedModel::new([])).build().unwrap();
    assert_eq!(desk.tools().len(), 2);
}
