//! Handoff cycles (issue 9): agents built together with `Team::build` name each other with
//! `Handoff::named`, so triage hands off to billing and billing back to triage. Full ordered
//! traces of such a turn in `run` and `stream`, the step and run limits that stop agents
//! handing a turn back and forth, the build errors of names never linked, and the team's
//! memory: freed with the last handle on any of its agents. The macro form links the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::{
    AgentBuilder, FnTool, Handoff, HandoffContext, Hook, Matcher, Message, RunAgent, RunHooks,
    ScriptedModel, ScriptedStep, StopReason, Team, ToolError, TurnErrorKind, TurnEvent,
    TurnRequest, TurnStatus, agent, event,
};
use serde_json::{Value, json};
use tests::{Trace, lines};

/// Step, model, tool, handoff and stop hooks of an agent, each pushing `NAME:event(...)`.
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
    let builder = builder.hook(Hook::<event::BeforeHandoff>::sync("trace", move |ctx| {
        t.push(format!("{name}:before_handoff({}->{})", ctx.from, ctx.to));
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::OnStepFinish>::sync("trace", move |ctx| {
        t.push(format!("{name}:on_step_finish({})", ctx.step));
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::OnStop>::sync("trace", move |ctx| {
        t.push(format!("{name}:on_stop({})", ctx.reason));
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
fn framed(builder: AgentBuilder, trace: &Trace) -> AgentBuilder {
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::BeforeRun>::sync("trace", move |ctx| {
        t.push(format!("triage:before_run({})", ctx.input));
    }));
    let t = trace.clone();
    let builder = builder.hook(Hook::<event::AfterRun>::sync("trace", move |result| {
        t.push(format!("triage:after_run({})", result.agent.name));
    }));
    let t = trace.clone();
    builder.hook(Hook::<event::OnChatResponse>::sync("trace", move |ctx| {
        t.push(format!("triage:on_chat_response({})", ctx.status));
    }))
}

/// Run hooks pushing `run:start(path)`, `run:end(path)` and `run:handoff(from->to)`.
struct RunTrace(Trace);

impl RunHooks for RunTrace {
    fn on_agent_start(&self, agent: &RunAgent) {
        self.0.push(format!("run:start({})", agent.path));
    }

    fn on_agent_end(&self, agent: &RunAgent, _output: &str) {
        self.0.push(format!("run:end({})", agent.path));
    }

    fn on_handoff(&self, from: &RunAgent, to: &str) {
        self.0.push(format!("run:handoff({}->{to})", from.name));
    }
}

fn refund(trace: &Trace) -> FnTool {
    let t = trace.clone();
    FnTool::new(
        "refund",
        "Issues a refund.",
        json!({"type": "object"}),
        move |_, _| {
            t.push("refund ran");
            async { Ok::<Value, ToolError>(json!("done")) }
        },
    )
}

/// triage hands off to billing, which refunds and hands back to triage, which answers.
fn round_trip(trace: &Trace) -> (Team, ScriptedModel, ScriptedModel) {
    let triage_model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Passing you on.")
            .tool_call("h1", "transfer_to_billing", "{}"),
        ScriptedStep::new().text("Anything else?"),
    ]);
    let billing_model = ScriptedModel::new([
        ScriptedStep::new().tool_call("r1", "refund", "{}"),
        ScriptedStep::new()
            .text("Refunded.")
            .tool_call("h2", "transfer_to_triage", "{}"),
    ]);
    let triage = AgentBuilder::new("triage")
        .description("Routes customers.")
        .instructions("You are triage.")
        .model(triage_model.clone())
        .handoff(Handoff::named("billing"));
    let billing = AgentBuilder::new("billing")
        .description("Handles invoices and refunds.")
        .instructions("You are billing.")
        .model(billing_model.clone())
        .dyn_tool(refund(trace))
        .handoff(Handoff::named("triage"));
    let team = Team::build([
        framed(traced(triage, "triage", trace), trace),
        traced(billing, "billing", trace),
    ])
    .unwrap();
    (team, triage_model, billing_model)
}

const ROUND_TRIP: &[&str] = &[
    "triage:before_run(refund please)",
    "run:start(triage)",
    "triage:before_step(0)",
    "triage:on_llm_start(0)",
    "triage:before_handoff(triage->billing)",
    "triage:on_step_finish(0)",
    "run:end(triage)",
    "run:handoff(triage->billing)",
    "run:start(triage > billing)",
    "billing:before_step(1)",
    "billing:on_llm_start(1)",
    "billing:before_tool_call(refund)",
    "refund ran",
    "billing:after_tool_call(refund)",
    "billing:on_step_finish(1)",
    "billing:before_step(2)",
    "billing:on_llm_start(2)",
    "billing:before_handoff(billing->triage)",
    "billing:on_step_finish(2)",
    "run:end(triage > billing)",
    "run:handoff(billing->triage)",
    "run:start(triage > billing > triage)",
    "triage:before_step(3)",
    "triage:on_llm_start(3)",
    "triage:on_step_finish(3)",
    "run:end(triage > billing > triage)",
    "triage:after_run(triage)",
    "triage:on_chat_response(completed)",
];

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.text().to_owned()).collect()
}

/// What each model was offered and sent on the way there and back.
fn check_round_trip_models(triage: &ScriptedModel, billing: &ScriptedModel) {
    let asked = triage.requests();
    assert_eq!(asked.len(), 2, "triage's model: before and after billing");
    let offered: Vec<_> = asked[0]
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.description.as_str()))
        .collect();
    assert_eq!(
        offered,
        [(
            "transfer_to_billing",
            "Hand the conversation to agent `billing`: Handles invoices and refunds."
        )]
    );
    assert_eq!(asked[1].system.as_deref(), Some("You are triage."));
    assert_eq!(
        texts(&asked[1].messages),
        [
            "refund please",
            "Passing you on.",
            "Transferred to agent `billing`.",
            "",
            "done",
            "Refunded.",
            "Transferred to agent `triage`.",
        ]
    );
    let sent = billing.requests();
    assert_eq!(sent.len(), 2);
    let offered: Vec<_> = sent[0]
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.description.as_str()))
        .collect();
    assert_eq!(
        offered,
        [
            ("refund", "Issues a refund."),
            (
                "transfer_to_triage",
                "Hand the conversation to agent `triage`: Routes customers."
            ),
        ]
    );
}

