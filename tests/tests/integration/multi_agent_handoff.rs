//! Handoffs (issue 9 item 2): the model of one agent calls a transfer tool, before_handoff
//! allows or denies it, and on allow the target's model, instructions, tools and step hooks run
//! the rest of the turn; the turn's frame (run and response hooks, the session) stays the entry
//! agent's. Full ordered traces, in `run` and in `stream`.

use std::sync::Arc;

use agent_core::{
    Agent, AgentBuilder, BuildError, FnTool, Handoff, HandoffDecision, HandoffHistory, Hook,
    Matcher, MemoryStore, Message, ScriptedModel, ScriptedStep, SessionStore, ToolError,
    ToolOutcomeKind, TurnEvent, TurnResult, TurnStatus, event,
};
use serde_json::{Value, json};
use tests::{Trace, assert_whole, lines};

/// Step, model and tool hooks of an agent, each pushing `NAME:event(...)`.
fn traced(builder: AgentBuilder, name: &'static str, trace: &Trace) -> AgentBuilder {
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::BeforeStep>::sync("trace", move |ctx| {
        t.push(format!("{name}:before_step({})", ctx.step));
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::OnLlmStart>::sync("trace", move |ctx| {
        t.push(format!("{name}:on_llm_start({})", ctx.step));
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::OnStepFinish>::sync("trace", move |ctx| {
        t.push(format!("{name}:on_step_finish({})", ctx.step));
    }));
    let t = trace.clone();
    let builder = builder.before_tool_call(
        Matcher::all().dynamic(),
        Hook::<event::BeforeToolCall<Value>>::sync("trace", move |ctx| {
            t.push(format!("{name}:before_tool_call({})", ctx.tool_name));
        }),
    );
    let t = trace.clone();
    builder.after_tool_call(
        Matcher::all().dynamic(),
        Hook::<event::AfterToolCall<Value>>::sync("trace", move |ctx| {
            t.push(format!("{name}:after_tool_call({})", ctx.tool_name));
        }),
    )
}

/// The turn's frame hooks (on the entry agent).
fn framed(builder: AgentBuilder, name: &'static str, trace: &Trace) -> AgentBuilder {
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::BeforeRun>::sync("trace", move |ctx| {
        t.push(format!("{name}:before_run({})", ctx.input));
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::AfterRun>::sync("trace", move |result| {
        t.push(format!("{name}:after_run({})", result.agent.name));
    }));
    let t = trace.clone();
    builder.hook(Hook::<event::OnChatResponse>::sync("trace", move |ctx| {
        t.push(format!("{name}:on_chat_response({})", ctx.status));
    }))
}

/// A before_handoff hook on `name` that records and decides with `decide`.
fn gate(
    name: &'static str,
    trace: &Trace,
    decide: impl Fn() -> HandoffDecision + Send + Sync + 'static,
) -> Hook<event::BeforeHandoff> {
    let t = trace.clone();
    Hook::<event::BeforeHandoff>::sync("gate", move |ctx| {
        t.push(format!("{name}:before_handoff({}->{})", ctx.from, ctx.to));
        decide()
    })
}

fn do_work(trace: &Trace) -> FnTool {
    let t = trace.clone();
    FnTool::new(
        "do_work",
        "Does the work.",
        json!({"type": "object"}),
        move |_, _| {
            t.push("do_work ran");
            async { Ok::<Value, ToolError>(json!("done")) }
        },
    )
}

/// billing: calls `do_work`, then answers.
fn billing(trace: &Trace, model: &ScriptedModel) -> Agent {
    let builder = AgentBuilder::new("billing")
        .description("Handles invoices and refunds.")
        .instructions("You are billing.")
        .model(model.clone())
        .dyn_tool(do_work(trace));
    traced(builder, "billing", trace).build().unwrap()
}

fn billing_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().tool_call("w1", "do_work", "{}"),
        ScriptedStep::new().text("Refund issued."),
    ])
}

/// triage: hands off to billing in its first step; answers itself if it is still running.
fn triage(
    trace: &Trace,
    model: &ScriptedModel,
    handoff: Handoff,
    store: &Arc<dyn SessionStore>,
    gate_hook: Hook<event::BeforeHandoff>,
) -> Agent {
    let builder = AgentBuilder::new("triage")
        .instructions("You are triage.")
        .model(model.clone())
        .store(store.clone())
        .handoff(handoff)
        .hook(gate_hook);
    framed(traced(builder, "triage", trace), "triage", trace)
        .build()
        .unwrap()
}

fn triage_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().text("Let me pass you on.").tool_call(
            "h1",
            "transfer_to_billing",
            "{}",
        ),
        ScriptedStep::new().text("Sorry, I cannot pass you on."),
    ])
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.text().to_owned()).collect()
}

