//! Typed output in the final-answer tool and prompted modes, over the wire: the request each
//! provider gets (the final-answer tool beside the agent's tools with the tool choice that
//! requires a call, or the schema in the system prompt and no tools), the answer streamed back
//! in pieces read as the typed value, and a wrong answer sent back (as the final-answer call's
//! error result, or as a user message) before the right one.

use crate::support::{Reply, TestServer, settings};
use agent_core::{
    Agent, AgentBuilder, FnTool, Model, OutputMode, TurnEvent, TurnStatus, schema_for,
};
use agent_providers::{Anthropic, OpenAi};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    number: String,
    total_cents: u64,
}

/// The right answer, as the model streams it.
const PIECES: [&str; 4] = [
    r#"{"number""#,
    r#":"INV-"#,
    r#"7","total_cents":12"#,
    r#"50}"#,
];

/// A wrong answer: the total is a string.
const WRONG: &str = r#"{"number":"INV-7","total_cents":"twelve"}"#;

/// Why the wrong answer fails, as the model reads it.
const REASON: &str =
    "invalid answer at `total_cents`: invalid type: string \"twelve\", expected u64";

fn invoice() -> Invoice {
    Invoice {
        number: "INV-7".into(),
        total_cents: 1250,
    }
}

fn openai(server: &TestServer) -> OpenAi {
    OpenAi::new("sk-test-key")
        .base_url(format!("{}/v1/", server.url))
        .model("gpt-test")
        .settings(settings(0))
}

fn anthropic(server: &TestServer) -> Anthropic {
    Anthropic::new("sk-ant-test")
        .base_url(&server.url)
        .settings(settings(0))
}

/// An invoice agent in `mode`; in the tool mode it also has a `lookup` tool.
fn agent(model: impl Model + 'static, mode: OutputMode) -> Agent {
    let builder = AgentBuilder::new("extractor")
        .instructions("Extract invoices.")
        .model(model)
        .output::<Invoice>()
        .output_mode(mode);
    let builder = match mode {
        OutputMode::Tool => builder.dyn_tool(FnTool::new(
            "lookup",
            "Looks an invoice up.",
            json!({"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]}),
            |_, _| async { Ok(json!("found")) },
        )),
        _ => builder,
    };
    builder.build().unwrap()
}

/// Runs one streamed turn: the partial values, and the typed output.
async fn typed_turn(agent: &Agent) -> (Vec<Value>, Option<Invoice>) {
    let mut stream = agent.conversation().stream("Extract the invoice.");
    let (mut partials, mut output) = (Vec::new(), None);
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::PartialOutput { value, .. } => partials.push(value),
            TurnEvent::Finished(result) => {
                assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
                output = Some(result.output::<Invoice>().unwrap().clone());
            }
            _ => {}
        }
    }
    (partials, output)
}

/// The partial values of the pieces, streamed as text or as the final-answer call's arguments.
fn streamed_partials() -> Vec<Value> {
    vec![
        json!({}),
        json!({"number": "INV-"}),
        json!({"number": "INV-7", "total_cents": 12}),
        json!({"number": "INV-7", "total_cents": 1250}),
    ]
}

/// The system prompt of the prompted mode: the instructions, then the schema.
fn prompted_system() -> String {
    format!(
        "Extract invoices.\n\nGive your final answer as one JSON value matching this JSON \
         Schema, and nothing else:\n{}",
        serde_json::to_string(&schema_for::<Invoice>()).unwrap()
    )
}

// ---- OpenAI ----

fn openai_sse(chunks: &[Value]) -> String {
    let mut body = String::new();
    for chunk in chunks {
        body += &format!("data: {chunk}\n\n");
    }
    body + "data: [DONE]\n\n"
}

/// A streamed reply calling `name` with `arguments` in these pieces.
fn openai_call(id: &str, name: &str, pieces: &[&str]) -> Reply {
    let mut chunks = vec![
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
        {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}
    ]}, "finish_reason": null}]}),
    ];
    for piece in pieces {
        chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": piece}}
        ]}, "finish_reason": null}]}));
    }
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    Reply::sse_split(&openai_sse(&chunks), 29)
}

/// A streamed text reply in these pieces.
fn openai_text(pieces: &[&str]) -> Reply {
    let mut chunks: Vec<Value> = pieces
        .iter()
        .map(|piece| json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}))
        .collect();
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
    Reply::sse_split(&openai_sse(&chunks), 31)
}

#[tokio::test]
async fn openai_tool_mode_sends_the_final_tool_beside_the_agents_and_requires_a_call() {
    let server = TestServer::start([openai_call("call_1", "final_result", &PIECES)]).await;
    let agent = agent(openai(&server), OutputMode::Tool);

    let (partials, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    // The call's start names the final-answer tool: its arguments stream as partials.
    assert_eq!(partials, streamed_partials());
    let sent = server.requests()[0].json();
    assert_eq!(sent["tool_choice"], "required");
    let tools = sent["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lookup", "final_result"]);
    assert_eq!(tools[1]["function"]["parameters"], schema_for::<Invoice>());
    assert!(sent.get("response_format").is_none(), "{sent}");
}

