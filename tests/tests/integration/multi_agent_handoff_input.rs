//! Handoffs that carry input (`Handoff::input::<T>()`): the transfer tool's parameters are
//! `T`'s schema, the model's arguments reach before_handoff (as JSON and typed) and the target
//! (in the history it is sent), and arguments that do not fit `T` are an error result the
//! model reads, with no handoff. Full ordered traces; a handoff without input is unchanged.

use agent_core::{
    Agent, AgentBuilder, BuildError, Handoff, HandoffContext, HandoffDecision, Hook, Message,
    ScriptedModel, ScriptedStep, ToolOutcomeKind, TurnStatus, event,
};
use serde_json::{Value, json};
use tests::{Trace, lines};

/// Why a customer is escalated to a supervisor.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Escalation {
    /// What went wrong, in a sentence.
    reason: String,
    /// 1 (low) to 3 (urgent).
    priority: u8,
    /// The ticket, when there is one.
    ticket: Option<String>,
}

/// The step hooks of an agent, pushing `NAME:event(step)`.
fn traced(builder: AgentBuilder, name: &'static str, trace: &Trace) -> AgentBuilder {
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::BeforeStep>::sync("trace", move |ctx| {
        t.push(format!("{name}:before_step({})", ctx.step));
    }));
    let t = trace.clone();
    builder.hook(Hook::<event::OnStepFinish>::sync("trace", move |ctx| {
        t.push(format!("{name}:on_step_finish({})", ctx.step));
    }))
}

/// What a before_handoff hook sees: the agents, the input as JSON and as an [`Escalation`].
fn seen(ctx: &HandoffContext) -> String {
    let input = ctx
        .input
        .as_ref()
        .map_or("none".to_owned(), Value::to_string);
    let typed = match ctx.input_as::<Escalation>() {
        Ok(escalation) => format!("{escalation:?}"),
        Err(error) => error.to_string(),
    };
    format!(
        "before_handoff({}->{}, {}, input={input}, typed={typed})",
        ctx.from, ctx.to, ctx.tool
    )
}

/// supervisor: answers at once.
fn supervisor(trace: &Trace, model: &ScriptedModel) -> Agent {
    let builder = AgentBuilder::new("supervisor")
        .instructions("You are the supervisor.")
        .model(model.clone());
    traced(builder, "supervisor", trace).build().unwrap()
}

/// support: hands off with `handoff`, recording what its before_handoff hook sees.
fn support(trace: &Trace, model: &ScriptedModel, handoff: Handoff) -> Agent {
    let t = trace.clone();
    let builder = AgentBuilder::new("support")
        .model(model.clone())
        .handoff(handoff)
        .hook(Hook::<event::BeforeHandoff>::sync("gate", move |ctx| {
            t.push(format!("support:{}", seen(ctx)));
            HandoffDecision::Allow
        }));
    traced(builder, "support", trace).build().unwrap()
}

/// A model that calls `transfer_to_supervisor` with `arguments`, then answers itself.
fn calling(arguments: &str) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().text("Escalating.").tool_call(
            "h1",
            "transfer_to_supervisor",
            arguments,
        ),
        ScriptedStep::new().text("I will handle it myself."),
    ])
}

/// Each message as `role: text [calls]`, calls with their arguments.
fn shown(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|message| match message {
            Message::System { content } => format!("system: {content}"),
            Message::User { content } => format!("user: {content}"),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let calls: Vec<String> = tool_calls
                    .iter()
                    .map(|call| format!("{} {}", call.name, call.arguments))
                    .collect();
                format!("assistant: {content} [{}]", calls.join(", "))
            }
            Message::Tool {
                content, is_error, ..
            } => format!("tool(error: {is_error}): {content}"),
        })
        .collect()
}

const SENT: &str = r#"{"reason":"charged twice","priority":3,"ticket":"T-7"}"#;

#[tokio::test]
async fn a_typed_input_reaches_before_handoff_and_the_target() {
    let trace = Trace::new();
    let sm = ScriptedModel::new([ScriptedStep::new().text("Refunding the second charge.")]);
    let supervisor = supervisor(&trace, &sm);
    let model = calling(SENT);
    let support = support(
        &trace,
        &model,
        Handoff::to(&supervisor).input::<Escalation>(),
    );

    let result = support.run("I was charged twice").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "Refunding the second charge.");
    assert_eq!(
        trace.take(),
        lines(&[
            "support:before_step(0)",
            r#"support:before_handoff(support->supervisor, transfer_to_supervisor, input={"priority":3,"reason":"charged twice","ticket":"T-7"}, typed=Escalation { reason: "charged twice", priority: 3, ticket: Some("T-7") })"#,
            "support:on_step_finish(0)",
            "supervisor:before_step(1)",
            "supervisor:on_step_finish(1)",
        ])
    );
    let handoff = &result.steps[0].tool_results[0];
    assert_eq!(
        (handoff.content.as_str(), handoff.outcome, handoff.is_error),
        (
            "Transferred to agent `supervisor`.",
            ToolOutcomeKind::HandedOff,
            false
        )
    );
    // The target reads the input as the transfer call's arguments, as the model sent them.
    assert_eq!(
        shown(&sm.requests()[0].messages),
        [
            "user: I was charged twice".to_owned(),
            format!("assistant: Escalating. [transfer_to_supervisor {SENT}]"),
            "tool(error: false): Transferred to agent `supervisor`.".to_owned(),
        ]
    );
}

