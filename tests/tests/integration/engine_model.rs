//! What the model gets wrong (docs/design.md §6 "Model mistakes are results") and how broken streams
//! end a turn: stage, partial output, classification and the error surfaced.

use std::sync::OnceLock;

use agent_core::{
    AgentBuilder, ChatErrorClassification, ChatErrorContext, ChatResponse, ClassifyContext,
    ErrorStage, Hook, LlmEndContext, Message, MessageStatus, ModelErrorKind, ScriptedModel,
    ScriptedStep, Tool, ToolContext, ToolError, TurnError, TurnErrorKind, TurnStatus,
    default_classifier, event, schema_for,
};
use serde::{Deserialize, Serialize};
use tests::{Add, Recorded, Seen, Trace, lines, own_args};

// ---- Model mistakes ----

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct OrderLine {
    sku: String,
    qty: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct PlaceOrderArgs {
    items: Vec<OrderLine>,
}

/// `place_order`: nested arguments, so a bad field has a path.
struct PlaceOrder;

impl Tool for PlaceOrder {
    const NAME: &'static str = "place_order";
    const DESCRIPTION: &'static str = "Order some items.";
    type Args = PlaceOrderArgs;
    type Output = u32;

    fn schema() -> &'static serde_json::Value {
        static SCHEMA: OnceLock<serde_json::Value> = OnceLock::new();
        SCHEMA.get_or_init(schema_for::<PlaceOrderArgs>)
    }

    async fn call(&self, args: PlaceOrderArgs, _ctx: ToolContext) -> Result<u32, ToolError> {
        Ok(args.items.iter().map(|line| line.qty).sum())
    }
}

own_args!(PlaceOrderArgs => PlaceOrder);

#[tokio::test]
async fn unknown_tools_and_bad_arguments_are_error_results_without_hooks() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "delete_everything", "{}")
            .tool_call("c2", "add", r#"{"a":2,"#)
            .tool_call("c3", "add", r#"{"a":"two","b":3}"#)
            .tool_call("c4", "add", r#"{"a":2}"#)
            .tool_call(
                "c5",
                "place_order",
                r#"{"items":[{"sku":"x","qty":1},{"sku":"y","qty":-1}]}"#,
            )
            .tool_call("c6", "add", r#"{"a":2,"b":3} trailing"#)
            .tool_call("c7", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("recovered"),
    ]);
    let agent = AgentBuilder::new("mistakes")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .tool(PlaceOrder)
        .record_all(&trace)
        .build()
        .unwrap();

    let result = agent.run("try").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "recovered");
    // Only the valid call c7 reaches hooks and the tool.
    let trace = trace.take();
    let tool_events: Vec<&str> = trace
        .iter()
        .map(String::as_str)
        .filter(|e| {
            ![
                "on_chunk(tool_start",
                "on_chunk(tool_input",
                "on_chunk(tool_call",
            ]
            .iter()
            .any(|chunk| e.starts_with(chunk))
        })
        .collect();
    assert_eq!(
        tool_events,
        [
            "before_run(try)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_llm_end(0)",
            "before_tool_call(add c7)",
            "add(2,3)",
            "after_tool_call(add c7 executed)",
            "on_chunk(tool_result:c1 delete_everything error)",
            "on_chunk(tool_result:c2 add error)",
            "on_chunk(tool_result:c3 add error)",
            "on_chunk(tool_result:c4 add error)",
            "on_chunk(tool_result:c5 place_order error)",
            "on_chunk(tool_result:c6 add error)",
            "on_chunk(tool_result:c7 add ok)",
            "on_step_finish(0)",
            "before_step(1)",
            "on_llm_start(1)",
            "on_chunk(text:recovered)",
            "on_llm_end(1)",
            "on_step_finish(1)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ]
    );

    // What the model read, in its call order.
    let sent: Vec<(String, String, bool)> = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.to_string(), content.to_string(), *is_error)),
            _ => None,
        })
        .collect();
    let expected = [
        (
            "c1",
            "unknown tool `delete_everything`; available tools: add, place_order",
            true,
        ),
        // Invalid JSON has no field path; the parser's own words name the problem.
        ("c2", "", true),
        (
            "c3",
            "invalid arguments for tool `add` at `a`: invalid type: string \"two\", expected i64",
            true,
        ),
        (
            "c4",
            "invalid arguments for tool `add` at `.`: missing field `b`",
            true,
        ),
        (
            "c5",
            "invalid arguments for tool `place_order` at `items[1].qty`: invalid value: integer `-1`, expected u32",
            true,
        ),
        ("c6", "", true),
        ("c7", "5", false),
    ];
    let syntax = [
        ("c2", "EOF while parsing a value"),
        ("c6", "trailing characters"),
    ];
    for (id, problem) in syntax {
        let (_, content, _) = sent.iter().find(|(i, ..)| i == id).expect("a result");
        assert!(
            content.starts_with("invalid arguments for tool `add` at ")
                && content.contains(problem),
            "{id}: {content}"
        );
    }
    let expected: Vec<(String, String, bool)> = expected
        .iter()
        .map(|(id, content, error)| ((*id).to_owned(), (*content).to_owned(), *error))
        .collect();
    let sent: Vec<(String, String, bool)> = sent
        .into_iter()
        .map(|(id, content, error)| {
            let syntax = syntax.iter().any(|(i, _)| *i == id);
            (id, if syntax { String::new() } else { content }, error)
        })
        .collect();
    assert_eq!(sent, expected);
    let outcomes: Vec<&str> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| r.outcome.as_str())
        .collect();
    assert_eq!(
        outcomes,
        [
            "rejected", "rejected", "rejected", "rejected", "rejected", "rejected", "executed"
        ]
    );
}

