//! Typed output: the final-answer tool, the native and prompted modes, parse failures sent back
//! to the model, retries running out, validators, and tools beside the typed answer.

use agent_core::{
    AgentBuilder, Hook, Message, OutputCheck, OutputError, OutputMode, ScriptedModel, ScriptedStep,
    StopReason, ToolChoice, TurnErrorKind, TurnEvent, TurnRequest, TurnStatus, event,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tests::{Add, Recorded, Trace, lines};

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    number: String,
    total_cents: u64,
}

const GOOD: &str = r#"{"number":"INV-7","total_cents":1250}"#;
const BAD: &str = r#"{"number":"INV-7","total_cents":"twelve"}"#;

fn invoice_agent(model: &ScriptedModel, trace: &Trace) -> AgentBuilder {
    AgentBuilder::new("extractor")
        .model(model.clone())
        .output::<Invoice>()
        .record_all(trace)
}

/// The trace without streamed chunks, which every test here checks apart.
fn without_chunks(trace: &Trace) -> Vec<String> {
    let mut entries = trace.take();
    entries.retain(|entry| {
        !entry.starts_with("on_chunk(text") && !entry.starts_with("on_chunk(tool_input")
    });
    entries
}

fn tool_result(message: &Message) -> (&str, bool) {
    match message {
        Message::Tool {
            content, is_error, ..
        } => (content.as_str(), *is_error),
        other => panic!("expected a tool result, got {other:?}"),
    }
}