#[tokio::test]
async fn a_turn_goes_from_triage_to_billing_and_back() {
    let trace = Trace::new();
    let (team, triage_model, billing_model) = round_trip(&trace);
    let triage = team.agent("triage").unwrap();

    let result = triage
        .run(TurnRequest::new("refund please").run_hooks(RunTrace(trace.clone())))
        .await;

    assert_eq!(trace.take(), lines(ROUND_TRIP));
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "triage", "triage ran the last step");
    assert_eq!(result.text, "Anything else?");
    check_round_trip_models(&triage_model, &billing_model);
}

#[tokio::test]
async fn a_turn_goes_from_triage_to_billing_and_back_through_the_stream_api() {
    let trace = Trace::new();
    let (team, triage_model, billing_model) = round_trip(&trace);
    let triage = team.agent("triage").unwrap();

    let mut stream = triage
        .conversation()
        .stream(TurnRequest::new("refund please").run_hooks(RunTrace(trace.clone())));
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

    assert_eq!(trace.take(), lines(ROUND_TRIP));
    assert_eq!(
        seen,
        [
            "step 0",
            "handoff triage->billing",
            "step 1",
            "step 2",
            "handoff billing->triage",
            "step 3",
        ]
    );
    let result = result.expect("a Finished event");
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "triage");
    assert_eq!(result.text, "Anything else?");
    check_round_trip_models(&triage_model, &billing_model);
}

/// Two agents that hand every step to each other, with `max_steps` steps each.
fn ping_pong(trace: &Trace, max_steps: usize) -> Team {
    let passing = |id: &str, to: &str| {
        ScriptedModel::new((0..10).map(|n| {
            ScriptedStep::new().tool_call(format!("{id}{n}"), format!("transfer_to_{to}"), "{}")
        }))
    };
    let ping = AgentBuilder::new("ping")
        .model(passing("a", "pong"))
        .max_steps(max_steps)
        .handoff(Handoff::named("pong"));
    let pong = AgentBuilder::new("pong")
        .model(passing("b", "ping"))
        .max_steps(max_steps)
        .handoff(Handoff::named("ping"));
    Team::build([traced(ping, "ping", trace), traced(pong, "pong", trace)]).unwrap()
}

#[tokio::test]
async fn agents_handing_a_turn_back_and_forth_stop_at_their_step_limits() {
    let trace = Trace::new();
    let team = ping_pong(&trace, 2);

    let result = team.agent("ping").unwrap().run("serve").await;

    // Each agent's two steps are all it runs in the turn: pong hands back to ping, which has
    // none left, so the turn stops there.
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::MaxSteps));
    assert_eq!(&*result.agent.name, "ping");
    assert_eq!(result.steps.len(), 4);
    let stops: Vec<_> = trace
        .take()
        .into_iter()
        .filter(|line| line.contains("before_step") || line.contains("on_stop"))
        .collect();
    assert_eq!(
        stops,
        lines(&[
            "ping:before_step(0)",
            "pong:before_step(1)",
            "ping:before_step(2)",
            "pong:before_step(3)",
            "ping:on_stop(max_steps)",
        ])
    );
}

#[tokio::test]
async fn agents_handing_a_turn_back_and_forth_stop_at_the_runs_max_turns() {
    let trace = Trace::new();
    let team = ping_pong(&trace, 10);

    let result = team
        .agent("ping")
        .unwrap()
        .run(TurnRequest::new("serve").max_turns(5))
        .await;

    assert_eq!(result.status, TurnStatus::Error, "{result:?}");
    let error = result.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::MaxTurns));
    assert_eq!(error.message, "the run reached its limit of 5 model calls");
    assert_eq!(result.steps.len(), 5);
    assert_eq!(
        &*result.agent.name, "pong",
        "ping's fifth call handed pong the turn"
    );
    let stops: Vec<_> = trace
        .take()
        .into_iter()
        .filter(|line| line.contains("on_stop"))
        .collect();
    assert_eq!(stops, ["pong:on_stop(max_turns)"]);
}

