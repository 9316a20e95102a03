//! A tool named like one of the user's own types: the user's type keeps its name, the tool's
//! types are reached through the tool's module (`weather_tool::Weather`). Inside the module a
//! parameter type the module's own names would shadow (`Note` for a tool `note`, `String` for a
//! tool `string`) is still the user's, and std's.

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

#[derive(Clone, Debug, serde::Deserialize, Serialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

/// Keep a note.
#[tool]
fn note(note: Note) -> Note {
    note
}

/// Echo a string.
#[tool]
fn string(value: String, more: Vec<String>) -> String {
    format!("{value}{}", more.concat())
}

fn main() {
    let kept = note_tool::NoteArgs {
        note: Note {
            text: "hi".to_owned(),
        },
    };
    let _ = (kept.note.text, string_tool::StringArgs { value: String::new(), more: Vec::new() });
    let _ = AgentBuilder::new("notes").tool(note_tool::Note).tool(string_tool::String);
    let own = Weather { celsius: 1 };
    let _ = (own.celsius, Forecast { days: 2 }.days);
    let _ = AgentBuilder::new("plain").tool(weather_tool::Weather);
    let desk = Desk.builder().model(ScriptedModel::new([])).build().unwrap();
    assert_eq!(desk.tools().len(), 2);
}