#[tokio::test]
async fn empty_arguments_mean_an_empty_object() {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", ""),
        ScriptedStep::new().text("ok"),
    ]);
    let agent = AgentBuilder::new("mistakes")
        .model(model.clone())
        .tool(Add::default())
        .build()
        .unwrap();
    let result = agent.run("try").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        result.steps[0].tool_results[0].content,
        "invalid arguments for tool `add` at `.`: missing field `a`"
    );
}

// ---- Broken streams ----

/// An agent recording everything, keeping the error and response contexts.
struct Broken {
    trace: Trace,
    errors: Seen<ChatErrorContext>,
    responses: Seen<ChatResponse>,
    llm_ends: Seen<LlmEndContext>,
}

impl Broken {
    fn new() -> Self {
        Broken {
            trace: Trace::new(),
            errors: Seen::new(),
            responses: Seen::new(),
            llm_ends: Seen::new(),
        }
    }

    fn builder(&self, model: &ScriptedModel) -> AgentBuilder {
        AgentBuilder::new("broken")
            .model(model.clone())
            .tool(Add::traced(&self.trace))
            .record_all(&self.trace)
            .hook(self.errors.hook::<event::OnChatError>("errors"))
            .hook(self.responses.hook::<event::OnChatResponse>("responses"))
            .hook(self.llm_ends.hook::<event::OnLlmEnd>("llm_ends"))
    }
}

/// The trace of a turn whose only stream broke after `Par`, `tial` and a call to `add`.
const BROKEN_TURN: &[&str] = &[
    "before_run(go)",
    "before_turn",
    "before_step(0)",
    "on_llm_start(0)",
    "on_chunk(text:Par)",
    "on_chunk(text:tial)",
    "on_chunk(tool_start:c1 add)",
    "on_chunk(tool_input:c1)",
    "on_chunk(tool_call:c1 add)",
    "on_llm_end(0)",
    "classify_chat_error(stream)",
    "on_chat_error(stream)",
    "on_chat_response(error)",
];

