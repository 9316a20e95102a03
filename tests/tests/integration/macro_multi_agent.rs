//! The macro forms of the multi-agent features (issue 9 item 9): `#[agent(context = T)]` with
//! hooks and tools taking `&T`, and `#[agent(handoffs(...))]` built with `builder_with`.

use agent_core::{
    AgentBuilder, Handoff, HandoffContext, HandoffDecision, Message, ScriptedModel, ScriptedStep,
    TurnErrorKind, TurnRequest, TurnStatus, agent,
};
use tests::{Trace, lines};

/// The application's context: who is asking.
struct User {
    name: &'static str,
    admin: bool,
}

struct Triage {
    trace: Trace,
}

#[agent(name = "triage", context = User, handoffs(billing), instructions = "Route the user.")]
impl Triage {
    /// The name of the user asking.
    #[tool]
    fn whoami(&self, context: &User) -> String {
        self.trace.push(format!("whoami: {}", context.name));
        context.name.to_owned()
    }

    /// Only admins reach billing.
    #[hook(before_handoff)]
    fn admins_only(&self, ctx: &HandoffContext, user: &User) -> HandoffDecision {
        self.trace.push(format!(
            "before_handoff({}->{}): {} admin {}",
            ctx.from, ctx.to, user.name, user.admin
        ));
        if user.admin {
            HandoffDecision::Allow
        } else {
            HandoffDecision::deny(format!("only admins reach `{}`", ctx.to))
        }
    }
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.text().to_owned()).collect()
}

/// Asks who the user is, transfers to billing, and (when the transfer is denied) answers.
fn triage_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().tool_call("w1", "whoami", "{}"),
        ScriptedStep::new().tool_call("h1", "transfer_to_billing", "{}"),
        ScriptedStep::new().text("Billing is for admins."),
    ])
}

fn built(trace: &Trace, tm: &ScriptedModel, bm: &ScriptedModel) -> agent_core::Agent {
    let billing = AgentBuilder::new("billing")
        .description("Answers questions about invoices.")
        .model(bm.clone())
        .build()
        .unwrap();
    Triage {
        trace: trace.clone(),
    }
    .builder_with(triage_targets::Targets {
        billing: Handoff::to(&billing),
    })
    .model(tm.clone())
    .build()
    .unwrap()
}

#[tokio::test]
async fn an_admin_is_handed_to_billing_and_the_tool_reads_the_context() {
    let trace = Trace::new();
    let (tm, bm) = (
        triage_model(),
        ScriptedModel::new([ScriptedStep::new().text("Billing here.")]),
    );
    let triage = built(&trace, &tm, &bm);
    let request = TurnRequest::new("refund").context(User {
        name: "ann",
        admin: true,
    });
    let result = triage.run(request).await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "billing");
    assert_eq!(result.text, "Billing here.");
    assert_eq!(
        trace.take(),
        lines(&[
            "whoami: ann",
            "before_handoff(triage->billing): ann admin true",
        ])
    );
    assert_eq!(result.steps[0].tool_results[0].content, "ann");
    assert_eq!(
        tm.requests().len(),
        2,
        "triage's model: whoami, then transfer"
    );
    assert_eq!(bm.requests().len(), 1, "billing runs the rest of the turn");
}

#[tokio::test]
async fn a_user_who_is_not_an_admin_is_denied_by_the_hook() {
    let trace = Trace::new();
    let (tm, bm) = (
        triage_model(),
        ScriptedModel::new([ScriptedStep::new().text("never")]),
    );
    let triage = built(&trace, &tm, &bm);
    let request = TurnRequest::new("refund").context(User {
        name: "bob",
        admin: false,
    });
    let result = triage.run(request).await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "triage");
    assert_eq!(result.text, "Billing is for admins.");
    assert_eq!(
        trace.take(),
        lines(&[
            "whoami: bob",
            "before_handoff(triage->billing): bob admin false",
        ])
    );
    let requests = tm.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        texts(&requests[2].messages).pop().unwrap(),
        "only admins reach `billing`",
        "the model reads the hook's reason as the transfer's result"
    );
    assert!(bm.requests().is_empty(), "billing never runs");
}

#[tokio::test]
async fn without_the_context_the_turn_fails_before_any_hook_or_tool() {
    let trace = Trace::new();
    let (tm, bm) = (
        triage_model(),
        ScriptedModel::new([ScriptedStep::new().text("never")]),
    );
    let triage = built(&trace, &tm, &bm);
    let result = triage.run("refund").await;

    assert_eq!(result.status, TurnStatus::Error);
    let error = result.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Context);
    assert_eq!(
        error.message,
        format!(
            "agent `triage` needs a run context of type `{}`: give one with `TurnRequest::context`",
            std::any::type_name::<User>()
        )
    );
    assert!(trace.take().is_empty(), "neither the tool nor the hook ran");
    assert!(tm.requests().is_empty(), "no model call");
    assert!(bm.requests().is_empty());
}

/// The context is checked when a turn starts, by the agent asked: a turn reaching `triage`
/// through a handoff from an agent without a context runs triage's tool and hook without one.
/// The tool's missing context is an error result the model reads; the hook's is the hook's
/// error, which for before_handoff denies.
#[tokio::test]
async fn reached_without_the_context_the_tool_and_the_hook_fail_as_they_should() {
    let trace = Trace::new();
    let (tm, bm) = (
        triage_model(),
        ScriptedModel::new([ScriptedStep::new().text("never")]),
    );
    let triage = built(&trace, &tm, &bm);
    let fm = ScriptedModel::new([ScriptedStep::new().tool_call("f1", "transfer_to_triage", "{}")]);
    let front = AgentBuilder::new("front")
        .model(fm.clone())
        .handoff(Handoff::to(&triage))
        .build()
        .unwrap();
    let result = front.run("refund").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(&*result.agent.name, "triage");
    assert_eq!(result.text, "Billing is for admins.");
    assert!(trace.take().is_empty(), "neither body ran");
    let missing = format!(
        "the turn has no run context (asked for a `{}`): give one with `TurnRequest::context`, \
         and read it from code the turn runs (a hook, a tool, not a task it spawned)",
        std::any::type_name::<User>()
    );
    let requests = tm.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        texts(&requests[1].messages).pop().unwrap(),
        missing,
        "the tool's error is the result the model reads"
    );
    assert_eq!(
        texts(&requests[2].messages).pop().unwrap(),
        format!(
            "the handoff from `triage` to `billing` was denied: before_handoff hook `admins_only` returned an error: {missing}"
        ),
        "the hook's error denies the handoff"
    );
    assert!(bm.requests().is_empty());
}
