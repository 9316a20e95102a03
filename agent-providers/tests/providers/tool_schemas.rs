//! A `#[tool]`'s parameters reach every provider exactly as a hand-written schema would: no
//! `$schema` key, `additionalProperties: false` on the arguments object, nested types under
//! `$defs`. The request bodies of an agent using the `#[tool]` and of one using a `FnTool` with
//! the hand-written schema are compared whole, on OpenAI and on Anthropic.

use std::time::Duration;

use crate::support::{Reply, TestServer};
use agent_core::{AgentBuilder, FnTool, Model, tool};
use agent_providers::{Anthropic, HttpSettings, OpenAi};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How warm.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// A place on the way.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Stop {
    /// The town.
    town: String,
    /// Nights there.
    nights: u8,
}

/// Plan a trip.
#[tool]
fn plan_trip(
    /// Where to.
    city: String,
    /// How many nights.
    #[arg(default = 2)]
    nights: u32,
    /// Anything else.
    note: Option<String>,
    /// Temperatures in.
    unit: Unit,
    /// Where to stop on the way.
    stops: Vec<Stop>,
) -> String {
    format!("{city} {nights} {note:?} {unit:?} {stops:?}")
}

/// The schema a person would write for `plan_trip` by hand.
fn hand_written() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where to."},
            "nights": {"type": "integer", "format": "uint32", "minimum": 0, "default": 2, "description": "How many nights."},
            "note": {"type": ["string", "null"], "description": "Anything else."},
            "unit": {"$ref": "#/$defs/Unit", "description": "Temperatures in."},
            "stops": {"type": "array", "items": {"$ref": "#/$defs/Stop"}, "description": "Where to stop on the way."}
        },
        "required": ["city", "unit", "stops"],
        "additionalProperties": false,
        "$defs": {
            "Unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "How warm."},
            "Stop": {
                "type": "object",
                "description": "A place on the way.",
                "properties": {
                    "town": {"type": "string", "description": "The town."},
                    "nights": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255, "description": "Nights there."}
                },
                "required": ["town", "nights"]
            }
        }
    })
}

fn settings() -> HttpSettings {
    HttpSettings {
        max_retries: 0,
        idle_timeout: Duration::from_secs(10),
        ..HttpSettings::default()
    }
}

/// The request body an agent with `model` sends for one turn, tools registered by `tools`.
async fn body_sent(
    reply: String,
    model: impl Fn(&str) -> std::sync::Arc<dyn Model>,
    tools: impl Fn(AgentBuilder) -> AgentBuilder,
) -> Value {
    let server = TestServer::start([Reply::sse_split(&reply, 64)]).await;
    let agent = tools(AgentBuilder::new("planner").model_arc(model(&server.url)))
        .build()
        .expect("the agent builds");
    let result = agent.run("Plan it.").await;
    assert_eq!(result.text, "ok", "{result:?}");
    server.requests()[0].json()
}

fn typed(builder: AgentBuilder) -> AgentBuilder {
    builder.tool(plan_trip_tool::PlanTrip)
}

fn by_hand(builder: AgentBuilder) -> AgentBuilder {
    builder.dyn_tool(FnTool::new(
        "plan_trip",
        "Plan a trip.",
        hand_written(),
        |_, _| async { Ok(json!("planned")) },
    ))
}

fn openai(url: &str) -> std::sync::Arc<dyn Model> {
    std::sync::Arc::new(
        OpenAi::new("key")
            .base_url(format!("{url}/v1"))
            .model("gpt-test")
            .settings(settings()),
    )
}

fn anthropic(url: &str) -> std::sync::Arc<dyn Model> {
    std::sync::Arc::new(
        Anthropic::new("key")
            .base_url(url)
            .model("claude-test")
            .settings(settings()),
    )
}

const OPENAI_OK: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

const ANTHROPIC_OK: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"c\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

#[tokio::test]
async fn openai_receives_the_tool_exactly_as_written_by_hand() {
    let typed = body_sent(OPENAI_OK.to_owned(), openai, typed).await;
    assert_eq!(
        typed["tools"],
        json!([{"type": "function", "function": {
            "name": "plan_trip",
            "description": "Plan a trip.",
            "parameters": hand_written()
        }}])
    );
    assert_eq!(
        typed,
        body_sent(OPENAI_OK.to_owned(), openai, by_hand).await
    );
}

#[tokio::test]
async fn anthropic_receives_the_tool_exactly_as_written_by_hand() {
    let typed = body_sent(ANTHROPIC_OK.to_owned(), anthropic, typed).await;
    assert_eq!(
        typed["tools"],
        json!([{"name": "plan_trip", "description": "Plan a trip.", "input_schema": hand_written()}])
    );
    assert_eq!(
        typed,
        body_sent(ANTHROPIC_OK.to_owned(), anthropic, by_hand).await
    );
}

/// A tool without parameters, its schema written by hand (or listed by an MCP server) as
/// `{"type": "object"}`, which OpenAI refuses ("object schema missing properties").
fn no_parameters(builder: AgentBuilder) -> AgentBuilder {
    builder.dyn_tool(FnTool::sync(
        "now",
        "The time.",
        json!({"type": "object"}),
        |_, _| Ok(json!("noon")),
    ))
}

#[tokio::test]
async fn an_object_schema_without_properties_reaches_openai_with_empty_ones() {
    let openai = body_sent(OPENAI_OK.to_owned(), openai, no_parameters).await;
    assert_eq!(
        openai["tools"][0]["function"]["parameters"],
        json!({"type": "object", "properties": {}})
    );
    let anthropic = body_sent(ANTHROPIC_OK.to_owned(), anthropic, no_parameters).await;
    assert_eq!(
        anthropic["tools"][0]["input_schema"],
        json!({"type": "object"}),
        "Anthropic takes it as it is"
    );
}