#[tokio::test]
async fn the_transfer_tool_offers_the_input_schema() {
    let (sm, model) = (ScriptedModel::new([]), calling("{}"));
    let supervisor = supervisor(&Trace::new(), &sm);
    let support = AgentBuilder::new("support")
        .model(model.clone())
        .handoff(Handoff::to(&supervisor).input::<Escalation>())
        .build()
        .unwrap();
    support.run("help").await;
    let offered = serde_json::to_value(&model.requests()[0].tools).unwrap();
    assert_eq!(
        offered,
        json!([{
            "name": "transfer_to_supervisor",
            "description": "Hand the conversation to agent `supervisor`.",
            "parameters": {
                "type": "object",
                "properties": {
                    "reason": {
                        "description": "What went wrong, in a sentence.",
                        "type": "string"
                    },
                    "priority": {
                        "description": "1 (low) to 3 (urgent).",
                        "type": "integer",
                        "format": "uint8",
                        "minimum": 0,
                        "maximum": 255
                    },
                    "ticket": {
                        "description": "The ticket, when there is one.",
                        "type": ["string", "null"]
                    }
                },
                "required": ["reason", "priority"],
                "additionalProperties": false
            }
        }])
    );
}

/// The model's first transfer call sends `bad`; it reads `reads`, stays, and its second
/// call, with arguments that fit, hands off.
async fn refused(bad: &str, reads: &str) {
    let trace = Trace::new();
    let sm = ScriptedModel::new([ScriptedStep::new().text("Supervisor here.")]);
    let supervisor = supervisor(&trace, &sm);
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("h1", "transfer_to_supervisor", bad),
        ScriptedStep::new().tool_call("h2", "transfer_to_supervisor", SENT),
    ]);
    let support = support(
        &trace,
        &model,
        Handoff::to(&supervisor).input::<Escalation>(),
    );
    let result = support.run("I was charged twice").await;
    assert_eq!(result.status, TurnStatus::Completed, "{bad}: {result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "support:before_step(0)",
            "support:on_step_finish(0)",
            "support:before_step(1)",
            r#"support:before_handoff(support->supervisor, transfer_to_supervisor, input={"priority":3,"reason":"charged twice","ticket":"T-7"}, typed=Escalation { reason: "charged twice", priority: 3, ticket: Some("T-7") })"#,
            "support:on_step_finish(1)",
            "supervisor:before_step(2)",
            "supervisor:on_step_finish(2)",
        ]),
        "{bad}"
    );
    let first = &result.steps[0].tool_results[0];
    assert_eq!(
        (first.content.as_str(), first.outcome, first.is_error),
        (reads, ToolOutcomeKind::Rejected, true),
        "{bad}"
    );
    assert_eq!(
        shown(&model.requests()[1].messages),
        [
            "user: I was charged twice".to_owned(),
            format!("assistant:  [transfer_to_supervisor {bad}]"),
            format!("tool(error: true): {reads}"),
        ],
        "the model reads the error and the same agent goes on"
    );
}

