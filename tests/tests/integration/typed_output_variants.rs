//! Typed output as one final-answer tool per variant of an enum, in each of serde's tagged
//! representations: the tools the model sees, its answer put back in the enum's own JSON, a
//! wrong variant's arguments sent back to be fixed, and the types that cannot be offered so.

use agent_core::{
    AgentBuilder, Message, ScriptedModel, ScriptedStep, ToolChoice, ToolSpec, TurnStatus,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tests::{Recorded, Trace, lines};

/// A ticket to open, a newtype variant's content.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Ticket {
    queue: String,
    urgent: bool,
}

/// Serde's default representation: `{"Approve": {...}}`, `{"Note": "..."}`, `"Cancel"`.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
enum External {
    /// Approve the claim for an amount.
    Approve {
        amount_cents: u64,
    },
    Note(String),
    Escalate(Ticket),
    /// Cancel the claim.
    Cancel,
}

/// `{"t": "approve", "c": {...}}`, and `{"t": "cancel"}` for the unit variant.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c", rename_all = "snake_case")]
enum Adjacent {
    Approve { amount_cents: u64 },
    Note(String),
    Escalate(Ticket),
    Cancel,
}

/// `{"kind": "approve", ...}`; a newtype variant's struct fields beside the tag.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Internal {
    Approve {
        amount_cents: u64,
        note: Option<String>,
    },
    Escalate(Ticket),
    Cancel,
}

/// Unit variants only: the schema is a string enum.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
enum Mood {
    Happy,
    NeedsHuman,
}

fn trace_of(trace: &Trace) -> Vec<String> {
    let mut entries = trace.take();
    entries.retain(|entry| !entry.starts_with("on_chunk(tool_input"));
    entries
}

/// The names and parameters of the tools the model saw.
fn tools_seen(tools: &[std::sync::Arc<ToolSpec>]) -> Vec<(String, Value)> {
    tools
        .iter()
        .map(|tool| (tool.name.clone(), tool.parameters.clone()))
        .collect()
}

/// The content of the last message, a tool result.
fn last_result(messages: &[Message]) -> (String, bool) {
    match messages.last() {
        Some(Message::Tool {
            content, is_error, ..
        }) => (content.to_string(), *is_error),
        other => panic!("expected a tool result, got {other:?}"),
    }
}

/// The trace of a turn whose first final-answer call (c1 of `first`) fails and whose second
/// (c2 of `second`) is accepted; `reason` is why the first failed.
fn retried(first: &str, second: &str, reason: &str) -> Vec<String> {
    lines(&[
        "before_run(Decide.)",
        "before_turn",
        "before_step(0)",
        "on_llm_start(0)",
        &format!("on_chunk(tool_start:c1 {first})"),
        &format!("on_chunk(tool_call:c1 {first})"),
        "on_llm_end(0)",
        &format!("on_chunk(tool_result:c1 {first} error)"),
        &format!("on_step_finish(0 output_failure: {reason})"),
        "before_step(1)",
        "on_llm_start(1)",
        &format!("on_chunk(tool_start:c2 {second})"),
        &format!("on_chunk(tool_call:c2 {second})"),
        "on_llm_end(1)",
        &format!("on_chunk(tool_result:c2 {second} ok)"),
        "on_step_finish(1)",
        "after_run(completed)",
        "on_chat_response(completed)",
    ])
}

/// Ticket's parameters, as a tool taking its fields sees them.
fn ticket_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"queue": {"type": "string"}, "urgent": {"type": "boolean"}},
        "required": ["queue", "urgent"],
        "additionalProperties": false,
    })
}

fn amount_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"amount_cents": {"type": "integer", "format": "uint64", "minimum": 0}},
        "required": ["amount_cents"],
        "additionalProperties": false,
    })
}

fn note_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"response": {"type": "string"}},
        "required": ["response"],
        "additionalProperties": false,
    })
}

fn no_parameters() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