#[tokio::test]
async fn a_wrong_answer_goes_back_through_the_final_tool_and_the_right_one_is_returned() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", BAD),
        ScriptedStep::new().tool_call("c2", "final_result", GOOD),
    ]);
    let agent = invoice_agent(&model, &trace).build().unwrap();

    let result = agent.run("Extract the invoice.").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        result.output::<Invoice>().unwrap(),
        &Invoice {
            number: "INV-7".into(),
            total_cents: 1250
        }
    );
    assert_eq!(
        result.output.as_ref().unwrap().json(),
        &json!({"number": "INV-7", "total_cents": 1250})
    );
    assert_eq!(result.text, r#"{"number":"INV-7","total_cents":1250}"#);
    // No tool hook fires for the final-answer tool; each retry is a step of its own.
    assert_eq!(
        without_chunks(&trace),
        lines(&[
            "before_run(Extract the invoice.)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c1 final_result)",
            "on_chunk(tool_call:c1 final_result)",
            "on_llm_end(0)",
            "on_chunk(tool_result:c1 final_result error)",
            "on_step_finish(0 output_failure: invalid answer at `total_cents`: invalid type: string \"twelve\", expected u64)",
            "before_step(1)",
            "on_llm_start(1)",
            "on_chunk(tool_start:c2 final_result)",
            "on_chunk(tool_call:c2 final_result)",
            "on_llm_end(1)",
            "on_chunk(tool_result:c2 final_result ok)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    let requests = model.requests();
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["final_result"]);
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
    assert_eq!(
        requests[0].tools[0].parameters["properties"]["total_cents"]["type"],
        "integer"
    );
    assert!(requests[0].output_schema.is_none());
    // The model reads why its answer failed, with the JSON path.
    let (content, is_error) = tool_result(requests[1].messages.last().unwrap());
    assert!(is_error);
    assert!(
        content.starts_with("invalid answer at `total_cents`: invalid type: string \"twelve\""),
        "{content}"
    );
    // Every call of the stored history has its result.
    let (accepted, is_error) = tool_result(result.messages.last().unwrap());
    assert_eq!(
        (accepted, is_error),
        ("The final answer was accepted.", false)
    );
    assert!(result.steps[0].tool_results[0].is_error);
}

#[tokio::test]
async fn retries_running_out_fail_the_turn_with_the_last_answer_and_every_reason() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", BAD),
        ScriptedStep::new().tool_call("c2", "final_result", r#"{"number":"INV-7"}"#),
    ]);
    let agent = invoice_agent(&model, &trace).build().unwrap();

    let result = agent.run("Extract the invoice.").await;

    assert_eq!(result.status, TurnStatus::Error);
    let error = result.error.clone().unwrap();
    let TurnErrorKind::Output(failure) = &error.kind else {
        panic!("expected an output failure, got {error:?}");
    };
    assert_eq!(failure.raw, r#"{"number":"INV-7"}"#);
    assert_eq!(failure.reasons.len(), 2);
    assert!(failure.reasons[0].contains("`total_cents`"), "{failure:?}");
    assert_eq!(
        failure.reasons[1],
        "invalid answer: missing field `total_cents`"
    );
    assert!(
        error
            .message
            .starts_with("no valid answer after 2 attempts: ")
    );
    assert_eq!(
        result.output::<Invoice>(),
        Err(OutputError::Missing {
            status: TurnStatus::Error,
            error: Some(error)
        })
    );
    assert!(result.output.is_none());
    let trace = without_chunks(&trace);
    assert_eq!(
        trace[trace.len() - 5..],
        lines(&[
            "on_chunk(tool_result:c2 final_result error)",
            "on_step_finish(1 output_failure: invalid answer: missing field `total_cents`)",
            "classify_chat_error(turn)",
            "on_chat_error(turn)",
            "on_chat_response(error)",
        ])
    );
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn an_empty_reply_that_ends_the_turn_fails_it_as_an_output_failure() {
    // An empty reply's row is deleted: nothing is left to store as failed.
    for mode in [OutputMode::Tool, OutputMode::Native] {
        let model = ScriptedModel::new([ScriptedStep::new()]);
        let agent = AgentBuilder::new("x")
            .model(model)
            .output::<Invoice>()
            .output_mode(mode)
            .output_retries(0)
            .build()
            .unwrap();
        let conversation = agent.conversation();
        let result = conversation.run("go").await;
        let error = result.error.unwrap();
        assert!(
            matches!(&error.kind, TurnErrorKind::Output(f) if f.reasons.len() == 1),
            "{mode:?}: {error:?}"
        );
        let rows = conversation.rows().await.unwrap();
        assert_eq!(rows.len(), 1, "{mode:?}: only the input is stored");
        assert_eq!(conversation.last_output::<Invoice>().await.unwrap(), None);
    }
}

#[tokio::test]
async fn a_turn_may_set_its_own_retries() {
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", BAD)]);
    let agent = AgentBuilder::new("strict")
        .model(model)
        .output::<Invoice>()
        .output_retries(3)
        .build()
        .unwrap();

    let result = agent.run(TurnRequest::new("go").output_retries(0)).await;

    assert_eq!(result.status, TurnStatus::Error);
    let error = result.error.unwrap();
    assert!(matches!(&error.kind, TurnErrorKind::Output(f) if f.reasons.len() == 1));
    assert!(
        error
            .message
            .starts_with("no valid answer after 1 attempt: "),
        "{}",
        error.message
    );
}

/// A turn that fails after its answer validated (here in after_run, whose failure fails the
/// turn by default) returns no typed answer from `output()`: a caller that reads the answer
/// with `?` does not go on with a failed turn's. The answer stays in the result's field.
#[tokio::test]
async fn a_turn_failed_after_its_answer_validated_has_no_output() {
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", GOOD)]);
    let agent = invoice_agent(&model, &trace)
        .hook(tests::failing::<event::AfterRun>(
            "audit",
            tests::Failure::Error,
        ))
        .build()
        .unwrap();

    let result = agent.run("Extract the invoice.").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    let error = result.error.clone().unwrap();
    assert_eq!(
        result.output::<Invoice>(),
        Err(OutputError::Missing {
            status: TurnStatus::Error,
            error: Some(error),
        })
    );
    let kept = result
        .output
        .as_ref()
        .and_then(|output| output.get::<Invoice>());
    assert_eq!(kept.map(|invoice| invoice.total_cents), Some(1250));
}

#[tokio::test]
async fn tools_run_beside_the_final_tool_and_the_turn_ends_when_it_is_called() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":1000,"b":250}"#),
        ScriptedStep::new().tool_call("c2", "final_result", GOOD),
        ScriptedStep::new().text("never asked for"),
    ]);
    let agent = invoice_agent(&model, &trace)
        .tool(Add::traced(&trace))
        .build()
        .unwrap();

    let result = agent.run("Add up the invoice.").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.output::<Invoice>().unwrap().total_cents, 1250);
    assert_eq!(
        without_chunks(&trace),
        lines(&[
            "before_run(Add up the invoice.)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c1 add)",
            "on_chunk(tool_call:c1 add)",
            "on_llm_end(0)",
            "before_tool_call(add c1)",
            "add(1000,250)",
            "after_tool_call(add c1 executed)",
            "on_chunk(tool_result:c1 add ok)",
            "on_step_finish(0)",
            "before_step(1)",
            "on_llm_start(1)",
            "on_chunk(tool_start:c2 final_result)",
            "on_chunk(tool_call:c2 final_result)",
            "on_llm_end(1)",
            "on_chunk(tool_result:c2 final_result ok)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    let requests = model.requests();
    for request in &requests {
        let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add", "final_result"]);
        assert_eq!(request.tool_choice, ToolChoice::Required);
    }
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn a_text_reply_when_the_tool_is_required_is_a_failure_sent_back() {
    let model = ScriptedModel::new([
        ScriptedStep::new().text("The total is 12.50."),
        ScriptedStep::new().tool_call("c1", "final_result", GOOD),
    ]);
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .output::<Invoice>()
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let last = model.requests()[1].messages.last().cloned().unwrap();
    assert_eq!(
        last,
        Message::user(
            "Your answer was not accepted: the answer was text: give it by calling the \
             `final_result` tool\nAnswer again, correcting it."
        )
    );
}

/// A text reply in tool mode is an answer that failed: when it is the last, it is the raw
/// answer the turn's error and on_chat_response report, not an earlier call's arguments.
#[tokio::test]
async fn a_text_reply_that_ends_the_retries_is_the_last_raw_answer() {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", BAD),
        ScriptedStep::new().text("The total is 12.50."),
    ]);
    let reported = Trace::new();
    let r = reported.clone();
    let agent = AgentBuilder::new("x")
        .model(model)
        .output::<Invoice>()
        .hook(Hook::<event::OnChatResponse>::sync("report", move |ctx| {
            let output = ctx.output.as_ref().unwrap();
            r.push(format!("{} {}", output.validated, output.raw));
        }))
        .build()
        .unwrap();

    let result = agent.run("go").await;

    let error = result.error.unwrap();
    let TurnErrorKind::Output(failure) = &error.kind else {
        panic!("expected an output failure, got {error:?}");
    };
    assert_eq!(failure.raw, "The total is 12.50.");
    assert_eq!(failure.reasons.len(), 2);
    assert_eq!(reported.take(), ["false The total is 12.50."]);
}

#[tokio::test]
async fn the_native_mode_parses_the_text_and_sends_a_wrong_answer_back_as_a_user_message() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().text(BAD),
        ScriptedStep::new().text(GOOD),
    ])
    .supporting_output_schema();
    let agent = invoice_agent(&model, &trace).build().unwrap();

    let result = agent.run("Extract the invoice.").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.output::<Invoice>().unwrap().number, "INV-7");
    let requests = model.requests();
    assert!(requests[0].tools.is_empty());
    assert_eq!(requests[0].tool_choice, ToolChoice::Auto);
    let schema = requests[0].output_schema.as_ref().unwrap();
    assert_eq!(schema.name, "Invoice");
    assert_eq!(schema.schema["required"], json!(["number", "total_cents"]));
    let Message::User { content, .. } = requests[1].messages.last().unwrap() else {
        panic!("the retry is a user message");
    };
    assert!(
        content.starts_with("Your answer was not accepted: invalid answer at `total_cents`"),
        "{content}"
    );
    // The retry message is stored: the history holds both answers and the request to fix it.
    assert_eq!(result.messages.len(), 3);
    assert_eq!(
        without_chunks(&trace)[2..],
        lines(&[
            "before_step(0)",
            "on_llm_start(0)",
            "on_llm_end(0)",
            "on_step_finish(0 output_failure: invalid answer at `total_cents`: invalid type: string \"twelve\", expected u64)",
            "before_step(1)",
            "on_llm_start(1)",
            "on_llm_end(1)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
}

#[tokio::test]
async fn auto_takes_the_final_tool_when_the_step_offers_tools_even_with_native_support() {
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", GOOD)])
        .supporting_output_schema();
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .tool(Add::default())
        .output::<Invoice>()
        .build()
        .unwrap();

    assert!(agent.run("go").await.output::<Invoice>().is_ok());
    let request = &model.requests()[0];
    assert!(request.output_schema.is_none());
    assert_eq!(request.tools.len(), 2);
}

#[tokio::test]
async fn the_prompted_mode_puts_the_schema_in_the_instructions_and_reads_a_fenced_answer() {
    let model = ScriptedModel::new([ScriptedStep::new().text(format!("```json\n{GOOD}\n```"))]);
    let agent = AgentBuilder::new("x")
        .instructions("Read invoices.")
        .model(model.clone())
        .output::<Invoice>()
        .output_mode(OutputMode::Prompted)
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.output::<Invoice>().unwrap().total_cents, 1250);
    let request = &model.requests()[0];
    let system = request.system.as_deref().unwrap();
    assert!(system.starts_with("Read invoices.\n\nGive your final answer as one JSON value"));
    assert!(system.contains(r#""total_cents""#), "{system}");
    assert!(request.tools.is_empty() && request.output_schema.is_none());
}

/// The answer as a model may write it: spaced, its members in another order, one the type
/// does not know.
const LOOSE: &str = r#"{ "total_cents": 1250, "number": "INV-7", "note": "paid" }"#;

/// A prompted answer as models often write it: a sentence around one fenced block (its info
/// string in any case, with or without the sentence). Two blocks are ambiguous: sent back.
#[tokio::test]
async fn a_prompted_answer_with_prose_around_its_fenced_block_is_read() {
    for (reply, read) in [
        (
            format!("Here is the invoice:\n```JSON\n{GOOD}\n```\nAnything else?"),
            true,
        ),
        (format!("```JSON\n{GOOD}\n```"), true),
        (format!("```Json\n{GOOD}\n```"), true),
        (format!("Sure.\n```\n{GOOD}\n```"), true),
        (
            format!("```json\n{GOOD}\n```\nor\n```json\n{GOOD}\n```"),
            false,
        ),
        (format!("Here:\n```python\n{GOOD}\n```"), false),
    ] {
        let model = ScriptedModel::new([
            ScriptedStep::new().text(reply.clone()),
            ScriptedStep::new().text(GOOD),
        ]);
        let agent = AgentBuilder::new("x")
            .model(model.clone())
            .output::<Invoice>()
            .output_mode(OutputMode::Prompted)
            .build()
            .unwrap();
        let result = agent.run("go").await;
        assert_eq!(result.output::<Invoice>().unwrap().total_cents, 1250);
        assert_eq!(model.requests().len(), if read { 1 } else { 2 }, "{reply}");
        if read {
            assert_eq!(result.text, GOOD, "the block's body is the turn's text");
        }
    }
}

#[tokio::test]
async fn a_typed_turns_text_is_the_models_own_json_and_its_value_the_types() {
    // Native: the reply's text, trimmed; the report's raw answer is the reply as sent.
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new().text(format!("\n{LOOSE}\n"))])
        .supporting_output_schema();
    let result = reporting_agent(&model, &trace, 0).run("go").await;
    assert!(model.requests()[0].output_schema.is_some());
    assert_eq!(result.text, LOOSE);
    let output = result.output.as_ref().unwrap();
    assert_eq!(output.text(), LOOSE);
    assert_eq!(
        output.json(),
        &json!({"number": "INV-7", "total_cents": 1250})
    );
    assert_eq!(result.output::<Invoice>().unwrap(), &invoice("INV-7", 1250));
    assert_eq!(trace.take(), [format!("chat true \n{LOOSE}\n")]);

    // Prompted: a fenced block's body.
    let model = ScriptedModel::new([ScriptedStep::new().text(format!("```json\n{LOOSE}\n```"))]);
    let agent = AgentBuilder::new("x")
        .model(model)
        .output::<Invoice>()
        .output_mode(OutputMode::Prompted)
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_eq!(result.text, LOOSE);
    assert_eq!(
        result.output.unwrap().json(),
        &json!({"number": "INV-7", "total_cents": 1250})
    );

    // The final-answer tool: the call's arguments.
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", LOOSE)]);
    let result = invoice_agent(&model, &trace)
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(result.text, LOOSE);
    assert_eq!(result.output.unwrap().text(), LOOSE);
}

#[tokio::test]
async fn a_validator_sends_an_answer_back_and_sees_the_next_one() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call(
            "c1",
            "final_result",
            r#"{"number":"INV-7","total_cents":0}"#,
        ),
        ScriptedStep::new().tool_call("c2", "final_result", GOOD),
    ]);
    let t = trace.clone();
    let agent = invoice_agent(&model, &trace)
        .validate_output(Hook::<event::ValidateOutput<Invoice>>::sync(
            "non_zero",
            move |ctx| {
                t.push(format!("validate_output({} {})", ctx.step, ctx.attempt));
                if ctx.output.total_cents == 0 {
                    OutputCheck::retry("the total cannot be zero: read it again")
                } else {
                    OutputCheck::Accept
                }
            },
        ))
        .build()
        .unwrap();

    let result = agent.run("Extract the invoice.").await;

    assert_eq!(result.output::<Invoice>().unwrap().total_cents, 1250);
    let trace = without_chunks(&trace);
    let at = |entry: &str| trace.iter().position(|e| e == entry).unwrap();
    assert!(at("on_llm_end(0)") < at("validate_output(0 0)"));
    assert!(at("validate_output(0 0)") < at("on_chunk(tool_result:c1 final_result error)"));
    assert!(at("on_llm_end(1)") < at("validate_output(1 1)"));
    let requests = model.requests();
    let (content, _) = tool_result(requests[1].messages.last().unwrap());
    assert_eq!(
        content,
        "the total cannot be zero: read it again\nCall `final_result` again with a corrected answer."
    );
}