#[tokio::test]
async fn arguments_that_do_not_fit_the_input_are_an_error_the_model_reads() {
    let at = "invalid arguments for tool `transfer_to_supervisor` at";
    let cases = [
        (
            "{\"reason\": ",
            "`.`: EOF while parsing a value at line 1 column 11",
        ),
        ("", "`.`: missing field `reason`"),
        ("{}", "`.`: missing field `reason`"),
        (r#"{"priority":3}"#, "`.`: missing field `reason`"),
        (
            r#"{"reason":"charged twice","priority":"high"}"#,
            "`priority`: invalid type: string \"high\", expected u8",
        ),
        (
            r#"{"reason":"charged twice","priority":300}"#,
            "`priority`: invalid value: integer `300`, expected u8",
        ),
        (
            r#"{"reason":null,"priority":3}"#,
            "`reason`: invalid type: null, expected a string",
        ),
        (
            r#"{"reason":"charged twice","priority":3,"urgent":true}"#,
            "`.`: unknown field `urgent`, expected one of `priority`, `reason`, `ticket`",
        ),
        // Only an object: serde would read the struct from an array, by position.
        ("[]", "`.`: expected a JSON object, found []"),
        (
            r#"["charged twice", 3, null]"#,
            "`.`: expected a JSON object, found [\"charged twice\",3,null]",
        ),
    ];
    for (bad, reads) in cases {
        refused(bad, &format!("{at} {reads}")).await;
    }
}

/// A handoff without input is as before: no parameters, and whatever arguments the model
/// sends (extra fields, not even JSON) are not read; the hook sees no input.
#[tokio::test]
async fn a_handoff_without_input_takes_no_arguments_and_ignores_any() {
    for sent in ["{}", "", r#"{"reason":"charged twice"}"#, "{not json"] {
        let trace = Trace::new();
        let sm = ScriptedModel::new([ScriptedStep::new().text("Supervisor here.")]);
        let supervisor = supervisor(&trace, &sm);
        let model = calling(sent);
        let support = support(&trace, &model, Handoff::to(&supervisor));
        let result = support.run("I was charged twice").await;
        assert_eq!(result.text, "Supervisor here.", "{sent}");
        assert_eq!(
            trace.take(),
            lines(&[
                "support:before_step(0)",
                "support:before_handoff(support->supervisor, transfer_to_supervisor, input=none, typed=invalid arguments for tool `transfer_to_supervisor` at `.`: the handoff to `supervisor` takes no input: give it a type with `Handoff::input`)",
                "support:on_step_finish(0)",
                "supervisor:before_step(1)",
                "supervisor:on_step_finish(1)",
            ]),
            "{sent}"
        );
        let offered = serde_json::to_value(&model.requests()[0].tools[0]).unwrap();
        assert_eq!(
            offered["parameters"],
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }
}

/// An input type whose deserializer panics.
#[derive(schemars::JsonSchema)]
struct Fragile {}

impl<'de> serde::Deserialize<'de> for Fragile {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Fragile, D::Error> {
        panic!("the parser exploded")
    }
}

#[tokio::test]
async fn an_input_type_whose_parser_panics_is_an_error_the_model_reads() {
    let trace = Trace::new();
    let sm = ScriptedModel::new([]);
    let supervisor = supervisor(&trace, &sm);
    let model = calling("{}");
    let support = support(&trace, &model, Handoff::to(&supervisor).input::<Fragile>());
    let result = support.run("I was charged twice").await;
    assert_eq!(result.text, "I will handle it myself.");
    assert_eq!(
        trace.take(),
        lines(&[
            "support:before_step(0)",
            "support:on_step_finish(0)",
            "support:before_step(1)",
            "support:on_step_finish(1)",
        ])
    );
    let read = shown(&model.requests()[1].messages).pop().unwrap();
    assert_eq!(
        read,
        "tool(error: true): reading the arguments of transfer tool `transfer_to_supervisor` panicked: the parser exploded"
    );
    assert!(sm.requests().is_empty(), "the supervisor never runs");
}

#[test]
fn an_input_type_that_is_not_a_struct_is_refused_when_the_agent_is_built() {
    let model = ScriptedModel::new([]);
    let supervisor = supervisor(&Trace::new(), &model);
    let error: BuildError = AgentBuilder::new("support")
        .model(model)
        .handoff(Handoff::to(&supervisor).input::<String>())
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        [
            "handoff to `supervisor`: its input type `alloc::string::String` is not a struct: the transfer tool's parameters must be an object schema (providers refuse any other)"
        ]
    );
}

/// The macro form: a `#[hook(before_handoff)]` method reads the typed input.
struct Desk {
    trace: Trace,
}

#[agent_core::agent(instructions = "Help the customer.")]
impl Desk {
    /// Lets only urgent escalations through.
    #[hook(before_handoff)]
    fn urgent_only(&self, ctx: &HandoffContext) -> HandoffDecision {
        let escalation = match ctx.input_as::<Escalation>() {
            Ok(escalation) => escalation,
            Err(error) => return HandoffDecision::deny(error.to_string()),
        };
        self.trace.push(format!("urgent_only({escalation:?})"));
        match escalation.priority {
            3 => HandoffDecision::Allow,
            _ => HandoffDecision::deny(format!("not urgent: {}", escalation.reason)),
        }
    }
}

#[tokio::test]
async fn a_macro_hook_reads_the_typed_input() {
    use agent_core::AgentSpec;
    let trace = Trace::new();
    let sm = ScriptedModel::new([]);
    let supervisor = supervisor(&trace, &sm);
    let model = calling(r#"{"reason":"slow reply","priority":1}"#);
    let desk = Desk {
        trace: trace.clone(),
    }
    .builder()
    .model(model.clone())
    .handoff(Handoff::to(&supervisor).input::<Escalation>())
    .build()
    .unwrap();
    let result = desk.run("help").await;
    assert_eq!(result.text, "I will handle it myself.");
    assert_eq!(
        trace.take(),
        lines(&[r#"urgent_only(Escalation { reason: "slow reply", priority: 1, ticket: None })"#])
    );
    let read = shown(&model.requests()[1].messages).pop().unwrap();
    assert_eq!(read, "tool(error: false): not urgent: slow reply");
    assert!(sm.requests().is_empty(), "the supervisor never runs");
}
