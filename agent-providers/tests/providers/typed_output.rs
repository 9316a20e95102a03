//! Typed output in the native mode, over the wire: an agent with an output type and no tools
//! asks OpenAI for a `json_schema` response format and Anthropic for a forced answer tool; the
//! answer streams back in pieces, arrives as partial values on the stream API, and is the
//! turn's typed value.

use std::time::Duration;

use crate::support::{Reply, TestServer};
use agent_core::{AgentBuilder, Model, TurnEvent};
use agent_providers::{Anthropic, HttpSettings, OpenAi};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    number: String,
    total_cents: u64,
}

/// The answer, as the model streams it.
const PIECES: [&str; 4] = [
    r#"{"number""#,
    r#":"INV-"#,
    r#"7","total_cents":12"#,
    r#"50}"#,
];

fn settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(5),
        first_byte_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries: 0,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..HttpSettings::default()
    }
}

/// Runs one streamed turn of an invoice agent on `model`: the partial values, and the output.
async fn typed_turn(model: impl Model + 'static) -> (Vec<Value>, Option<Invoice>) {
    let agent = AgentBuilder::new("extractor")
        .model(model)
        .output::<Invoice>()
        .build()
        .unwrap();
    let mut stream = agent.conversation().stream("Extract the invoice.");
    let (mut partials, mut output) = (Vec::new(), None);
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::PartialOutput { value, .. } => partials.push(value),
            TurnEvent::Finished(result) => {
                assert!(result.error.is_none(), "{:?}", result.error);
                output = result
                    .output
                    .map(|output| serde_json::from_value(output.json().clone()).unwrap());
            }
            _ => {}
        }
    }
    (partials, output)
}

fn expected_partials() -> Vec<Value> {
    vec![
        json!({}),
        json!({"number": "INV-"}),
        json!({"number": "INV-7", "total_cents": 12}),
        json!({"number": "INV-7", "total_cents": 1250}),
    ]
}

fn invoice() -> Option<Invoice> {
    Some(Invoice {
        number: "INV-7".into(),
        total_cents: 1250,
    })
}

#[tokio::test]
async fn openai_native_mode_sends_the_response_format_and_reads_the_streamed_answer() {
    let mut body = String::new();
    for piece in PIECES {
        let chunk =
            json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
        body += &format!("data: {chunk}\n\n");
    }
    body += "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = TestServer::start([Reply::sse_split(&body, 37)]).await;
    let model = OpenAi::new("sk-test-key")
        .base_url(format!("{}/v1/", server.url))
        .model("gpt-test")
        .settings(settings());

    let (partials, output) = typed_turn(model).await;

    assert_eq!(output, invoice());
    assert_eq!(partials, expected_partials());
    let sent = server.requests()[0].json();
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["name"], "Invoice");
    assert_eq!(sent["response_format"]["json_schema"]["strict"], true);
    let schema = &sent["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["number", "total_cents"]));
    assert!(sent.get("tools").is_none(), "{sent}");
}

/// An answer nested without bound (a million open arrays) fails the turn's output, as any
/// answer that is not the type's JSON does: its partial values stop at the nesting serde_json
/// parses, where they overflowed the stack.
#[tokio::test]
async fn an_answer_nested_without_bound_fails_the_output_without_overflowing() {
    let deep = format!(r#"{{"number":{}"#, "[".repeat(1_000_000));
    let mut body = String::new();
    for piece in deep.as_bytes().chunks(100_000) {
        let piece = std::str::from_utf8(piece).unwrap();
        let chunk =
            json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
        body += &format!("data: {chunk}\n\n");
    }
    body += "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = TestServer::start([Reply::sse_split(&body, 64 * 1024)]).await;
    let model = OpenAi::new("sk-test-key")
        .base_url(format!("{}/v1/", server.url))
        .model("gpt-test")
        .settings(settings());
    let agent = AgentBuilder::new("extractor")
        .model(model)
        .output::<Invoice>()
        .build()
        .unwrap();
    let mut stream = agent.conversation().stream("Extract the invoice.");
    let mut finished = None;
    while let Some(event) = stream.next().await {
        if let TurnEvent::Finished(result) = event {
            finished = Some(result);
        }
    }
    let result = finished.expect("the turn finishes");
    assert!(result.output.is_none());
    assert!(result.error.is_some(), "{result:?}");
}

/// One SSE event as Anthropic writes it.
fn sse(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("message").to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}

#[tokio::test]
async fn anthropic_native_mode_forces_the_answer_tool_and_reads_its_streamed_input() {
    let mut body = sse(json!({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}
    }}));
    body += &sse(json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_01", "name": "Invoice", "input": {}}}));
    for piece in PIECES {
        body += &sse(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": piece}}));
    }
    body += &sse(json!({"type": "content_block_stop", "index": 0}));
    body += &sse(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
        "usage": {"output_tokens": 12}}),
    );
    body += &sse(json!({"type": "message_stop"}));
    let server = TestServer::start([Reply::sse_split(&body, 41)]).await;
    let model = Anthropic::new("sk-ant-test")
        .base_url(&server.url)
        .settings(settings());

    let (partials, output) = typed_turn(model).await;

    assert_eq!(output, invoice());
    assert_eq!(partials, expected_partials());
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "tool", "name": "Invoice"})
    );
    let tools = sent["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{sent}");
    assert_eq!(tools[0]["name"], "Invoice");
    assert_eq!(
        tools[0]["input_schema"]["required"],
        json!(["number", "total_cents"])
    );
}