#[tokio::test]
async fn a_failing_validator_fails_the_turn() {
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", GOOD)]);
    let agent = AgentBuilder::new("x")
        .model(model)
        .output::<Invoice>()
        .validate_output(Hook::<event::ValidateOutput<Invoice>>::sync(
            "lookup",
            |_| -> Result<OutputCheck, String> { Err("the ledger is down".into()) },
        ))
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.status, TurnStatus::Error);
    let error = result.error.unwrap();
    assert!(
        matches!(
            error.kind,
            TurnErrorKind::Hook {
                event: "validate_output",
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_validator_typed_on_another_type_or_without_an_output_type_does_not_build() {
    let hook = || Hook::<event::ValidateOutput<u32>>::sync("odd", |_| OutputCheck::Accept);
    let model = ScriptedModel::new([]);
    let error = AgentBuilder::new("x")
        .model(model.clone())
        .output::<Invoice>()
        .validate_output(hook())
        .build()
        .unwrap_err();
    assert!(error.problems[0].starts_with("validate_output hook `odd` is typed on another type"));
    let error = AgentBuilder::new("x")
        .model(model)
        .validate_output(hook())
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        ["validate_output hook `odd`: the agent has no output type; set one with `.output::<T>()`"]
    );
}

/// One of two answers: the enum's tagged schema, under `response` (tool arguments are objects).
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Decision {
    Approve { amount_cents: u64 },
    Reject { reason: String },
}

#[tokio::test]
async fn an_enum_of_alternatives_comes_back_as_the_rust_enum() {
    let model = ScriptedModel::new([ScriptedStep::new().tool_call(
        "c1",
        "decide",
        r#"{"response":{"kind":"reject","reason":"duplicate"}}"#,
    )]);
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .output::<Decision>()
        .output_tool("decide", "Approve or reject the claim.")
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(
        result.output::<Decision>().unwrap(),
        &Decision::Reject {
            reason: "duplicate".into()
        }
    );
    assert_eq!(
        result.output::<Invoice>().unwrap_err(),
        OutputError::OtherType {
            asked: std::any::type_name::<Invoice>(),
            actual: std::any::type_name::<Decision>(),
        }
    );
    let tool = &model.requests()[0].tools[0];
    assert_eq!(tool.description, "Approve or reject the claim.");
    assert_eq!(tool.parameters["required"], json!(["response"]));
    assert!(tool.parameters["properties"]["response"]["oneOf"].is_array());
}

#[tokio::test]
async fn a_subagent_with_an_output_type_returns_its_json() {
    let inner = ScriptedModel::new([ScriptedStep::new().tool_call("i1", "final_result", GOOD)]);
    let clerk = AgentBuilder::new("clerk")
        .model(inner)
        .output::<Invoice>()
        .build()
        .unwrap();
    let outer = ScriptedModel::new([
        ScriptedStep::new().tool_call("o1", "clerk", r#"{"input":"read it"}"#),
        ScriptedStep::new().text("done"),
    ]);
    let boss = AgentBuilder::new("boss")
        .model(outer.clone())
        .subagent(&clerk)
        .build()
        .unwrap();

    let result = boss.run("go").await;

    assert_eq!(result.text, "done");
    let requests = outer.requests();
    let (content, _) = tool_result(requests[1].messages.last().unwrap());
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(content).unwrap(),
        json!({"number": "INV-7", "total_cents": 1250})
    );
}

/// An answer that fails in the step limit's last step is not sent back: no retry message is
/// stored for the next turn to read, no retry is streamed, and the limit ends the turn; a text
/// answer's row is stored failed, so it is no accepted answer.
#[tokio::test]
async fn a_failed_answer_in_the_last_allowed_step_is_not_sent_back() {
    for native in [true, false] {
        let trace = Trace::new();
        let (first, second) = if native {
            (
                ScriptedStep::new().text(BAD),
                ScriptedStep::new().text(GOOD),
            )
        } else {
            let call = |args: &str| ScriptedStep::new().tool_call("f1", "final_result", args);
            (call(BAD), call(GOOD))
        };
        let mut model = ScriptedModel::new([first, second]);
        if native {
            model = model.supporting_output_schema();
        }
        let agent = invoice_agent(&model, &trace).max_steps(1).build().unwrap();
        let session = agent.session("s");
        let mut stream = session.stream("Extract the invoice.");
        let mut retries = 0;
        let mut finished = None;
        while let Some(event) = stream.next().await {
            match event {
                TurnEvent::OutputRetry { .. } => retries += 1,
                TurnEvent::Finished(result) => finished = Some(result),
                _ => {}
            }
        }
        let result = finished.unwrap();
        assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
        assert_eq!(result.stop_reason, Some(StopReason::MaxSteps));
        assert!(result.output::<Invoice>().is_err());
        assert_eq!(retries, 0, "native: {native}");
        let mut expected = lines(&["before_step(0)", "on_llm_start(0)"]);
        if !native {
            expected.extend(lines(&[
                "on_chunk(tool_start:f1 final_result)",
                "on_chunk(tool_call:f1 final_result)",
            ]));
        }
        expected.push("on_llm_end(0)".into());
        if !native {
            expected.push("on_chunk(tool_result:f1 final_result error)".into());
        }
        expected.extend(lines(&[
            "on_step_finish(0 output_failure: invalid answer at `total_cents`: invalid type: \
             string \"twelve\", expected u64)",
            "on_stop(max_steps)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ]));
        assert_eq!(without_chunks(&trace)[2..], expected, "native: {native}");
        let retry = |m: &Message| m.text().starts_with("Your answer was not accepted");
        let history = session.history().await.unwrap();
        assert!(!history.iter().any(retry), "native: {native}: {history:?}");
        assert_eq!(session.last_output::<Invoice>().await.unwrap(), None);
    }
}

#[tokio::test]
async fn a_handoff_targets_output_type_is_the_one_the_turn_returns() {
    // triage has no output type; billing, which it hands the turn to, answers an Invoice, and
    // its first answer is sent back once as billing's own retry.
    let billing_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("b1", "final_result", BAD),
        ScriptedStep::new().tool_call("b2", "final_result", GOOD),
    ]);
    let billing = AgentBuilder::new("billing")
        .description("Reads invoices.")
        .model(billing_model.clone())
        .output::<Invoice>()
        .build()
        .unwrap();
    let triage_model =
        ScriptedModel::new([ScriptedStep::new().tool_call("h1", "transfer_to_billing", "{}")]);
    let triage = AgentBuilder::new("triage")
        .model(triage_model.clone())
        .handoff(&billing)
        .build()
        .unwrap();

    let result = triage.run("What does invoice 7 say?").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "billing");
    assert_eq!(
        result.output::<Invoice>().unwrap(),
        &Invoice {
            number: "INV-7".into(),
            total_cents: 1250
        }
    );
    // triage was offered no final-answer tool; billing was, and read why its first answer failed.
    let offered = |model: &ScriptedModel| -> Vec<String> {
        model.requests()[0]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(offered(&triage_model), ["transfer_to_billing"]);
    assert_eq!(offered(&billing_model), ["final_result"]);
    let requests = billing_model.requests();
    assert_eq!(requests.len(), 2);
    let (why, is_error) = tool_result(requests[1].messages.last().unwrap());
    assert!(is_error);
    assert!(why.contains("total_cents"), "the path is named: {why}");
}

#[tokio::test]
async fn last_output_reads_the_answer_of_the_agent_a_handoff_reached() {
    // triage has no output type; billing, which it hands off to, answers an Invoice, which
    // the session reads back through triage, in this process and from another handle.
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([ScriptedStep::new().tool_call(
            "b1",
            "final_result",
            GOOD,
        )]))
        .output::<Invoice>()
        .build()
        .unwrap();
    let triage = tests::triage_handing_to(&billing).build().unwrap();
    let session = triage.session("s");
    assert_eq!(session.last_output::<Invoice>().await.unwrap(), None);
    let result = session.run("What does invoice 7 say?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let invoice = || Invoice {
        number: "INV-7".into(),
        total_cents: 1250,
    };
    assert_eq!(
        session.last_output::<Invoice>().await.unwrap(),
        Some(invoice())
    );
    assert_eq!(
        triage.session("s").last_output::<Invoice>().await.unwrap(),
        Some(invoice())
    );
    // A type no agent of the team answers is still refused, naming the entry agent's.
    let error = session.last_output::<String>().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the agent has no output type, nor has an agent its handoffs reach `alloc::string::String`: \
         give it `alloc::string::String` with `AgentBuilder::output`"
    );
}

#[tokio::test]
async fn last_output_passes_over_text_replies_that_are_no_answer() {
    // billing answers as text (the prompted mode). In the next turn triage, without an output
    // type, answers in text itself, and on_stop gives a typed agent's turn a text of its own:
    // neither reply is an accepted answer, so billing's answer stays the session's last one.
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([ScriptedStep::new().text(GOOD)]))
        .output::<Invoice>()
        .output_mode(OutputMode::Prompted)
        .build()
        .unwrap();
    let triage = AgentBuilder::new("triage")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("h1", "transfer_to_billing", "{}"),
            ScriptedStep::new().text("Anything else I can do for you?"),
        ]))
        .handoff(&billing)
        .build()
        .unwrap();
    let session = triage.session("s");
    let result = session.run("What does invoice 7 say?").await;
    assert_eq!(result.output::<Invoice>().unwrap().total_cents, 1250);
    let result = session.run("Thanks!").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "triage");
    let invoice = Invoice {
        number: "INV-7".into(),
        total_cents: 1250,
    };
    assert_eq!(
        session.last_output::<Invoice>().await.unwrap(),
        Some(invoice),
        "triage's reply is no answer"
    );

    let model = ScriptedModel::new([
        ScriptedStep::new().text(GOOD),
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":2}"#),
    ]);
    let extractor = AgentBuilder::new("extractor")
        .model(model)
        .tool(Add::default())
        .output::<Invoice>()
        .output_mode(OutputMode::Prompted)
        .max_steps(1)
        .hook(Hook::<event::OnStop>::sync("fallback", |_| {
            agent_core::StopDecision::Output("I could not finish.".into())
        }))
        .build()
        .unwrap();
    let conversation = extractor.conversation();
    conversation.run("Extract the invoice.").await;
    let result = conversation.run("Check it again.").await;
    assert_eq!(result.text, "I could not finish.");
    assert_eq!(
        conversation.last_output::<Invoice>().await.unwrap(),
        Some(Invoice {
            number: "INV-7".into(),
            total_cents: 1250,
        }),
        "on_stop's text is no answer"
    );
}