const ALLOWED: &[&str] = &[
    "triage:before_run(I want a refund)",
    "triage:before_step(0)",
    "triage:on_llm_start(0)",
    "triage:before_handoff(triage->billing)",
    "triage:on_step_finish(0)",
    "billing:before_step(1)",
    "billing:on_llm_start(1)",
    "billing:before_tool_call(do_work)",
    "do_work ran",
    "billing:after_tool_call(do_work)",
    "billing:on_step_finish(1)",
    "billing:before_step(2)",
    "billing:on_llm_start(2)",
    "billing:on_step_finish(2)",
    "triage:after_run(billing)",
    "triage:on_chat_response(completed)",
];

/// Checks an allowed handoff's result, what each model was sent and the stored session.
async fn check_allowed(
    result: &TurnResult,
    triage_model: &ScriptedModel,
    billing_model: &ScriptedModel,
    store: &Arc<dyn SessionStore>,
) {
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "billing");
    assert_eq!(result.text, "Refund issued.");
    let handoff = &result.steps[0].tool_results[0];
    assert_eq!(handoff.outcome, ToolOutcomeKind::HandedOff);
    assert_eq!(handoff.content, "Transferred to agent `billing`.");

    let asked = triage_model.requests();
    assert_eq!(asked.len(), 1, "triage's model is asked once");
    let offered: Vec<_> = asked[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["transfer_to_billing"]);
    assert_eq!(
        asked[0].tools[0].description,
        "Hand the conversation to agent `billing`: Handles invoices and refunds."
    );

    let sent = billing_model.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].system.as_deref(), Some("You are billing."));
    let offered: Vec<_> = sent[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        offered,
        ["do_work"],
        "the target's tools, not the entry agent's"
    );
    assert_eq!(
        texts(&sent[0].messages),
        [
            "I want a refund",
            "Let me pass you on.",
            "Transferred to agent `billing`."
        ]
    );

    let rows = store.load("s").await.unwrap();
    assert_whole(&rows);
    let stored: Vec<_> = rows.iter().map(|r| r.message.text().to_owned()).collect();
    assert_eq!(
        stored,
        [
            "I want a refund",
            "Let me pass you on.",
            "Transferred to agent `billing`.",
            "",
            "done",
            "Refund issued."
        ]
    );
}

#[tokio::test]
async fn an_allowed_handoff_gives_the_target_the_rest_of_the_turn() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let (bm, tm) = (billing_model(), triage_model());
    let billing = billing(&trace, &bm);
    let gate_hook = gate("triage", &trace, || HandoffDecision::Allow);
    let triage = triage(&trace, &tm, Handoff::to(&billing), &store, gate_hook);
    let conversation = triage.session("s");

    let result = conversation.run("I want a refund").await;

    assert_eq!(trace.take(), lines(ALLOWED));
    check_allowed(&result, &tm, &bm, &store).await;
}

#[tokio::test]
async fn an_allowed_handoff_through_the_stream_api() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let (bm, tm) = (billing_model(), triage_model());
    let billing = billing(&trace, &bm);
    let gate_hook = gate("triage", &trace, || HandoffDecision::Allow);
    let triage = triage(&trace, &tm, Handoff::to(&billing), &store, gate_hook);
    let conversation = triage.session("s");

    let mut stream = conversation.stream("I want a refund");
    let mut seen = Vec::new();
    let mut result = None;
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::StepFinished(record) => seen.push(format!("step {}", record.step)),
            TurnEvent::Handoff { from, to } => seen.push(format!("handoff {from}->{to}")),
            TurnEvent::Finished(done) => result = Some(done),
            _ => {}
        }
    }
    assert_eq!(
        seen,
        ["step 0", "handoff triage->billing", "step 1", "step 2"]
    );
    assert_eq!(trace.take(), lines(ALLOWED));
    check_allowed(&result.unwrap(), &tm, &bm, &store).await;
}