#[test]
fn a_named_handoff_without_its_teammate_does_not_build() {
    let alone = AgentBuilder::new("triage")
        .model(ScriptedModel::new([]))
        .handoff(Handoff::named("billing"))
        .build()
        .unwrap_err();
    assert_eq!(
        alone.problems,
        [
            "handoff to `billing` names its target: build this agent and `billing` together with `Team::build`"
        ]
    );

    let misspelt = Team::build([
        AgentBuilder::new("triage")
            .model(ScriptedModel::new([]))
            .handoff(Handoff::named("biling")),
        AgentBuilder::new("billing")
            .model(ScriptedModel::new([]))
            .handoff(Handoff::named("triage")),
    ])
    .unwrap_err();
    assert_eq!(
        misspelt.problems,
        [
            "agent `triage`: handoff to `biling`: no agent of the team is named `biling` (the team: `triage`, `billing`)"
        ]
    );

    let twice = Team::build([
        AgentBuilder::new("billing").model(ScriptedModel::new([])),
        AgentBuilder::new("billing").model(ScriptedModel::new([])),
    ])
    .unwrap_err();
    assert_eq!(
        twice.to_string(),
        "the agent cannot be built: two agents of the team are named `billing`: give each agent its own name"
    );
}

/// Counts its drops: held by an agent's hook, it is dropped when the agent is freed.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// An agent named `name` that hands off to `to` in its first step, then answers, and holds a
/// [`DropCount`].
fn counted(name: &str, to: &str, drops: &Arc<AtomicUsize>) -> AgentBuilder {
    let held = DropCount(drops.clone());
    AgentBuilder::new(name)
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("h", format!("transfer_to_{to}"), "{}"),
            ScriptedStep::new().text(format!("{name} here.")),
        ]))
        .handoff(Handoff::named(to))
        .hook(Hook::<event::BeforeStep>::sync("held", move |_| {
            let _ = &held;
        }))
}

#[tokio::test]
async fn a_team_is_freed_with_the_last_handle_on_any_of_its_agents() {
    let drops = Arc::new(AtomicUsize::new(0));
    let team = Team::build([
        counted("triage", "billing", &drops),
        counted("billing", "triage", &drops),
    ])
    .unwrap();
    let triage = team.agent("triage").unwrap().clone();
    drop(team);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "triage's handle holds billing"
    );

    let result = triage.run("refund").await;
    let handoffs: Vec<_> = result
        .steps
        .iter()
        .flat_map(|step| &step.tool_results)
        .map(|record| record.content.as_str())
        .collect();
    assert_eq!(
        handoffs,
        [
            "Transferred to agent `billing`.",
            "Transferred to agent `triage`."
        ],
        "billing is alive and takes its step"
    );
    assert_eq!(result.text, "triage here.");

    let writer = AgentBuilder::new("writer")
        .model(ScriptedModel::new([]))
        .subagent(&triage)
        .build()
        .unwrap();
    drop(triage);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "an agent asking triage as a subagent holds its team"
    );
    drop(writer);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "both agents are freed with the last holder"
    );
}

struct Front {
    trace: Trace,
}

#[agent(name = "front", handoffs(back))]
impl Front {
    #[hook(before_handoff)]
    fn leaving(&self, ctx: &HandoffContext) {
        self.trace
            .push(format!("front:before_handoff({}->{})", ctx.from, ctx.to));
    }
}

struct Back {
    trace: Trace,
}

#[agent(name = "back", handoffs(front))]
impl Back {
    #[hook(before_handoff)]
    fn leaving(&self, ctx: &HandoffContext) {
        self.trace
            .push(format!("back:before_handoff({}->{})", ctx.from, ctx.to));
    }
}

#[tokio::test]
async fn macro_agents_name_each_other_in_their_targets_and_build_as_a_team() {
    let trace = Trace::new();
    let front = Front {
        trace: trace.clone(),
    }
    .builder_with(front_targets::Targets {
        back: Handoff::named("back"),
    })
    .model(ScriptedModel::new([
        ScriptedStep::new().tool_call("h1", "transfer_to_back", "{}"),
        ScriptedStep::new().text("Front again."),
    ]));
    let back = Back {
        trace: trace.clone(),
    }
    .builder_with(back_targets::Targets {
        front: Handoff::named("front"),
    })
    .model(ScriptedModel::new([ScriptedStep::new().tool_call(
        "h2",
        "transfer_to_front",
        "{}",
    )]));
    let team = Team::build([front, back]).unwrap();

    let result = team.agent("front").unwrap().run("hello").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "front");
    assert_eq!(result.text, "Front again.");
    assert_eq!(
        trace.take(),
        lines(&[
            "front:before_handoff(front->back)",
            "back:before_handoff(back->front)",
        ])
    );
}