/// Reads invoices.
#[agent_core::agent(instructions = "Read the invoice.", output = Invoice, output_retries = 0)]
impl Clerk {}

#[derive(Default)]
struct Clerk;

#[tokio::test]
async fn the_agent_macro_sets_the_output_type_and_its_retries() {
    use agent_core::AgentSpec;
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", BAD)]);
    let agent = Clerk.builder().model(model.clone()).build().unwrap();

    let result = agent.run("go").await;

    // No retry: the one failure fails the turn.
    assert!(
        matches!(&result.error.unwrap().kind, TurnErrorKind::Output(f) if f.reasons.len() == 1)
    );
    assert_eq!(model.requests()[0].tools[0].name, "final_result");
}

/// Checks invoices in `#[hook(validate_output)]` methods: one sync taking the answer, one async
/// taking the answer and its context.
#[agent_core::agent(output = Invoice, output_retries = 2)]
impl Auditor {
    #[hook(validate_output)]
    fn non_zero(&self, invoice: &Invoice) -> OutputCheck {
        self.seen.push(format!("non_zero({})", invoice.total_cents));
        if invoice.total_cents == 0 {
            OutputCheck::retry("the total cannot be zero")
        } else {
            OutputCheck::Accept
        }
    }

    #[hook(validate_output, priority = 1)]
    async fn numbered(
        &self,
        invoice: &Invoice,
        ctx: &agent_core::OutputContext<Invoice>,
    ) -> Result<OutputCheck, String> {
        self.seen.push(format!(
            "numbered({} {} {})",
            invoice.number, ctx.step, ctx.attempt
        ));
        match invoice.number.as_str() {
            "" => Ok(OutputCheck::retry("the number is missing")),
            "LEDGER-DOWN" => Err("the ledger is down".into()),
            _ => Ok(OutputCheck::Accept),
        }
    }
}

#[derive(Default)]
struct Auditor {
    seen: Trace,
}

#[tokio::test]
async fn validate_output_hook_methods_send_answers_back_in_priority_order() {
    use agent_core::AgentSpec;
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", r#"{"number":"","total_cents":5}"#),
        ScriptedStep::new().tool_call(
            "c2",
            "final_result",
            r#"{"number":"INV-7","total_cents":0}"#,
        ),
        ScriptedStep::new().tool_call("c3", "final_result", GOOD),
    ]);
    let auditor = std::sync::Arc::new(Auditor::default());
    let agent = Auditor::shared_builder(auditor.clone())
        .model(model.clone())
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.output::<Invoice>().unwrap().total_cents, 1250);
    // By priority: non_zero (0) before numbered (1); the first Retry stops the answer's checks.
    assert_eq!(
        auditor.seen.take(),
        lines(&[
            "non_zero(5)",
            "numbered( 0 0)",
            "non_zero(0)",
            "non_zero(1250)",
            "numbered(INV-7 2 2)",
        ])
    );
    let requests = model.requests();
    let (content, is_error) = tool_result(requests[1].messages.last().unwrap());
    assert!(
        is_error && content.starts_with("the number is missing\n"),
        "{content}"
    );
    let (content, _) = tool_result(requests[2].messages.last().unwrap());
    assert!(
        content.starts_with("the total cannot be zero\n"),
        "{content}"
    );
}

#[tokio::test]
async fn a_validate_output_hook_method_failing_fails_the_turn() {
    use agent_core::AgentSpec;
    let model = ScriptedModel::new([ScriptedStep::new().tool_call(
        "c1",
        "final_result",
        r#"{"number":"LEDGER-DOWN","total_cents":5}"#,
    )]);
    let agent = Auditor::default().builder().model(model).build().unwrap();

    let result = agent.run("go").await;

    let error = result.error.unwrap();
    assert!(
        matches!(
            error.kind,
            TurnErrorKind::Hook {
                event: "validate_output",
                ..
            }
        ),
        "{error:?}"
    );
}

/// The stream's events about the typed answer: each partial value, the validated output, and
/// the step of each.
async fn typed_events(
    agent: &agent_core::Agent,
) -> (Vec<(usize, serde_json::Value)>, Vec<agent_core::TurnEvent>) {
    use agent_core::TurnEvent;
    let mut stream = agent.conversation().stream("Extract the invoice.");
    let (mut partials, mut others) = (Vec::new(), Vec::new());
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::PartialOutput { step, value } => partials.push((step, value)),
            TurnEvent::Output { .. } | TurnEvent::StepFinished(_) | TurnEvent::Finished(_) => {
                others.push(event)
            }
            _ => {}
        }
    }
    (partials, others)
}

/// A final-answer call whose arguments stream in these pieces.
fn streamed_call(step: ScriptedStep, id: &str, pieces: &[&str]) -> ScriptedStep {
    use agent_core::{ModelEvent, ToolCall};
    let step = pieces.iter().fold(step, |step, piece| {
        step.event(ModelEvent::ToolInputDelta {
            id: id.into(),
            delta: (*piece).into(),
        })
    });
    step.event(ModelEvent::ToolCall(ToolCall::new(
        id,
        "final_result",
        pieces.concat(),
    )))
}