#[tokio::test]
async fn openai_tool_mode_sends_a_wrong_answer_back_as_the_calls_error_result() {
    let server = TestServer::start([
        openai_call("call_1", "final_result", &[WRONG]),
        openai_call("call_2", "final_result", &PIECES),
    ])
    .await;
    let agent = agent(openai(&server), OutputMode::Tool);

    let (_, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].json()["messages"].clone();
    let messages = messages.as_array().unwrap();
    assert_eq!(
        messages[messages.len() - 2..],
        [
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "final_result", "arguments": WRONG}}
            ]}),
            json!({"role": "tool", "tool_call_id": "call_1",
                "content": format!("{REASON}\nCall `final_result` again with a corrected answer.")}),
        ]
    );
}

#[tokio::test]
async fn openai_prompted_mode_puts_the_schema_in_the_system_prompt_and_reads_the_text() {
    let server = TestServer::start([openai_text(&PIECES)]).await;
    let agent = agent(openai(&server), OutputMode::Prompted);

    let (partials, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    assert_eq!(partials, streamed_partials());
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": prompted_system()})
    );
    for key in ["tools", "tool_choice", "response_format"] {
        assert!(sent.get(key).is_none(), "{key}: {sent}");
    }
}

#[tokio::test]
async fn openai_prompted_mode_sends_a_wrong_answer_back_as_a_user_message() {
    let server = TestServer::start([openai_text(&[WRONG]), openai_text(&PIECES)]).await;
    let agent = agent(openai(&server), OutputMode::Prompted);

    let (_, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    let messages = server.requests()[1].json()["messages"].clone();
    let messages = messages.as_array().unwrap();
    assert_eq!(
        messages[messages.len() - 2..],
        [
            json!({"role": "assistant", "content": WRONG}),
            json!({"role": "user", "content": format!(
                "Your answer was not accepted: {REASON}\nAnswer again, correcting it."
            )}),
        ]
    );
}

// ---- Anthropic ----

/// One SSE event as Anthropic writes it.
fn anthropic_event(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("message").to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}

/// A streamed message of one content block (`block`, filled by these deltas).
fn anthropic_message(block: Value, deltas: Vec<Value>, stop_reason: &str) -> Reply {
    let mut body = anthropic_event(json!({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}
    }}));
    body += &anthropic_event(
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    );
    for delta in deltas {
        body +=
            &anthropic_event(json!({"type": "content_block_delta", "index": 0, "delta": delta}));
    }
    body += &anthropic_event(json!({"type": "content_block_stop", "index": 0}));
    body += &anthropic_event(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 12}}));
    body += &anthropic_event(json!({"type": "message_stop"}));
    Reply::sse_split(&body, 41)
}

fn anthropic_call(id: &str, name: &str, pieces: &[&str]) -> Reply {
    anthropic_message(
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
        pieces
            .iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .collect(),
        "tool_use",
    )
}

fn anthropic_text(pieces: &[&str]) -> Reply {
    anthropic_message(
        json!({"type": "text", "text": ""}),
        pieces
            .iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect(),
        "end_turn",
    )
}

#[tokio::test]
async fn anthropic_tool_mode_sends_the_final_tool_beside_the_agents_and_requires_a_call() {
    let server = TestServer::start([anthropic_call("toolu_1", "final_result", &PIECES)]).await;
    let agent = agent(anthropic(&server), OutputMode::Tool);

    let (partials, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    assert_eq!(partials, streamed_partials());
    let sent = server.requests()[0].json();
    assert_eq!(sent["tool_choice"], json!({"type": "any"}));
    let tools = sent["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lookup", "final_result"]);
    assert_eq!(tools[1]["input_schema"], schema_for::<Invoice>());
    assert_eq!(sent["system"], "Extract invoices.");
}

#[tokio::test]
async fn anthropic_tool_mode_sends_a_wrong_answer_back_as_the_calls_error_result() {
    let server = TestServer::start([
        anthropic_call("toolu_1", "final_result", &[WRONG]),
        anthropic_call("toolu_2", "final_result", &PIECES),
    ])
    .await;
    let agent = agent(anthropic(&server), OutputMode::Tool);

    let (_, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    let messages = server.requests()[1].json()["messages"].clone();
    let messages = messages.as_array().unwrap();
    assert_eq!(
        messages[messages.len() - 2..],
        [
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "final_result",
                    "input": serde_json::from_str::<Value>(WRONG).unwrap()}
            ]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                    "content": format!("{REASON}\nCall `final_result` again with a corrected answer.")}
            ]}),
        ]
    );
}