#[tokio::test]
async fn an_externally_tagged_enum_is_one_tool_per_variant_and_a_wrong_one_is_sent_back() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result_approve", r#"{"amount_cents":"5"}"#),
        ScriptedStep::new().tool_call(
            "c2",
            "final_result_escalate",
            r#"{"queue":"claims","urgent":true}"#,
        ),
    ]);
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .output::<External>()
        .output_tool_per_variant()
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("Decide.").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        result.output::<External>().unwrap(),
        &External::Escalate(Ticket {
            queue: "claims".into(),
            urgent: true
        })
    );
    // The answer's JSON is the enum's own.
    assert_eq!(
        result.text,
        r#"{"Escalate":{"queue":"claims","urgent":true}}"#
    );
    assert_eq!(
        trace_of(&trace),
        retried(
            "final_result_approve",
            "final_result_escalate",
            "invalid answer at `Approve.amount_cents`: invalid type: string \"5\", expected u64",
        )
    );
    let requests = model.requests();
    assert_eq!(
        tools_seen(&requests[0].tools),
        [
            ("final_result_approve".to_owned(), amount_parameters()),
            ("final_result_note".to_owned(), note_parameters()),
            ("final_result_escalate".to_owned(), ticket_parameters()),
            ("final_result_cancel".to_owned(), no_parameters()),
        ]
    );
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
    // A variant's doc comment describes its tool; the others say which answer they give.
    let descriptions: Vec<&str> = requests[0]
        .tools
        .iter()
        .map(|tool| tool.description.as_str())
        .collect();
    assert_eq!(descriptions[0], "Approve the claim for an amount.");
    assert!(descriptions[1].ends_with("The answer is `Note`."));
    assert_eq!(descriptions[3], "Cancel the claim.");
    // The reason names the path in the enum's JSON.
    let (content, is_error) = last_result(&requests[1].messages);
    assert!(is_error);
    assert_eq!(
        content,
        "invalid answer at `Approve.amount_cents`: invalid type: string \"5\", expected u64\n\
         Call `final_result_approve` again with a corrected answer."
    );
}

/// Every event of a streamed turn, in order, as text.
async fn stream_trace(agent: &agent_core::Agent) -> (Vec<String>, agent_core::TurnResult) {
    use agent_core::TurnEvent;
    let mut stream = agent.conversation().stream("Decide.");
    let mut events = Vec::new();
    let mut result = None;
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
            TurnEvent::OutputRetry { step, attempt, .. } => {
                format!("output_retry({step} {attempt})")
            }
            TurnEvent::Output { step, output } => format!("output({step} {})", output.json()),
            TurnEvent::Finished(finished) => {
                let line = format!("finished({})", finished.status);
                result = Some(finished);
                line
            }
            other => format!("{other:?}"),
        });
    }
    (events, result.expect("the stream ends with the result"))
}