/// With the final-answer tool the only one offered, a model that calls another tool first (one
/// not offered) streams that call's arguments: they are not the answer's partials, which
/// come from the final-answer call alone (they came from the step's first call, whatever its
/// name).
#[tokio::test]
async fn partials_come_from_the_final_answer_call_not_a_call_before_it() {
    use agent_core::{ModelEvent, ToolCall};
    let start = |id: &str, name: &str| ModelEvent::ToolCallStart {
        id: id.into(),
        name: name.into(),
    };
    let other = ScriptedStep::new()
        .event(start("x1", "lookup"))
        .event(ModelEvent::ToolInputDelta {
            id: "x1".into(),
            delta: r#"{"total_cents":99}"#.into(),
        })
        .event(ModelEvent::ToolCall(ToolCall::new(
            "x1",
            "lookup",
            r#"{"total_cents":99}"#,
        )))
        .event(start("c1", "final_result"));
    let model = ScriptedModel::new([streamed_call(
        other,
        "c1",
        &[r#"{"number":"INV-7","#, r#""total_cents":1250}"#],
    )]);
    let agent = AgentBuilder::new("extractor")
        .model(model)
        .output::<Invoice>()
        .build()
        .unwrap();

    let (partials, _) = typed_events(&agent).await;

    assert_eq!(
        partials,
        [
            (0, json!({"number": "INV-7"})),
            (0, json!({"number": "INV-7", "total_cents": 1250})),
        ]
    );
}

#[tokio::test]
async fn the_stream_gives_partial_answers_then_the_validated_output() {
    use agent_core::TurnEvent;
    let model = ScriptedModel::new([
        streamed_call(
            ScriptedStep::new(),
            "c1",
            &[r#"{"num"#, r#"ber":"IN"#, r#"V-7","total_"#, r#"cents":0}"#],
        ),
        streamed_call(
            ScriptedStep::new(),
            "c2",
            &[r#"{"number":"INV-7","#, r#""total_cents":12"#, r#"50}"#],
        ),
    ]);
    let agent = AgentBuilder::new("extractor")
        .model(model)
        .output::<Invoice>()
        .validate_output(Hook::<event::ValidateOutput<Invoice>>::sync(
            "non_zero",
            |ctx| match ctx.output.total_cents {
                0 => OutputCheck::retry("the total cannot be zero"),
                _ => OutputCheck::Accept,
            },
        ))
        .build()
        .unwrap();

    let (partials, others) = typed_events(&agent).await;

    assert_eq!(
        partials,
        [
            (0, json!({})),
            (0, json!({"number": "IN"})),
            (0, json!({"number": "INV-7"})),
            (0, json!({"number": "INV-7", "total_cents": 0})),
            (1, json!({"number": "INV-7"})),
            (1, json!({"number": "INV-7", "total_cents": 12})),
            (1, json!({"number": "INV-7", "total_cents": 1250})),
        ]
    );
    // The failed answer's partials are not followed by an output; the fixed one's is, after
    // its step and before the end.
    let kinds: Vec<String> = others
        .iter()
        .map(|event| match event {
            TurnEvent::StepFinished(record) => format!("step {}", record.step),
            TurnEvent::Output { step, output } => format!("output {step} {}", output.json()),
            TurnEvent::Finished(result) => format!("finished {}", result.status),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "step 0",
            "step 1",
            r#"output 1 {"number":"INV-7","total_cents":1250}"#,
            "finished completed",
        ]
    );
}

#[tokio::test]
async fn text_partials_skip_a_fence_and_wrapped_answers_unwrap_response() {
    // The fence's first line is skipped; so is a sentence before the block, which the turn
    // reads whole as the answer, even when deltas cut the fence apart (the sentence was read
    // as the JSON, and no partial came).
    let fenced = ScriptedStep::new().text("```json\n");
    let after_a_sentence = ScriptedStep::new()
        .text("Here it is:\n`")
        .text("`")
        .text("`json\n");
    for step in [fenced, after_a_sentence] {
        let model = ScriptedModel::new([step
            .text(r#"{"number":"INV-7","#)
            .text(r#""total_cents":1250}"#)
            .text("\n```")]);
        let agent = AgentBuilder::new("x")
            .model(model)
            .output::<Invoice>()
            .output_mode(OutputMode::Prompted)
            .build()
            .unwrap();
        let (partials, others) = typed_events(&agent).await;
        assert_eq!(
            partials,
            [
                (0, json!({"number": "INV-7"})),
                (0, json!({"number": "INV-7", "total_cents": 1250})),
            ]
        );
        assert!(matches!(
            others.get(1),
            Some(agent_core::TurnEvent::Output { .. })
        ));
    }

    // An enum's schema is not an object: the tool's arguments hold it under `response`.
    let model = ScriptedModel::new([streamed_call(
        ScriptedStep::new(),
        "c1",
        &[
            r#"{"response":{"kind":"#,
            r#""approve","amount_cents":5"#,
            r#"00}}"#,
        ],
    )]);
    let agent = AgentBuilder::new("x")
        .model(model)
        .output::<Decision>()
        .build()
        .unwrap();
    let (partials, _) = typed_events(&agent).await;
    assert_eq!(
        partials,
        [
            (0, json!({})),
            (0, json!({"kind": "approve", "amount_cents": 5})),
            (0, json!({"kind": "approve", "amount_cents": 500})),
        ]
    );
}

#[tokio::test]
async fn partials_stream_from_the_final_call_in_a_step_that_calls_another_tool_too() {
    use agent_core::TurnEvent;
    let trace = Trace::new();
    // The model calls `add`, then the final-answer tool twice in one step: the partials are
    // the first final-answer call's (the second one's arguments never show).
    let model = ScriptedModel::new([ScriptedStep::new()
        .streamed_tool_call("c1", "add", [r#"{"a":1000,"#, r#""b":250}"#])
        .streamed_tool_call(
            "c2",
            "final_result",
            [r#"{"number":"IN"#, r#"V-7","total_cents":12"#, r#"50}"#],
        )
        .streamed_tool_call(
            "c3",
            "final_result",
            [r#"{"number":"INV-9","#, r#""total_cents":1}"#],
        )]);
    let agent = AgentBuilder::new("x")
        .model(model)
        .output::<Invoice>()
        .tool(Add::traced(&trace))
        .build()
        .unwrap();

    let (partials, others) = typed_events(&agent).await;

    assert_eq!(
        partials,
        [
            (0, json!({"number": "IN"})),
            (0, json!({"number": "INV-7", "total_cents": 12})),
            (0, json!({"number": "INV-7", "total_cents": 1250})),
        ]
    );
    let (Some(TurnEvent::Output { output, .. }), Some(TurnEvent::Finished(result))) =
        (others.get(1), others.get(2))
    else {
        panic!("expected the step, its output and the end: {others:?}");
    };
    assert_eq!(Some(output.json()), partials.last().map(|(_, value)| value));
    assert_eq!(
        result.output::<Invoice>().unwrap(),
        &Invoice {
            number: "INV-7".into(),
            total_cents: 1250
        }
    );
    // The other tool ran, and the second final-answer call was answered with an error.
    assert_eq!(trace.take(), ["add(1000,250)"]);
    let results: Vec<(&str, bool)> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| (r.call_id.as_str(), r.is_error))
        .collect();
    assert_eq!(results, [("c1", false), ("c2", false), ("c3", true)]);

    // Without the call's start (a model that goes straight to the deltas), which call is the
    // answer is not known while it streams: no partials, the answer still comes.
    let model = ScriptedModel::new([streamed_call(
        ScriptedStep::new(),
        "c1",
        &[r#"{"number":"INV-7","#, r#""total_cents":1250}"#],
    )]);
    let agent = AgentBuilder::new("x")
        .model(model)
        .output::<Invoice>()
        .tool(Add::traced(&Trace::new()))
        .build()
        .unwrap();
    let (partials, others) = typed_events(&agent).await;
    assert_eq!(partials, []);
    assert!(matches!(others.get(1), Some(TurnEvent::Output { .. })));
}

/// Every event of a streamed turn, in order, as text.
async fn stream_trace(agent: &agent_core::Agent) -> Vec<String> {
    use agent_core::TurnEvent;
    let mut stream = agent.conversation().stream("Extract the invoice.");
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(match event {
            TurnEvent::Chunk { step, chunk } => {
                format!("chunk({step} {})", tests::describe_chunk(&chunk))
            }
            TurnEvent::PartialOutput { step, value } => format!("partial({step} {value})"),
            TurnEvent::StepFinished(record) => match record.output_failure {
                Some(why) => format!("step_finished({} output_failure: {why})", record.step),
                None => format!("step_finished({})", record.step),
            },
            TurnEvent::OutputRetry {
                step,
                attempt,
                reason,
            } => format!("output_retry({step} {attempt} {reason})"),
            TurnEvent::Output { step, output } => format!("output({step} {})", output.json()),
            TurnEvent::Finished(result) => format!("finished({})", result.status),
            other => format!("{other:?}"),
        });
    }
    events
}

const TWELVE: &str =
    "invalid answer at `total_cents`: invalid type: string \"twelve\", expected u64";

#[tokio::test]
async fn a_retry_is_its_own_stream_event_after_the_failed_step_and_a_field_of_its_record() {
    // By the final-answer tool.
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", BAD),
        ScriptedStep::new().tool_call("c2", "final_result", GOOD),
    ]);
    let agent = invoice_agent(&model, &trace).build().unwrap();

    let events = stream_trace(&agent).await;

    assert_eq!(
        events,
        lines(&[
            "chunk(0 tool_start:c1 final_result)",
            "chunk(0 tool_input:c1)",
            r#"partial(0 {"number":"INV-7","total_cents":"twelve"})"#,
            "chunk(0 tool_call:c1 final_result)",
            "chunk(0 tool_result:c1 final_result error)",
            &format!("step_finished(0 output_failure: {TWELVE})"),
            &format!("output_retry(0 1 {TWELVE})"),
            "chunk(1 tool_start:c2 final_result)",
            "chunk(1 tool_input:c2)",
            r#"partial(1 {"number":"INV-7","total_cents":1250})"#,
            "chunk(1 tool_call:c2 final_result)",
            "chunk(1 tool_result:c2 final_result ok)",
            "step_finished(1)",
            r#"output(1 {"number":"INV-7","total_cents":1250})"#,
            "finished(completed)",
        ])
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(Extract the invoice.)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(tool_start:c1 final_result)",
            "on_chunk(tool_input:c1)",
            "on_chunk(tool_call:c1 final_result)",
            "on_llm_end(0)",
            "on_chunk(tool_result:c1 final_result error)",
            &format!("on_step_finish(0 output_failure: {TWELVE})"),
            "before_step(1)",
            "on_llm_start(1)",
            "on_chunk(tool_start:c2 final_result)",
            "on_chunk(tool_input:c2)",
            "on_chunk(tool_call:c2 final_result)",
            "on_llm_end(1)",
            "on_chunk(tool_result:c2 final_result ok)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );

    // As text (native mode): the retry message is stored before the next step.
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().text(BAD),
        ScriptedStep::new().text(GOOD),
    ])
    .supporting_output_schema();
    let agent = invoice_agent(&model, &trace).build().unwrap();

    let events = stream_trace(&agent).await;

    assert_eq!(
        events,
        lines(&[
            &format!("chunk(0 text:{BAD})"),
            r#"partial(0 {"number":"INV-7","total_cents":"twelve"})"#,
            &format!("step_finished(0 output_failure: {TWELVE})"),
            &format!("output_retry(0 1 {TWELVE})"),
            &format!("chunk(1 text:{GOOD})"),
            r#"partial(1 {"number":"INV-7","total_cents":1250})"#,
            "step_finished(1)",
            r#"output(1 {"number":"INV-7","total_cents":1250})"#,
            "finished(completed)",
        ])
    );
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(Extract the invoice.)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            &format!("on_chunk(text:{BAD})"),
            "on_llm_end(0)",
            &format!("on_step_finish(0 output_failure: {TWELVE})"),
            "before_step(1)",
            "on_llm_start(1)",
            &format!("on_chunk(text:{GOOD})"),
            "on_llm_end(1)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );

    // Retries run out: the last failure is no retry, the turn's error carries it.
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", BAD),
        ScriptedStep::new().tool_call("c2", "final_result", BAD),
    ]);
    let agent = invoice_agent(&model, &Trace::new()).build().unwrap();
    let events = stream_trace(&agent).await;
    assert_eq!(
        events[events.len() - 3..],
        lines(&[
            "chunk(1 tool_result:c2 final_result error)",
            &format!("step_finished(1 output_failure: {TWELVE})"),
            "finished(error)",
        ])[..]
    );
}

/// Records what on_chat_response and the run hooks read of the typed answer.
struct Reports(Trace);

impl agent_core::RunHooks for Reports {
    fn on_agent_output(&self, agent: &agent_core::RunAgent, output: &agent_core::OutputReport) {
        self.0.push(format!(
            "run {} {} {}",
            agent.name, output.validated, output.raw
        ));
    }
}

fn reporting_agent(model: &ScriptedModel, trace: &Trace, retries: usize) -> agent_core::Agent {
    let t = trace.clone();
    AgentBuilder::new("extractor")
        .model(model.clone())
        .output::<Invoice>()
        .output_retries(retries)
        .hook(Hook::<event::OnChatResponse>::sync("report", move |ctx| {
            let output = ctx.output.as_ref().unwrap();
            t.push(format!("chat {} {}", output.validated, output.raw));
        }))
        .build()
        .unwrap()
}

#[tokio::test]
async fn on_chat_response_and_run_hooks_read_the_raw_answer_and_whether_it_validated() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", BAD),
        ScriptedStep::new().tool_call("c2", "final_result", GOOD),
    ]);
    let request = TurnRequest::new("go").run_hooks(Reports(trace.clone()));
    reporting_agent(&model, &trace, 1).run(request).await;
    assert_eq!(
        trace.take(),
        lines(&[
            &format!("run extractor true {GOOD}"),
            &format!("chat true {GOOD}"),
        ])
    );

    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", BAD)]);
    let request = TurnRequest::new("go").run_hooks(Reports(trace.clone()));
    let result = reporting_agent(&model, &trace, 0).run(request).await;
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(
        trace.take(),
        lines(&[
            &format!("run extractor false {BAD}"),
            &format!("chat false {BAD}"),
        ])
    );

    // An agent without an output type reports none.
    let model = ScriptedModel::new([ScriptedStep::new().text("hi")]);
    let seen = Trace::new();
    let s = seen.clone();
    let agent = AgentBuilder::new("plain")
        .model(model)
        .hook(Hook::<event::OnChatResponse>::sync("report", move |ctx| {
            s.push(format!("{:?}", ctx.output));
        }))
        .build()
        .unwrap();
    agent.run("go").await;
    assert_eq!(seen.take(), ["None"]);
}

