//! Typed output against AIMock, in each mode and through both providers. The fixtures only
//! answer a request of the expected shape (`aimock/fixtures.json`): in the native mode a
//! `json_schema` response format (OpenAI) or the answer tool named after the schema
//! (Anthropic); in the tool mode the `final_result` tool, then its error result; in the
//! prompted mode the schema in the system prompt, then the user message that sends the answer
//! back. A request of another shape finds no fixture and fails the turn.

use crate::aimock::Aimock;
use crate::conformance::{anthropic, openai};
use agent_core::{AgentBuilder, FnTool, Message, Model, OutputMode, TurnResult, TurnStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    number: String,
    total_cents: u64,
}

/// Why the fixtures' wrong answer fails.
const REASON: &str =
    "invalid answer at `total_cents`: invalid type: string \"twelve\", expected u64";

/// Runs a turn of an invoice agent in `mode` (with a `lookup` tool in the tool mode), checks
/// that it returned the invoice after `requests` requests to `path`, and returns it.
async fn typed_turn(
    model: impl Model + 'static,
    mock: &Aimock,
    mode: OutputMode,
    prompt: &str,
    path: &str,
    requests: usize,
) -> TurnResult {
    let mut builder = AgentBuilder::new("extractor")
        .instructions("Extract invoices.")
        .model(model)
        .output::<Invoice>()
        .output_mode(mode);
    if mode == OutputMode::Tool {
        builder = builder.dyn_tool(FnTool::new(
            "lookup",
            "Looks an invoice up.",
            json!({"type": "object", "properties": {"number": {"type": "string"}}}),
            |_, _| async { Ok(json!("found")) },
        ));
    }
    let result = builder.build().unwrap().run(prompt).await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        result.output::<Invoice>().unwrap(),
        &Invoice {
            number: "INV-7".into(),
            total_cents: 1250
        }
    );
    assert_eq!(mock.journal_paths(), vec![path; requests]);
    result
}

/// The tool mode's first answer failed and went back as its call's error result.
fn sent_back_by_tool(result: &TurnResult, call: &str) {
    let failed = &result.steps[0].tool_results;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].call_id, call);
    assert!(failed[0].is_error);
    assert_eq!(
        failed[0].content,
        format!("{REASON}\nCall `final_result` again with a corrected answer.")
    );
    assert_eq!(result.steps[1].tool_calls[0].id, "call_right");
}

/// The prompted mode's first answer failed and went back as a user message.
fn sent_back_by_message(result: &TurnResult) {
    let retry = format!("Your answer was not accepted: {REASON}\nAnswer again, correcting it.");
    assert!(
        result
            .messages
            .iter()
            .any(|message| matches!(message, Message::User { content, .. } if *content == retry)),
        "{:?}",
        result.messages
    );
    assert_eq!(result.steps.len(), 2);
}

#[tokio::test]
async fn openai_native_mode_against_aimock() {
    let mock = Aimock::start();
    let prompt = "Extract the invoice natively.";
    typed_turn(
        openai(&mock),
        &mock,
        OutputMode::Native,
        prompt,
        "/v1/chat/completions",
        1,
    )
    .await;
}

#[tokio::test]
async fn anthropic_native_mode_against_aimock() {
    let mock = Aimock::start();
    let prompt = "Extract the invoice natively.";
    typed_turn(
        anthropic(&mock),
        &mock,
        OutputMode::Native,
        prompt,
        "/v1/messages",
        1,
    )
    .await;
}

#[tokio::test]
async fn openai_tool_mode_with_a_retry_against_aimock() {
    let mock = Aimock::start();
    let prompt = "Extract the invoice by tool.";
    let result = typed_turn(
        openai(&mock),
        &mock,
        OutputMode::Tool,
        prompt,
        "/v1/chat/completions",
        2,
    )
    .await;
    sent_back_by_tool(&result, "call_wrong");
}

#[tokio::test]
async fn anthropic_tool_mode_with_a_retry_against_aimock() {
    let mock = Aimock::start();
    let prompt = "Extract the invoice by tool.";
    let result = typed_turn(
        anthropic(&mock),
        &mock,
        OutputMode::Tool,
        prompt,
        "/v1/messages",
        2,
    )
    .await;
    sent_back_by_tool(&result, "call_wrong");
}

#[tokio::test]
async fn openai_prompted_mode_with_a_retry_against_aimock() {
    let mock = Aimock::start();
    let prompt = "Extract the invoice by prompt.";
    let result = typed_turn(
        openai(&mock),
        &mock,
        OutputMode::Prompted,
        prompt,
        "/v1/chat/completions",
        2,
    )
    .await;
    sent_back_by_message(&result);
}

#[tokio::test]
async fn anthropic_prompted_mode_with_a_retry_against_aimock() {
    let mock = Aimock::start();
    let prompt = "Extract the invoice by prompt.";
    let result = typed_turn(
        anthropic(&mock),
        &mock,
        OutputMode::Prompted,
        prompt,
        "/v1/messages",
        2,
    )
    .await;
    sent_back_by_message(&result);
}