fn partial_then(end: fn(ScriptedStep) -> ScriptedStep) -> ScriptedModel {
    let step =
        ScriptedStep::new()
            .text("Par")
            .text("tial")
            .tool_call("c1", "add", r#"{"a":1,"b":2}"#);
    ScriptedModel::new([end(step), ScriptedStep::new().text("never asked")])
}

async fn stream_breaks(
    end: fn(ScriptedStep) -> ScriptedStep,
    kind: TurnErrorKind,
    message: &str,
    classification: ChatErrorClassification,
) {
    let broken = Broken::new();
    let model = partial_then(end);
    let conversation = broken.builder(&model).build().unwrap().conversation();

    let result = conversation.run("go").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    // The tool of the broken step never ran (no `add(1,2)`, no tool hooks).
    assert_eq!(broken.trace.take(), lines(BROKEN_TURN));
    assert_eq!(result.text, "Partial");
    let error = result.error.clone().expect("an error");
    assert_eq!(error.kind, kind);
    assert_eq!(error.message, message);
    assert_eq!(result.classification, Some(classification));
    assert_eq!(model.requests().len(), 1, "no retry, no second step");

    let errors = broken.errors.take();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].stage, ErrorStage::Stream);
    assert!(errors[0].messages_persisted);
    assert_eq!(errors[0].classification, classification);
    assert_eq!(errors[0].partial_text, "Partial");
    assert_eq!(errors[0].error, error);
    let responses = broken.responses.take();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].status, TurnStatus::Error);
    assert_eq!(responses[0].message, Message::assistant("Partial"));
    assert_eq!(responses[0].error.as_ref(), Some(&error));
    // on_llm_end saw the same typed error, and no finish reason.
    let ends = broken.llm_ends.take();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].error.as_ref(), Some(&error));
    assert_eq!(ends[0].finish_reason, None);

    // The partial text is persisted as a failed message, without the tool call that never
    // ran, and stays out of the model's history.
    let rows: Vec<(Message, MessageStatus)> = conversation
        .rows()
        .await
        .unwrap()
        .into_iter()
        .map(|row| (row.message, row.status))
        .collect();
    assert_eq!(
        rows,
        [
            (Message::user("go"), MessageStatus::Completed),
            (Message::assistant("Partial"), MessageStatus::Failed),
        ]
    );
    assert_eq!(conversation.history().await.unwrap(), [Message::user("go")]);
}

#[tokio::test]
async fn a_stream_failing_midway_ends_the_turn_with_stage_stream() {
    stream_breaks(
        |step| step.fail("connection reset by peer"),
        TurnErrorKind::Model(ModelErrorKind::Transport),
        "connection reset by peer",
        ChatErrorClassification::Transient,
    )
    .await;
}

#[tokio::test]
async fn a_stream_without_its_end_marker_ends_the_turn_with_stage_stream() {
    stream_breaks(
        ScriptedStep::truncate,
        TurnErrorKind::Model(ModelErrorKind::StreamTruncated),
        "the model's stream ended without its end marker (truncated stream)",
        ChatErrorClassification::Transient,
    )
    .await;
}

#[tokio::test]
async fn an_in_band_error_ends_the_turn_with_stage_stream() {
    stream_breaks(
        |step| step.in_band_error("the server is overloaded"),
        TurnErrorKind::ModelInBand,
        "the model reported an error: the server is overloaded",
        ChatErrorClassification::Unknown,
    )
    .await;
}

#[tokio::test]
async fn a_later_broken_step_keeps_the_earlier_steps() {
    let broken = Broken::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":2}"#),
        ScriptedStep::new().text("Thr").fail("socket closed"),
    ]);
    let conversation = broken.builder(&model).build().unwrap().conversation();

    let result = conversation.run("go").await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    assert_eq!(result.text, "Thr");
    assert_eq!(result.steps.len(), 1);
    let rows = conversation.rows().await.unwrap();
    let roles: Vec<(&str, MessageStatus)> = rows
        .iter()
        .map(|row| (row.message.role(), row.status))
        .collect();
    assert_eq!(
        roles,
        [
            ("user", MessageStatus::Completed),
            ("assistant", MessageStatus::Completed),
            ("tool", MessageStatus::Completed),
            ("assistant", MessageStatus::Failed),
        ]
    );
    assert_eq!(rows[3].message, Message::assistant("Thr"));
    assert_eq!(broken.errors.take()[0].stage, ErrorStage::Stream);
}

// ---- Classification ----

#[tokio::test]
async fn classify_chat_error_hooks_decide_the_classification() {
    let broken = Broken::new();
    let model = partial_then(|step| step.fail("connection reset by peer"));
    let classified = Seen::<ClassifyContext>::new();
    let agent = broken
        .builder(&model)
        .hook(classified.hook::<event::ClassifyChatError>("seen"))
        .hook(Hook::<event::ClassifyChatError>::sync("unsure", |_| {
            None::<ChatErrorClassification>
        }))
        .hook(Hook::<event::ClassifyChatError>::sync("fatal", |ctx| {
            assert_eq!(ctx.stage, ErrorStage::Stream);
            ChatErrorClassification::Fatal
        }))
        .hook(Hook::<event::ClassifyChatError>::sync("too_late", |_| {
            ChatErrorClassification::RateLimit
        }))
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.classification, Some(ChatErrorClassification::Fatal));
    let errors = broken.errors.take();
    assert_eq!(errors[0].classification, ChatErrorClassification::Fatal);
    let classified = classified.take();
    assert_eq!(classified.len(), 1);
    assert_eq!(classified[0].error.message, "connection reset by peer");
}