/// An agent on a SQLite file opened anew, as a process restarted would open it.
fn on_file(path: &std::path::Path, model: &ScriptedModel, mode: OutputMode) -> agent_core::Agent {
    let store = agent_core::SqliteStore::open(path).unwrap();
    AgentBuilder::new("extractor")
        .model(model.clone())
        .output::<Invoice>()
        .output_mode(mode)
        .validate_output(Hook::<event::ValidateOutput<Invoice>>::sync(
            "non_zero",
            |ctx| match ctx.output.total_cents {
                0 => OutputCheck::retry("the total cannot be zero"),
                _ => OutputCheck::Accept,
            },
        ))
        .store(std::sync::Arc::new(store))
        .build()
        .unwrap()
}

/// An answer that parses but the validator sends back.
const ZERO: &str = r#"{"number":"INV-0","total_cents":0}"#;
const OTHER: &str = r#"{"number":"INV-8","total_cents":800}"#;

fn invoice(number: &str, total_cents: u64) -> Invoice {
    Invoice {
        number: number.into(),
        total_cents,
    }
}

#[tokio::test]
async fn the_stored_rows_keep_the_final_json_and_a_resumed_conversation_reads_it_back() {
    let dir = crate::store_sqlite::TempDir::new("typed-output");
    let path = dir.join("typed.db");
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", ZERO),
        ScriptedStep::new().tool_call("c2", "final_result", GOOD),
    ]);
    let first = on_file(&path, &model, OutputMode::Tool).session("s1");
    assert_eq!(first.last_output::<Invoice>().await.unwrap(), None);
    let result = first.run("Extract the invoice.").await;
    assert_eq!(result.status, TurnStatus::Completed);
    drop(first);

    // Another agent on the same file, as after a restart: the accepted answer, not the one
    // the validator sent back (which parses too).
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c3", "final_result", ZERO),
        ScriptedStep::new().tool_call("c4", "final_result", ZERO),
        ScriptedStep::new().tool_call("c5", "final_result", OTHER),
    ]);
    let resumed = on_file(&path, &model, OutputMode::Tool).session("s1");
    assert_eq!(
        resumed.last_output::<Invoice>().await.unwrap(),
        Some(invoice("INV-7", 1250))
    );
    // A turn whose answers all fail leaves the last accepted one in place.
    let failed = resumed.run("Again, wrongly.").await;
    assert_eq!(failed.status, TurnStatus::Error);
    assert_eq!(
        resumed.last_output::<Invoice>().await.unwrap(),
        Some(invoice("INV-7", 1250))
    );
    // The model read its earlier answer; the next turn's answer is the last one.
    let result = resumed.run("And again.").await;
    assert_eq!(result.output::<Invoice>().unwrap(), &invoice("INV-8", 800));
    let sent = &model.requests()[0].messages;
    assert!(sent.iter().any(|message| matches!(
        message,
        Message::Assistant { tool_calls, .. } if tool_calls.iter().any(|call| call.arguments == GOOD)
    )));
    drop(resumed);
    let reopened = on_file(&path, &ScriptedModel::new([]), OutputMode::Tool).session("s1");
    assert_eq!(
        reopened.last_output::<Invoice>().await.unwrap(),
        Some(invoice("INV-8", 800))
    );

    // Asked for another type than the agent's, or of an agent without one: an error.
    #[derive(Debug, Serialize, Deserialize, JsonSchema)]
    struct Receipt {
        id: String,
    }
    let error = reopened.last_output::<Receipt>().await.unwrap_err();
    assert!(
        matches!(
            error,
            agent_core::StoredOutputError::OtherType { actual: Some(actual), .. }
                if actual.ends_with("Invoice")
        ),
        "{error:?}"
    );
    let plain = AgentBuilder::new("plain")
        .model(ScriptedModel::new([]))
        .build()
        .unwrap();
    let error = plain
        .session("s")
        .last_output::<Invoice>()
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the agent has no output type"),
        "{error}"
    );
}