#[tokio::test]
async fn a_variants_tool_streams_partial_values_as_the_enums_json() {
    // A variant's fields (a wrong answer), then a newtype's content under `response`: each
    // call's start names the variant, and its arguments so far are given as the enum's JSON.
    let model = ScriptedModel::new([
        ScriptedStep::new().streamed_tool_call(
            "c1",
            "final_result_approve",
            [r#"{"amount_"#, r#"cents":"5"#, r#""}"#],
        ),
        ScriptedStep::new().streamed_tool_call(
            "c2",
            "final_result_note",
            [r#"{"resp"#, r#"onse":"ask"#, r#" again"}"#],
        ),
    ]);
    let agent = AgentBuilder::new("x")
        .model(model)
        .output::<External>()
        .output_tool_per_variant()
        .build()
        .unwrap();

    let (events, result) = stream_trace(&agent).await;

    let reason =
        "invalid answer at `Approve.amount_cents`: invalid type: string \"5\", expected u64";
    assert_eq!(
        events,
        lines(&[
            "chunk(0 tool_start:c1 final_result_approve)",
            "chunk(0 tool_input:c1)",
            r#"partial(0 {"Approve":{}})"#,
            "chunk(0 tool_input:c1)",
            r#"partial(0 {"Approve":{"amount_cents":"5"}})"#,
            "chunk(0 tool_input:c1)",
            // The string closed: the same value, now whole.
            r#"partial(0 {"Approve":{"amount_cents":"5"}})"#,
            "chunk(0 tool_call:c1 final_result_approve)",
            "chunk(0 tool_result:c1 final_result_approve error)",
            &format!("step_finished(0 output_failure: {reason})"),
            "output_retry(0 1)",
            // No partial until `response` starts: the enum's JSON needs the content.
            "chunk(1 tool_start:c2 final_result_note)",
            "chunk(1 tool_input:c2)",
            "chunk(1 tool_input:c2)",
            r#"partial(1 {"Note":"ask"})"#,
            "chunk(1 tool_input:c2)",
            r#"partial(1 {"Note":"ask again"})"#,
            "chunk(1 tool_call:c2 final_result_note)",
            "chunk(1 tool_result:c2 final_result_note ok)",
            "step_finished(1)",
            r#"output(1 {"Note":"ask again"})"#,
            "finished(completed)",
        ])
    );
    assert_eq!(
        result.output::<External>().unwrap(),
        &External::Note("ask again".into())
    );
}

#[tokio::test]
async fn an_externally_tagged_unit_variant_takes_no_arguments_and_a_newtype_one_a_response() {
    for (name, arguments, expected) in [
        ("final_result_cancel", "{}", External::Cancel),
        ("final_result_cancel", "", External::Cancel),
        (
            "final_result_note",
            r#"{"response":"ask again"}"#,
            External::Note("ask again".into()),
        ),
        (
            "final_result_approve",
            r#"{"amount_cents":500}"#,
            External::Approve { amount_cents: 500 },
        ),
    ] {
        let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", name, arguments)]);
        let agent = AgentBuilder::new("x")
            .model(model)
            .output::<External>()
            .output_tool_per_variant()
            .build()
            .unwrap();

        let result = agent.run("Decide.").await;

        assert_eq!(result.output::<External>().unwrap(), &expected, "{name}");
        assert_eq!(result.text, serde_json::to_string(&expected).unwrap());
    }
}

#[tokio::test]
async fn an_adjacently_tagged_enum_is_one_tool_per_variant_and_a_wrong_one_is_sent_back() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        // The newtype's content belongs under `response`.
        ScriptedStep::new().tool_call("c1", "final_result_note", r#"{"text":"ask again"}"#),
        ScriptedStep::new().tool_call("c2", "final_result_note", r#"{"response":"ask again"}"#),
    ]);
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .output::<Adjacent>()
        .output_tool_per_variant()
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("Decide.").await;

    assert_eq!(
        result.output::<Adjacent>().unwrap(),
        &Adjacent::Note("ask again".into())
    );
    assert_eq!(result.text, r#"{"t":"note","c":"ask again"}"#);
    assert_eq!(
        trace_of(&trace),
        retried(
            "final_result_note",
            "final_result_note",
            "the arguments lack `response`",
        )
    );
    let requests = model.requests();
    assert_eq!(
        tools_seen(&requests[0].tools),
        [
            ("final_result_approve".to_owned(), amount_parameters()),
            ("final_result_note".to_owned(), note_parameters()),
            ("final_result_escalate".to_owned(), ticket_parameters()),
            ("final_result_cancel".to_owned(), no_parameters()),
        ]
    );
    let (content, is_error) = last_result(&requests[1].messages);
    assert!(is_error);
    assert_eq!(
        content,
        "the arguments lack `response`\nCall `final_result_note` again with a corrected answer."
    );
}

#[tokio::test]
async fn each_adjacently_tagged_variant_comes_back_in_the_enums_json() {
    for (name, arguments, expected, json) in [
        (
            "final_result_cancel",
            "{}",
            Adjacent::Cancel,
            json!({"t": "cancel"}),
        ),
        (
            "final_result_approve",
            r#"{"amount_cents":500}"#,
            Adjacent::Approve { amount_cents: 500 },
            json!({"t": "approve", "c": {"amount_cents": 500}}),
        ),
        (
            "final_result_escalate",
            r#"{"queue":"claims","urgent":false}"#,
            Adjacent::Escalate(Ticket {
                queue: "claims".into(),
                urgent: false,
            }),
            json!({"t": "escalate", "c": {"queue": "claims", "urgent": false}}),
        ),
    ] {
        let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", name, arguments)]);
        let agent = AgentBuilder::new("x")
            .model(model)
            .output::<Adjacent>()
            .output_tool_per_variant()
            .build()
            .unwrap();

        let result = agent.run("Decide.").await;

        assert_eq!(result.output::<Adjacent>().unwrap(), &expected, "{name}");
        assert_eq!(result.output.as_ref().unwrap().json(), &json);
    }
}

#[tokio::test]
async fn an_internally_tagged_enum_takes_a_newtype_variants_fields_and_a_unit_variant_none() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result_escalate", r#"{"queue":"claims"}"#),
        ScriptedStep::new().tool_call("c2", "final_result_cancel", "{}"),
    ]);
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .output::<Internal>()
        .output_tool_per_variant()
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("Decide.").await;

    assert_eq!(result.output::<Internal>().unwrap(), &Internal::Cancel);
    assert_eq!(result.text, r#"{"kind":"cancel"}"#);
    assert_eq!(
        trace_of(&trace),
        retried(
            "final_result_escalate",
            "final_result_cancel",
            "invalid answer: missing field `urgent`",
        )
    );
    let requests = model.requests();
    assert_eq!(
        tools_seen(&requests[0].tools),
        [
            (
                "final_result_approve".to_owned(),
                json!({
                    "type": "object",
                    "properties": {
                        "amount_cents": {"type": "integer", "format": "uint64", "minimum": 0},
                        "note": {"type": ["string", "null"]},
                    },
                    "required": ["amount_cents"],
                    "additionalProperties": false,
                })
            ),
            ("final_result_escalate".to_owned(), ticket_parameters()),
            (
                "final_result_cancel".to_owned(),
                json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
            ),
        ]
    );
    let (content, is_error) = last_result(&requests[1].messages);
    assert!(is_error);
    assert_eq!(
        content,
        "invalid answer: missing field `urgent`\n\
         Call `final_result_escalate` again with a corrected answer."
    );
}