const DENIED: &[&str] = &[
    "triage:before_run(I want a refund)",
    "triage:before_step(0)",
    "triage:on_llm_start(0)",
    "triage:before_handoff(triage->billing)",
    "triage:on_step_finish(0)",
    "triage:before_step(1)",
    "triage:on_llm_start(1)",
    "triage:on_step_finish(1)",
    "triage:after_run(triage)",
    "triage:on_chat_response(completed)",
];

/// A denied handoff: the model reads `reads` as the transfer call's result, and triage stays.
async fn denied(
    decide: impl Fn() -> HandoffDecision + Send + Sync + 'static,
    reads: &str,
    streamed: bool,
) {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let (bm, tm) = (billing_model(), triage_model());
    let billing = billing(&trace, &bm);
    let gate_hook = gate("triage", &trace, decide);
    let triage = triage(&trace, &tm, Handoff::to(&billing), &store, gate_hook);
    let conversation = triage.session("s");
    let result = if streamed {
        let mut stream = conversation.stream("I want a refund");
        let mut last = None;
        while let Some(event) = stream.next().await {
            assert!(!matches!(event, TurnEvent::Handoff { .. }), "no handoff");
            last = Some(event);
        }
        let Some(TurnEvent::Finished(result)) = last else {
            panic!("the stream ends with Finished")
        };
        result
    } else {
        conversation.run("I want a refund").await
    };
    assert_eq!(trace.take(), lines(DENIED), "streamed: {streamed}");
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(&*result.agent.name, "triage", "the current agent stays");
    assert_eq!(result.text, "Sorry, I cannot pass you on.");
    assert_eq!(
        result.steps[0].tool_results[0].outcome,
        ToolOutcomeKind::Blocked
    );
    assert!(bm.requests().is_empty(), "billing never runs");
    let second = &tm.requests()[1];
    assert_eq!(
        texts(&second.messages),
        ["I want a refund", "Let me pass you on.", reads]
    );
    assert_whole(&store.load("s").await.unwrap());
}

#[tokio::test]
async fn a_denied_handoff_keeps_the_agent_and_the_model_reads_the_reason() {
    for streamed in [false, true] {
        denied(
            || HandoffDecision::deny("billing is closed today"),
            "billing is closed today",
            streamed,
        )
        .await;
        denied(
            || HandoffDecision::Deny(None),
            "the handoff from `triage` to `billing` was denied",
            streamed,
        )
        .await;
    }
}

#[tokio::test]
async fn a_failing_before_handoff_hook_denies() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let (bm, tm) = (billing_model(), triage_model());
    let billing = billing(&trace, &bm);
    let failing = Hook::<event::BeforeHandoff>::sync("vault", |_| {
        Err::<HandoffDecision, _>("the vault is offline")
    });
    let triage = triage(&trace, &tm, Handoff::to(&billing), &store, failing);
    let result = triage.session("s").run("I want a refund").await;
    assert_eq!(&*result.agent.name, "triage");
    assert!(bm.requests().is_empty());
    let read = texts(&tm.requests()[1].messages).pop().unwrap();
    assert_eq!(
        read,
        "the handoff from `triage` to `billing` was denied: before_handoff hook `vault` returned an error: the vault is offline"
    );
}

/// What billing's model is sent on its first step under `history`, after two earlier turns.
async fn first_sight(history: HandoffHistory) -> Vec<String> {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let bm = billing_model();
    let tm = ScriptedModel::new([
        ScriptedStep::new().text("Hello."),
        ScriptedStep::new().tool_call("h1", "transfer_to_billing", "{}"),
    ]);
    let billing = billing(&trace, &bm);
    let allow = gate("triage", &trace, || HandoffDecision::Allow);
    let handoff = Handoff::to(&billing).history(history);
    let conversation = triage(&trace, &tm, handoff, &store, allow).session("s");
    assert_eq!(conversation.run("hi").await.text, "Hello.");
    let result = conversation.run("refund please").await;
    assert_eq!(&*result.agent.name, "billing");
    texts(&bm.requests()[0].messages)
}