#[tokio::test]
async fn a_text_answer_is_read_back_in_the_native_and_prompted_modes() {
    let dir = crate::store_sqlite::TempDir::new("typed-output-text");
    let path = dir.join("typed.db");
    for mode in [OutputMode::Native, OutputMode::Prompted] {
        let session = format!("{mode:?}");
        // A fenced answer in the prompted mode is unwrapped as the engine does.
        let good = match mode {
            OutputMode::Prompted => format!("```json\n{GOOD}\n```"),
            _ => GOOD.to_owned(),
        };
        let model = ScriptedModel::new([
            ScriptedStep::new().text(ZERO),
            ScriptedStep::new().text(good),
        ])
        .supporting_output_schema();
        let result = on_file(&path, &model, mode)
            .session(&session)
            .run("Extract the invoice.")
            .await;
        assert_eq!(result.status, TurnStatus::Completed, "{mode:?}");

        // Reopened: the answer no retry message followed. Then a turn whose answers all fail
        // (the last one, stored failed, would parse) leaves it the last accepted one.
        let model = ScriptedModel::new([
            ScriptedStep::new().text(ZERO),
            ScriptedStep::new().text(ZERO),
        ]);
        let resumed = on_file(&path, &model, mode).session(&session);
        assert_eq!(
            resumed.last_output::<Invoice>().await.unwrap(),
            Some(invoice("INV-7", 1250)),
            "{mode:?}"
        );
        let failed = resumed.run("Again, wrongly.").await;
        assert_eq!(failed.status, TurnStatus::Error, "{mode:?}");
        drop(resumed);
        let reopened = on_file(&path, &ScriptedModel::new([]), mode).session(&session);
        assert_eq!(
            reopened.last_output::<Invoice>().await.unwrap(),
            Some(invoice("INV-7", 1250)),
            "{mode:?}"
        );
        // The failed turn's rows: its first answer with the retry message, its last one
        // stored failed (out of the history the model reads).
        let rows = reopened.rows().await.unwrap();
        let tail: Vec<(String, agent_core::MessageStatus)> = rows[rows.len() - 4..]
            .iter()
            .map(|row| (row.message.text().to_owned(), row.status))
            .collect();
        assert_eq!(
            tail,
            [
                ("Again, wrongly.".to_owned(), agent_core::MessageStatus::Completed),
                (ZERO.to_owned(), agent_core::MessageStatus::Completed),
                (
                    "Your answer was not accepted: the total cannot be zero\nAnswer again, correcting it."
                        .to_owned(),
                    agent_core::MessageStatus::Completed
                ),
                (ZERO.to_owned(), agent_core::MessageStatus::Failed),
            ],
            "{mode:?}"
        );
    }
}

#[tokio::test]
async fn an_enum_may_be_offered_as_one_final_tool_per_variant() {
    let model = ScriptedModel::new([
        ScriptedStep::new().text("I approve."),
        ScriptedStep::new().tool_call("c1", "final_result_approve", r#"{"amount_cents":"5"}"#),
        ScriptedStep::new().tool_call("c2", "final_result_approve", r#"{"amount_cents":500}"#),
    ]);
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .output::<Decision>()
        .output_tool_per_variant()
        .output_retries(2)
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(
        result.output::<Decision>().unwrap(),
        &Decision::Approve { amount_cents: 500 }
    );
    let requests = model.requests();
    let tools = &requests[0].tools;
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["final_result_approve", "final_result_reject"]);
    // Each takes its variant's fields, the tag left out (the tool names it).
    assert_eq!(tools[0].parameters["required"], json!(["amount_cents"]));
    assert!(tools[0].parameters["properties"].get("kind").is_none());
    assert_eq!(tools[1].parameters["required"], json!(["reason"]));
    let Message::User { content, .. } = requests[1].messages.last().unwrap() else {
        panic!("the text answer goes back as a user message")
    };
    assert!(
        content.contains(
            "give it by calling one of the tools `final_result_approve`, `final_result_reject`"
        ),
        "{content}"
    );
    let (content, is_error) = tool_result(requests[2].messages.last().unwrap());
    assert!(is_error, "{content}");
    assert!(
        content.starts_with(r#"invalid answer: invalid type: string "5", expected u64"#)
            && content.ends_with("Call `final_result_approve` again with a corrected answer."),
        "{content}"
    );

    // A type that is no tagged enum does not build.
    let error = AgentBuilder::new("x")
        .model(ScriptedModel::new([]))
        .output::<Invoice>()
        .output_tool_per_variant()
        .build()
        .unwrap_err();
    assert!(
        error.problems[0].starts_with("`output_tool_per_variant`: ")
            && error.problems[0].contains(
                "cannot be offered as one tool per variant: its schema is of type `object`"
            ),
        "{:?}",
        error.problems
    );
}

/// The stored history of a conversation, each message as `role: content`.
async fn history_of(conversation: &agent_core::Conversation) -> Vec<String> {
    conversation
        .history()
        .await
        .unwrap()
        .iter()
        .map(|message| match message {
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => format!("tool {call_id} error={is_error}: {content}"),
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                let ids: Vec<&str> = tool_calls.iter().map(|call| call.id.as_str()).collect();
                format!("assistant: calls {}", ids.join(", "))
            }
            other => format!("{}: {}", other.role(), other.text()),
        })
        .collect()
}

#[tokio::test]
async fn a_final_answer_that_validated_in_a_step_ended_otherwise_is_not_read_back() {
    use agent_core::{FailurePolicy, Matcher};
    use tests::{Failure, failing};
    // The final-answer call validates, but the other call's fail-closed hook fails the turn.
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
            .tool_call("c2", "final_result", GOOD),
        ScriptedStep::new().tool_call("c3", "final_result", OTHER),
    ]);
    let agent = AgentBuilder::new("extractor")
        .model(model.clone())
        .output::<Invoice>()
        .tool(Add::traced(&Trace::new()))
        .after_tool_call(
            Matcher::tool("add"),
            failing::<event::AfterToolCall<serde_json::Value>>("strict", Failure::Error)
                .on_error(FailurePolicy::FailClosed),
        )
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let result = conversation.run("Extract the invoice.").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert!(result.output.is_none());
    let not_taken = "The final answer was not taken: the turn ended with an error: \
                     after_tool_call hook `strict` returned an error: it broke.";
    // The answer's result says it was not taken, in the rows and in the turn's messages.
    let expected = [
        "user: Extract the invoice.".to_owned(),
        "assistant: calls c1, c2".to_owned(),
        "tool c1 error=false: 5".to_owned(),
        format!("tool c2 error=true: {not_taken}"),
    ];
    assert_eq!(history_of(&conversation).await, expected);
    let answer = Message::Tool {
        call_id: "c2".into(),
        name: "final_result".into(),
        content: not_taken.into(),
        is_error: true,
    };
    assert_eq!(result.messages.last(), Some(&answer));
    assert_eq!(conversation.last_output::<Invoice>().await.unwrap(), None);

    // The next turn's answer is the one read back; its model read that the earlier was not taken.
    let result = conversation.run("Again.").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        conversation.last_output::<Invoice>().await.unwrap(),
        Some(invoice("INV-8", 800))
    );
    let requests = model.requests();
    assert_eq!(tool_result(&requests[1].messages[3]), (not_taken, true));
}