#[tokio::test]
async fn anthropic_tool_mode_with_extended_thinking_leaves_the_choice_to_the_model() {
    let server = TestServer::start([anthropic_call("toolu_1", "final_result", &PIECES)]).await;
    let agent = AgentBuilder::new("extractor")
        .model(anthropic(&server))
        .output::<Invoice>()
        .output_mode(OutputMode::Tool)
        .provider_options(
            json!({"thinking": {"type": "enabled", "budget_tokens": 1024}})
                .as_object()
                .unwrap()
                .clone(),
        )
        .build()
        .unwrap();

    let (_, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    // Extended thinking forbids forcing a tool call (`any`): a text reply is sent back instead.
    let sent = server.requests()[0].json();
    assert_eq!(sent["tool_choice"], json!({"type": "auto"}));
}

#[tokio::test]
async fn anthropic_prompted_mode_puts_the_schema_in_the_system_prompt_and_reads_the_text() {
    let server = TestServer::start([anthropic_text(&PIECES)]).await;
    let agent = agent(anthropic(&server), OutputMode::Prompted);

    let (partials, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    assert_eq!(partials, streamed_partials());
    let sent = server.requests()[0].json();
    assert_eq!(sent["system"], prompted_system());
    assert!(sent.get("tools").is_none(), "{sent}");
    assert!(sent.get("tool_choice").is_none(), "{sent}");
}

#[tokio::test]
async fn anthropic_prompted_mode_sends_a_wrong_answer_back_as_a_user_message() {
    let server = TestServer::start([anthropic_text(&[WRONG]), anthropic_text(&PIECES)]).await;
    let agent = agent(anthropic(&server), OutputMode::Prompted);

    let (_, output) = typed_turn(&agent).await;

    assert_eq!(output, Some(invoice()));
    let messages = server.requests()[1].json()["messages"].clone();
    let messages = messages.as_array().unwrap();
    assert_eq!(
        messages[messages.len() - 2..],
        [
            json!({"role": "assistant", "content": [{"type": "text", "text": WRONG}]}),
            json!({"role": "user", "content": [{"type": "text", "text": format!(
                "Your answer was not accepted: {REASON}\nAnswer again, correcting it."
            )}]}),
        ]
    );
}

// ---- One final-answer tool per variant ----

/// Serde's default representation; `Cancel` is the string `"Cancel"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
enum Decision {
    Approve { amount_cents: u64 },
    Cancel,
}

fn decision_agent(model: impl Model + 'static) -> Agent {
    AgentBuilder::new("decider")
        .model(model)
        .output::<Decision>()
        .output_tool_per_variant()
        .build()
        .unwrap()
}

/// The tools' names and parameters as a provider's request lists them (`function` for OpenAI).
fn variant_tools(tools: &Value, schema_key: &str) -> Vec<(String, Value)> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            let tool = tool.get("function").unwrap_or(tool);
            (
                tool["name"].as_str().unwrap().to_owned(),
                tool[schema_key].clone(),
            )
        })
        .collect()
}

/// The tools in the schema's order: schemars lists undocumented unit variants first.
fn expected_variant_tools() -> Vec<(String, Value)> {
    vec![
        (
            "final_result_cancel".to_owned(),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        (
            "final_result_approve".to_owned(),
            json!({
                "type": "object",
                "properties": {"amount_cents": {"type": "integer", "format": "uint64", "minimum": 0}},
                "required": ["amount_cents"],
                "additionalProperties": false,
            }),
        ),
    ]
}

#[tokio::test]
async fn openai_per_variant_tools_and_a_unit_variant_called_without_arguments() {
    let server = TestServer::start([openai_call("call_1", "final_result_cancel", &[])]).await;
    let agent = decision_agent(openai(&server));

    let result = agent.run("Decide.").await;

    assert_eq!(result.output::<Decision>().unwrap(), &Decision::Cancel);
    assert_eq!(result.text, r#""Cancel""#);
    let sent = server.requests()[0].json();
    assert_eq!(sent["tool_choice"], "required");
    assert_eq!(
        variant_tools(&sent["tools"], "parameters"),
        expected_variant_tools()
    );
}

#[tokio::test]
async fn anthropic_per_variant_tools_and_a_unit_variant_called_without_input() {
    let server = TestServer::start([anthropic_call("toolu_1", "final_result_cancel", &[])]).await;
    let agent = decision_agent(anthropic(&server));

    let result = agent.run("Decide.").await;

    assert_eq!(result.output::<Decision>().unwrap(), &Decision::Cancel);
    let sent = server.requests()[0].json();
    assert_eq!(sent["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        variant_tools(&sent["tools"], "input_schema"),
        expected_variant_tools()
    );
}