#[tokio::test]
async fn the_handoff_history_filter_decides_what_the_target_sees() {
    let done = "Transferred to agent `billing`.";
    assert_eq!(
        first_sight(HandoffHistory::All).await,
        ["hi", "Hello.", "refund please", "", done]
    );
    assert_eq!(first_sight(HandoffHistory::Input).await, ["refund please"]);
    assert_eq!(
        first_sight(HandoffHistory::Last(3)).await,
        ["refund please", "", done]
    );
    // Without a user message among them, the latest one comes first: the target sees what
    // it is asked.
    assert_eq!(
        first_sight(HandoffHistory::Last(2)).await,
        ["refund please", "", done]
    );
    // A cut through a call and its result keeps neither half of the pair.
    assert_eq!(
        first_sight(HandoffHistory::Last(1)).await,
        ["refund please"]
    );
    assert_eq!(
        first_sight(HandoffHistory::Last(0)).await,
        ["refund please"]
    );
    let users_only = HandoffHistory::Custom(Arc::new(|messages: &[Message]| {
        messages
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .cloned()
            .collect()
    }));
    assert_eq!(first_sight(users_only).await, ["hi", "refund please"]);
}

#[tokio::test]
async fn only_the_first_transfer_call_of_a_step_is_taken() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let bm = billing_model();
    let tech_model = ScriptedModel::new([ScriptedStep::new().text("never")]);
    let tech = AgentBuilder::new("tech")
        .model(tech_model.clone())
        .build()
        .unwrap();
    let tm = ScriptedModel::new([ScriptedStep::new()
        .tool_call("h1", "transfer_to_billing", "{}")
        .tool_call("h2", "transfer_to_tech", "{}")]);
    let billing = billing(&trace, &bm);
    let triage = AgentBuilder::new("triage")
        .model(tm.clone())
        .store(store.clone())
        .handoff(&billing)
        .handoff(&tech)
        .hook(gate("triage", &trace, || HandoffDecision::Allow))
        .build()
        .unwrap();
    let result = triage.session("s").run("help").await;
    assert_eq!(&*result.agent.name, "billing");
    let results: Vec<_> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| (r.content.as_str(), r.outcome))
        .collect();
    assert_eq!(
        results,
        [
            (
                "Transferred to agent `billing`.",
                ToolOutcomeKind::HandedOff
            ),
            (
                "only one handoff per step: `transfer_to_tech` was not taken",
                ToolOutcomeKind::Blocked
            ),
        ]
    );
    assert_eq!(
        trace
            .take()
            .iter()
            .filter(|l| l.contains("before_handoff"))
            .count(),
        1,
        "the second transfer is refused without asking"
    );
    assert!(tech_model.requests().is_empty());
    assert_whole(&store.load("s").await.unwrap());
}

#[test]
fn transfer_tool_names_are_checked_when_the_agent_is_built() {
    let model = ScriptedModel::new([]);
    let billing = AgentBuilder::new("billing")
        .model(model.clone())
        .build()
        .unwrap();
    let clash = FnTool::new(
        "transfer_to_billing",
        "Mine.",
        json!({"type": "object"}),
        |_, _| async { Ok::<Value, ToolError>(Value::Null) },
    );
    let error: BuildError = AgentBuilder::new("triage")
        .model(model.clone())
        .dyn_tool(clash)
        .handoff(&billing)
        .handoff(Handoff::to(&billing).tool_name("bad name"))
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        [
            "handoff to `billing`: the transfer tool name `transfer_to_billing` is taken; name it with `Handoff::tool_name`",
            "handoff to `billing`: invalid transfer tool name `bad name`: use 1 to 64 of `[A-Za-z0-9_-]` (name it with `Handoff::tool_name`)",
        ]
    );
    // Named like the final-answer tool, the model would be offered two tools of one name.
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Ticket {
        id: u32,
    }
    let error: BuildError = AgentBuilder::new("triage")
        .model(model.clone())
        .output::<Ticket>()
        .handoff(Handoff::to(&billing).tool_name("final_result"))
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        [
            "the transfer tool name `final_result` is the final-answer tool's; name one of them with `Handoff::tool_name` or `output_tool`"
        ]
    );
    let named = AgentBuilder::new("triage")
        .model(model)
        .handoff(
            Handoff::to(&billing)
                .tool_name("ask_billing")
                .description("Billing questions."),
        )
        .build();
    assert!(named.is_ok());
}

/// The macro form of the multi-agent hooks: `#[hook(before_handoff)]` on an `#[agent]` impl.
struct Desk {
    trace: Trace,
}