#[tokio::test]
async fn a_text_answer_that_validated_in_a_step_ended_otherwise_is_stored_failed() {
    use agent_core::FailurePolicy;
    use tests::{Failure, failing};
    // Prompted mode: the answer validates, then a fail-closed on_step_finish hook fails the
    // turn.
    let model = ScriptedModel::new([ScriptedStep::new().text(GOOD)]);
    let agent = AgentBuilder::new("extractor")
        .model(model)
        .output::<Invoice>()
        .output_mode(OutputMode::Prompted)
        .hook(
            failing::<event::OnStepFinish>("strict", Failure::Error)
                .on_error(FailurePolicy::FailClosed),
        )
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let result = conversation.run("Extract the invoice.").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert!(result.output.is_none());
    // Stored failed, as an answer that failed the turn is: out of the history a model reads.
    assert_eq!(
        history_of(&conversation).await,
        ["user: Extract the invoice."]
    );
    assert_eq!(conversation.last_output::<Invoice>().await.unwrap(), None);
}

#[tokio::test]
async fn a_final_answer_beside_a_call_waiting_for_approval_is_not_taken_and_asked_again() {
    use agent_core::{FnTool, ToolError};
    let delete = FnTool::new(
        "delete",
        "Delete a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        |_, _| async { Ok::<serde_json::Value, ToolError>(json!("deleted")) },
    )
    .needs_approval(|_| true);
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "delete", r#"{"path":"a.txt"}"#)
            .tool_call("c2", "final_result", GOOD),
        ScriptedStep::new().tool_call("c3", "final_result", OTHER),
    ]);
    let agent = AgentBuilder::new("extractor")
        .model(model.clone())
        .output::<Invoice>()
        .dyn_tool(delete)
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let suspended = conversation.run("Extract the invoice.").await;

    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    assert!(suspended.output.is_none());
    let not_taken =
        "The final answer was not taken: the turn was suspended: other calls wait for an answer.";
    // The history leaves the waiting call out until it has its result.
    assert_eq!(
        history_of(&conversation).await,
        [
            "user: Extract the invoice.".to_owned(),
            "assistant: calls c2".to_owned(),
            format!("tool c2 error=true: {not_taken}"),
        ]
    );
    assert_eq!(conversation.last_output::<Invoice>().await.unwrap(), None);

    // Approved, the turn resumes: the model reads that its answer was not taken, and answers.
    conversation.approve("c1").await.unwrap();
    let resumed = conversation.resume().await.unwrap();
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.output::<Invoice>().unwrap(), &invoice("INV-8", 800));
    assert_eq!(
        conversation.last_output::<Invoice>().await.unwrap(),
        Some(invoice("INV-8", 800))
    );
    let requests = model.requests();
    assert_eq!(tool_result(&requests[1].messages[2]), (not_taken, true));
}

/// A post_process_message hook that repairs an invoice answer: `BAD` becomes `GOOD`, in the
/// reply's text and in its calls' arguments (what a hook fixing a model's known mistake does).
fn repairing() -> Hook<event::PostProcessMessage> {
    Hook::<event::PostProcessMessage>::sync("repair", |ctx| {
        let Message::Assistant {
            content,
            reasoning,
            tool_calls,
            reasoning_signature,
            provider_blocks,
        } = &ctx.message
        else {
            return None;
        };
        let repair = |text: &str| text.replace(BAD, GOOD);
        let calls = tool_calls.iter().map(|call| {
            agent_core::ToolCall::new(call.id.clone(), call.name.clone(), repair(&call.arguments))
        });
        Some(Message::Assistant {
            content: repair(content).into(),
            reasoning: reasoning.clone(),
            tool_calls: calls.collect(),
            reasoning_signature: reasoning_signature.clone(),
            provider_blocks: provider_blocks.clone(),
        })
    })
}

/// The typed answer's partials follow a reply a post_process_message hook replaced: after the
/// discard, the replacement's partial (read from its text, or from its final-answer call's
/// arguments), never only the original's; and the output is the replacement's.
#[tokio::test]
async fn partial_answers_follow_a_reply_post_process_message_replaced() {
    const REASON: &str = "a post_process_message hook replaced the reply";
    // As text (native mode), streamed in two pieces.
    let (first, second) = BAD.split_at(BAD.find("\"total").unwrap());
    let model = ScriptedModel::new([ScriptedStep::new().text(first).text(second)])
        .supporting_output_schema();
    let agent = invoice_agent(&model, &Trace::new())
        .hook(repairing())
        .build()
        .unwrap();
    assert_eq!(
        stream_trace(&agent).await,
        lines(&[
            &format!("chunk(0 text:{first})"),
            r#"partial(0 {"number":"INV-7"})"#,
            &format!("chunk(0 text:{second})"),
            r#"partial(0 {"number":"INV-7","total_cents":"twelve"})"#,
            &format!("chunk(0 discarded:{REASON})"),
            &format!("chunk(0 text:{GOOD})"),
            r#"partial(0 {"number":"INV-7","total_cents":1250})"#,
            "step_finished(0)",
            r#"output(0 {"number":"INV-7","total_cents":1250})"#,
            "finished(completed)",
        ])
    );

    // By the final-answer tool.
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", BAD)]);
    let agent = invoice_agent(&model, &Trace::new())
        .hook(repairing())
        .build()
        .unwrap();
    assert_eq!(
        stream_trace(&agent).await,
        lines(&[
            "chunk(0 tool_start:c1 final_result)",
            "chunk(0 tool_input:c1)",
            r#"partial(0 {"number":"INV-7","total_cents":"twelve"})"#,
            "chunk(0 tool_call:c1 final_result)",
            &format!("chunk(0 discarded:{REASON})"),
            "chunk(0 tool_start:c1 final_result)",
            r#"partial(0 {"number":"INV-7","total_cents":1250})"#,
            "chunk(0 tool_call:c1 final_result)",
            "chunk(0 tool_result:c1 final_result ok)",
            "step_finished(0)",
            r#"output(0 {"number":"INV-7","total_cents":1250})"#,
            "finished(completed)",
        ])
    );
}

/// A tool a turn adds (a before_turn hook's, an MCP server's) named as the final-answer tool is
/// left out of the turn, as one named as another of the agent's tools is: offered beside it,
/// the request would name two tools alike, which providers refuse, and the answer's call
/// would be ambiguous.
#[tokio::test]
async fn a_turn_tool_named_as_the_final_answer_tool_is_left_out() {
    let ran = Trace::new();
    let seen = ran.clone();
    let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", GOOD)]);
    let agent = AgentBuilder::new("extractor")
        .model(model.clone())
        .output::<Invoice>()
        .hook(Hook::<event::BeforeTurn>::sync("mcp", move |_| {
            let seen = seen.clone();
            let tool = agent_core::FnTool::new(
                "final_result",
                "A server's tool of the same name.",
                json!({"type": "object"}),
                move |_, _| {
                    seen.push("the turn's final_result ran");
                    async { Ok::<_, agent_core::ToolError>(json!("ran")) }
                },
            );
            let mut config = agent_core::TurnConfig::new();
            config.tools =
                vec![std::sync::Arc::new(tool) as std::sync::Arc<dyn agent_core::DynTool>];
            config
        }))
        .build()
        .unwrap();

    let result = agent.run("Extract the invoice.").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.output::<Invoice>().unwrap().total_cents, 1250);
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert_eq!(offered, ["final_result"]);
    assert_eq!(ran.take(), Vec::<String>::new());
}

/// A text answer a validator fails closed on is no accepted answer: its row is stored failed,
/// out of the history the model reads, and the session's last answer stays the one before.
#[tokio::test]
async fn a_text_answer_whose_validator_failed_is_not_read_back() {
    let model = ScriptedModel::new([
        ScriptedStep::new().text(GOOD),
        ScriptedStep::new().text(OTHER),
    ]);
    let agent = AgentBuilder::new("extractor")
        .model(model)
        .output::<Invoice>()
        .output_mode(OutputMode::Prompted)
        .validate_output(Hook::<event::ValidateOutput<Invoice>>::sync(
            "ledger",
            |ctx| match ctx.output.number.as_str() {
                "INV-8" => Err("the ledger is down"),
                _ => Ok(OutputCheck::Accept),
            },
        ))
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let first = conversation.run("Extract the invoice.").await;
    assert_eq!(first.status, TurnStatus::Completed, "{first:?}");
    let failed = conversation.run("And the next one.").await;
    assert_eq!(failed.status, TurnStatus::Error, "{failed:?}");

    assert_eq!(
        conversation.last_output::<Invoice>().await.unwrap(),
        Some(invoice("INV-7", 1250))
    );
    let rows = conversation.rows().await.unwrap();
    let last = rows.last().unwrap();
    assert_eq!(
        (last.message.text(), last.status),
        (OTHER, agent_core::MessageStatus::Failed)
    );
}