#[tokio::test]
async fn an_enum_of_unit_variants_is_one_tool_without_arguments_per_variant() {
    let model =
        ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result_needs_human", "{}")]);
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .output::<Mood>()
        .output_tool_per_variant()
        .build()
        .unwrap();

    let result = agent.run("How is it going?").await;

    assert_eq!(result.output::<Mood>().unwrap(), &Mood::NeedsHuman);
    assert_eq!(result.text, r#""NeedsHuman""#);
    assert_eq!(
        tools_seen(&model.requests()[0].tools),
        [
            ("final_result_happy".to_owned(), no_parameters()),
            ("final_result_needs_human".to_owned(), no_parameters()),
        ]
    );
}

#[tokio::test]
async fn auto_takes_the_final_tools_for_an_enum_even_with_native_support() {
    // Providers take no enum (no object) as a structured output's root: Auto asks by tool,
    // one tool per variant when asked, else the one tool with the enum under `response`.
    for per_variant in [true, false] {
        let (name, arguments) = match per_variant {
            true => ("final_result_cancel", "{}"),
            false => ("final_result", r#"{"response":"Cancel"}"#),
        };
        let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", name, arguments)])
            .supporting_output_schema();
        let builder = AgentBuilder::new("x")
            .model(model.clone())
            .output::<External>();
        let builder = match per_variant {
            true => builder.output_tool_per_variant(),
            false => builder,
        };

        let result = builder.build().unwrap().run("Decide.").await;

        assert_eq!(result.output::<External>().unwrap(), &External::Cancel);
        let request = &model.requests()[0];
        assert!(request.output_schema.is_none());
        assert_eq!(request.tool_choice, ToolChoice::Required);
        assert_eq!(request.tools.len(), if per_variant { 4 } else { 1 });
    }
}

/// Internally tagged, with one field of the same name in each variant that has one: the same
/// JSON as an adjacently tagged enum (`tag = "kind", content = "text"`), and offered as one.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Reply {
    Answer { text: String },
    Escalate,
}

#[tokio::test]
async fn an_internally_tagged_enum_that_reads_as_an_adjacently_tagged_one_still_parses() {
    let model = ScriptedModel::new([ScriptedStep::new().tool_call(
        "c1",
        "final_result_answer",
        r#"{"response":"42"}"#,
    )]);
    let agent = AgentBuilder::new("x")
        .model(model.clone())
        .output::<Reply>()
        .output_tool_per_variant()
        .build()
        .unwrap();

    let result = agent.run("Decide.").await;

    assert_eq!(
        result.output::<Reply>().unwrap(),
        &Reply::Answer { text: "42".into() }
    );
    assert_eq!(
        tools_seen(&model.requests()[0].tools),
        [
            ("final_result_answer".to_owned(), note_parameters()),
            ("final_result_escalate".to_owned(), no_parameters()),
        ]
    );
}

/// No tag tells these apart.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Untagged {
    Amount { amount_cents: u64 },
    Note(String),
}