#[agent_core::agent(instructions = "Route the customer.")]
impl Desk {
    /// Vetoes every handoff, naming the target.
    #[hook(before_handoff)]
    fn closed(&self, ctx: &agent_core::HandoffContext) -> HandoffDecision {
        self.trace
            .push(format!("macro before_handoff({}->{})", ctx.from, ctx.to));
        HandoffDecision::deny(format!("`{}` is closed", ctx.to))
    }
}

#[tokio::test]
async fn before_handoff_in_the_macro_form() {
    use agent_core::AgentSpec;
    let trace = Trace::new();
    let bm = billing_model();
    let billing = billing(&trace, &bm);
    let tm = triage_model();
    let desk = Desk {
        trace: trace.clone(),
    }
    .builder()
    .model(tm.clone())
    .handoff(&billing)
    .build()
    .unwrap();
    let result = desk.run("refund").await;
    assert_eq!(&*result.agent.name, "Desk");
    assert_eq!(
        trace.take(),
        lines(&["macro before_handoff(Desk->billing)"])
    );
    assert_eq!(
        texts(&tm.requests()[1].messages).pop().unwrap(),
        "`billing` is closed"
    );
}

/// Inheritance across a handoff: marked, triage's untyped tool hooks run on billing's calls
/// (before billing's own); by default (the `ALLOWED` trace above) they do not.
#[tokio::test]
async fn a_handoff_target_inherits_untyped_tool_hooks_only_when_marked() {
    let trace = Trace::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let (bm, tm) = (billing_model(), triage_model());
    let billing = billing(&trace, &bm);
    let gate_hook = gate("triage", &trace, || HandoffDecision::Allow);
    let handoff = Handoff::to(&billing).inherit_tool_hooks(true);
    let triage = triage(&trace, &tm, handoff, &store, gate_hook);
    let result = triage.session("s").run("I want a refund").await;
    assert_eq!(&*result.agent.name, "billing");
    let calls: Vec<String> = trace
        .take()
        .into_iter()
        .filter(|l| l.contains("tool_call") || l.contains("do_work ran"))
        .collect();
    assert_eq!(
        calls,
        lines(&[
            "triage:before_tool_call(do_work)",
            "billing:before_tool_call(do_work)",
            "do_work ran",
            "triage:after_tool_call(do_work)",
            "billing:after_tool_call(do_work)",
        ])
    );
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    number: String,
    total_cents: u64,
}

/// A step that calls a transfer beside a final answer that is accepted: the answer ends the
/// turn, so the transfer is not taken (no before_handoff, the target never runs), and its
/// result tells the model so instead of "Transferred".
#[tokio::test]
async fn a_transfer_beside_an_accepted_answer_is_not_taken_and_says_so() {
    let billing_model = ScriptedModel::new([ScriptedStep::new().text("billing here")]);
    let billing = AgentBuilder::new("billing")
        .model(billing_model.clone())
        .build()
        .unwrap();
    let trace = Trace::new();
    let t = trace.clone();
    let triage = AgentBuilder::new("triage")
        .model(ScriptedModel::new([ScriptedStep::new()
            .tool_call("c1", "transfer_to_billing", "{}")
            .tool_call(
                "c2",
                "final_result",
                r#"{"number":"INV-7","total_cents":1250}"#,
            )]))
        .output::<Invoice>()
        .handoff(&billing)
        .hook(Hook::<event::BeforeHandoff>::sync("trace", move |ctx| {
            t.push(format!("before_handoff({})", ctx.to));
            HandoffDecision::Allow
        }))
        .build()
        .unwrap();
    let result = triage.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.agent.path.as_ref(), "triage");
    assert_eq!(result.output::<Invoice>().unwrap().number, "INV-7");
    let read: Vec<(&str, bool)> = result.steps[0]
        .tool_results
        .iter()
        .map(|record| (record.content.as_str(), record.is_error))
        .collect();
    assert_eq!(
        read,
        [
            (
                "The transfer to agent `billing` was not taken: the final answer ended the turn.",
                true
            ),
            ("The final answer was accepted.", false),
        ]
    );
    assert_eq!(trace.take(), Vec::<String>::new(), "no before_handoff");
    assert!(billing_model.requests().is_empty(), "billing never ran");
}