/// An Anthropic message of these blocks' frames, stopping for `stop_reason`.
fn anthropic_message(blocks: &str, stop_reason: &str) -> String {
    let mut body = sse(json!({"type": "message_start", "message": {
        "id": "msg_02", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}
    }}));
    body += blocks;
    body += &sse(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": 12}}),
    );
    body + &sse(json!({"type": "message_stop"}))
}

/// A typed turn of the invoice agent on Anthropic answering `body`: the result and its answer.
async fn anthropic_invoice_turn(body: &str) -> (agent_core::TurnResult, Option<Invoice>) {
    let server = TestServer::start([Reply::sse_split(body, 41)]).await;
    let model = Anthropic::new("sk-ant-test")
        .base_url(&server.url)
        .settings(settings());
    let agent = AgentBuilder::new("extractor")
        .model(model)
        .output::<Invoice>()
        .build()
        .unwrap();
    let result = agent.run("Extract the invoice.").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(server.requests().len(), 1, "answered at the first attempt");
    let output = result
        .output
        .as_ref()
        .map(|output| serde_json::from_value::<Invoice>(output.json().clone()).unwrap());
    (result, output)
}

/// With extended thinking the answer tool is not forced, and Claude often writes a sentence
/// before (or after) calling it: that text is not the answer, which is the tool's input alone;
/// it is kept beside the step as provider metadata.
#[tokio::test]
async fn anthropic_text_around_the_answer_tool_is_not_part_of_the_answer() {
    let mut blocks = sse(json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}}));
    blocks += &sse(json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": "Here is the invoice."}}));
    blocks += &sse(json!({"type": "content_block_stop", "index": 0}));
    blocks += &sse(json!({"type": "content_block_start", "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_02", "name": "Invoice", "input": {}}}));
    for piece in PIECES {
        blocks += &sse(json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": piece}}));
    }
    blocks += &sse(json!({"type": "content_block_stop", "index": 1}));
    blocks += &sse(json!({"type": "content_block_start", "index": 2,
        "content_block": {"type": "text", "text": " Done."}}));
    blocks += &sse(json!({"type": "content_block_stop", "index": 2}));
    let (result, output) = anthropic_invoice_turn(&anthropic_message(&blocks, "tool_use")).await;
    assert_eq!(output, invoice());
    assert_eq!(
        result.steps[0].provider_metadata,
        [json!({"text": "Here is the invoice. Done."})]
    );
}

/// A reply of text alone (no answer tool, which extended thinking does not force) is the
/// reply's text, held until the message ends and then read as the answer.
#[tokio::test]
async fn anthropic_text_without_the_answer_tool_is_the_reply_s_text() {
    let mut blocks = sse(json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": "{\"number\":\"INV-7\","}}));
    blocks += &sse(json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": "\"total_cents\":1250}"}}));
    blocks += &sse(json!({"type": "content_block_stop", "index": 0}));
    let (result, output) = anthropic_invoice_turn(&anthropic_message(&blocks, "end_turn")).await;
    assert_eq!(result.text, r#"{"number":"INV-7","total_cents":1250}"#);
    assert_eq!(output, invoice());
}