/// Context-overflow messages of four providers, as they arrive in a stream's error event.
const OVERFLOWS: &[&str] = &[
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. (code: context_length_exceeded)",
    "prompt is too long: 210000 tokens > 200000 maximum",
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)",
    "Input is too long for requested model",
];

#[tokio::test]
async fn context_overflow_errors_of_each_provider_are_classified_without_a_hook() {
    for message in OVERFLOWS {
        let broken = Broken::new();
        let model = ScriptedModel::new([ScriptedStep::new().in_band_error(*message)]);
        let result = broken.builder(&model).build().unwrap().run("go").await;
        assert_eq!(result.status, TurnStatus::Error, "{result:?}");
        assert_eq!(
            result.classification,
            Some(ChatErrorClassification::ContextOverflow),
            "{message}"
        );
        let errors = broken.errors.take();
        assert_eq!(
            errors[0].classification,
            ChatErrorClassification::ContextOverflow
        );
        assert_eq!(errors[0].stage, ErrorStage::Stream);
    }
}

#[test]
fn the_default_classifier_knows_provider_overflows_rate_limits_and_transients() {
    let provider = |message: &str| {
        default_classifier(&TurnError::new(
            TurnErrorKind::Model(ModelErrorKind::Provider),
            message,
        ))
    };
    for message in OVERFLOWS {
        assert_eq!(
            provider(message),
            ChatErrorClassification::ContextOverflow,
            "{message}"
        );
    }
    assert_eq!(
        provider("error code: context_length_exceeded"),
        ChatErrorClassification::ContextOverflow
    );
    assert_eq!(
        provider("Rate limit reached for gpt-4o in organization org-1"),
        ChatErrorClassification::RateLimit
    );
    assert_eq!(
        provider("HTTP 429 Too Many Requests"),
        ChatErrorClassification::RateLimit
    );
    assert_eq!(
        provider("invalid api key"),
        ChatErrorClassification::Unknown
    );
    let of_kind = |kind| default_classifier(&TurnError::new(kind, "it broke"));
    assert_eq!(
        of_kind(TurnErrorKind::Model(ModelErrorKind::Transport)),
        ChatErrorClassification::Transient
    );
    assert_eq!(
        of_kind(TurnErrorKind::Model(ModelErrorKind::StreamTruncated)),
        ChatErrorClassification::Transient
    );
    assert_eq!(
        of_kind(TurnErrorKind::Model(ModelErrorKind::StreamMalformed)),
        ChatErrorClassification::Transient
    );
    assert_eq!(
        of_kind(TurnErrorKind::ModelInBand),
        ChatErrorClassification::Unknown
    );
    assert_eq!(
        of_kind(TurnErrorKind::Hook {
            event: "before_run",
            hook: "h".to_owned()
        }),
        ChatErrorClassification::Unknown
    );
}

// ---- Replacing the surfaced error ----

#[tokio::test]
async fn on_chat_error_may_replace_the_error_surfaced() {
    let broken = Broken::new();
    let model = partial_then(|step| step.fail("connection reset by peer"));
    let agent = broken
        .builder(&model)
        .hook(Hook::<event::OnChatError>::sync("friendly", |ctx| {
            TurnError::custom(format!("Sorry, try again ({})", ctx.stage.as_str()))
        }))
        .hook(Hook::<event::OnChatError>::sync("keeps", |_| {
            None::<TurnError>
        }))
        .build()
        .unwrap();

    let result = agent.run("go").await;

    let friendly = TurnError::custom("Sorry, try again (stream)");
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(result.error.as_ref(), Some(&friendly));
    // Every on_chat_error hook saw the original error.
    let errors = broken.errors.take();
    assert_eq!(errors[0].error.message, "connection reset by peer");
    let responses = broken.responses.take();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].error.as_ref(), Some(&friendly));
}