/// A hand-written schema of alternatives that no tag tells apart.
#[derive(Serialize, Deserialize)]
struct Alternatives {
    a: u32,
    b: u32,
}

impl JsonSchema for Alternatives {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Alternatives".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"oneOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
        ]})
    }
}

/// Two variants whose tools would have the same name.
#[derive(Serialize, Deserialize, JsonSchema)]
#[allow(non_camel_case_types)]
enum Clash {
    NeedsHuman,
    needs_human,
}

#[test]
fn a_type_that_is_no_tagged_enum_does_not_build_and_says_why() {
    fn problem<T: agent_core::OutputType>() -> String {
        let error = AgentBuilder::new("x")
            .model(ScriptedModel::new([]))
            .output::<T>()
            .output_tool_per_variant()
            .build()
            .unwrap_err();
        assert_eq!(error.problems.len(), 1, "{:?}", error.problems);
        error.problems[0].clone()
    }
    let hint = "; it takes an enum tagged externally (serde's default), internally (`#[serde(tag = \"...\")]`) or adjacently \
                (`#[serde(tag = \"...\", content = \"...\")]`)";
    assert_eq!(
        problem::<Ticket>(),
        format!(
            "`output_tool_per_variant`: `{}` cannot be offered as one tool per variant: its schema \
             is of type `object`, not a `oneOf` of variants{hint}",
            std::any::type_name::<Ticket>()
        )
    );
    assert_eq!(
        problem::<Untagged>(),
        format!(
            "`output_tool_per_variant`: `{}` cannot be offered as one tool per variant: its schema \
             is an `anyOf` of untagged alternatives (an untagged enum's, or an `Option`'s){hint}",
            std::any::type_name::<Untagged>()
        )
    );
    assert_eq!(
        problem::<Option<External>>(),
        format!(
            "`output_tool_per_variant`: `{}` cannot be offered as one tool per variant: its schema \
             is an `anyOf` of untagged alternatives (an untagged enum's, or an `Option`'s){hint}",
            std::any::type_name::<Option<External>>()
        )
    );
    assert_eq!(
        problem::<Alternatives>(),
        format!(
            "`output_tool_per_variant`: `{}` cannot be offered as one tool per variant: its `oneOf` \
             alternative 0 is neither an object holding a tag, nor an object of one property, nor \
             a string{hint}",
            std::any::type_name::<Alternatives>()
        )
    );
    assert_eq!(
        problem::<Clash>(),
        format!(
            "`output_tool_per_variant`: `{}` cannot be offered as one tool per variant: two \
             variants make the tool `final_result_needs_human`{hint}",
            std::any::type_name::<Clash>()
        )
    );
}

#[test]
fn native_mode_takes_only_an_object_answer_and_says_what_to_use_instead() {
    fn problems<T: agent_core::OutputType>(per_variant: bool) -> Vec<String> {
        let builder = AgentBuilder::new("x")
            .model(ScriptedModel::new([]))
            .output::<T>()
            .output_mode(agent_core::OutputMode::Native);
        let builder = if per_variant {
            builder.output_tool_per_variant()
        } else {
            builder
        };
        builder
            .build()
            .err()
            .map(|e| e.problems)
            .unwrap_or_default()
    }
    let problem = |name: &str| {
        format!(
            "`OutputMode::Native` asks for `{name}` as the reply's own JSON, and a provider's \
             native structured output takes only an object (a struct) there; use \
             `OutputMode::Auto` or `OutputMode::Tool` for an enum or another non-object type"
        )
    };
    assert_eq!(problems::<Ticket>(false), Vec::<String>::new());
    let external = std::any::type_name::<External>();
    assert_eq!(problems::<External>(false), vec![problem(external)]);
    assert_eq!(problems::<External>(true), vec![problem(external)]);
    assert_eq!(
        problems::<Vec<u32>>(false),
        vec![problem(std::any::type_name::<Vec<u32>>())]
    );
}
