//! The typed run context (issue 9 item 1): a value of the application's type given per turn,
//! read typed from every hook and tool of every agent the turn reaches; an agent that declares
//! its context type refuses a turn without it; asking for another type is a clear error.

use std::sync::Arc;

use agent_core::{
    AgentBuilder, FnTool, Handoff, Hook, ScriptedModel, ScriptedStep, Subagent, ToolError,
    TurnErrorKind, TurnRequest, TurnStatus, event, run_context,
};
use serde_json::{Value, json};
use tests::{Trace, lines};

/// The application's context.
struct User {
    id: u64,
    admin: bool,
}

#[tokio::test]
async fn the_context_reaches_a_tool_two_agents_deep_and_every_hook() {
    let trace = Trace::new();
    let t = trace.clone();
    let balance = FnTool::new(
        "balance",
        "The user's balance.",
        json!({"type": "object"}),
        move |_, _| {
            let t = t.clone();
            async move {
                let user = run_context::<User>().map_err(|e| ToolError::new(e.to_string()))?;
                t.push(format!("ledger tool: user {}", user.id));
                Ok::<Value, ToolError>(json!(format!("user {} owes nothing", user.id)))
            }
        },
    );
    let ledger = AgentBuilder::new("ledger")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("b1", "balance", "{}"),
            ScriptedStep::new().text("Nothing owed."),
        ]))
        .dyn_tool(balance)
        .context_type::<User>()
        .build()
        .unwrap();
    let t = trace.clone();
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("l1", "ledger", r#"{"input":"balance?"}"#),
            ScriptedStep::new().text("All settled."),
        ]))
        .subagent(Subagent::of(&ledger))
        .hook(Hook::<event::OnStepFinish>::sync("who", move |ctx| {
            let user = run_context::<User>().expect("billing's hooks read the context");
            t.push(format!("billing step {}: admin {}", ctx.step, user.admin));
        }))
        .build()
        .unwrap();
    let t = trace.clone();
    let triage = AgentBuilder::new("triage")
        .model(ScriptedModel::new([ScriptedStep::new().tool_call(
            "h1",
            "transfer_to_billing",
            "{}",
        )]))
        .handoff(Handoff::to(&billing))
        .context_type::<User>()
        .hook(Hook::<event::BeforeRun>::sync("who", move |_| {
            let user = run_context::<User>().expect("triage's hooks read the context");
            t.push(format!("triage before_run: user {}", user.id));
        }))
        .build()
        .unwrap();

    let request = TurnRequest::new("balance?").context(User {
        id: 42,
        admin: false,
    });
    let result = triage.run(request).await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "All settled.");
    assert_eq!(
        trace.take(),
        lines(&[
            "triage before_run: user 42",
            "ledger tool: user 42",
            "billing step 1: admin false",
            "billing step 2: admin false",
        ])
    );
    assert!(
        run_context::<User>().is_err(),
        "outside a turn there is no context"
    );
}

#[tokio::test]
async fn an_agent_that_declares_its_context_refuses_a_turn_without_it() {
    let model = ScriptedModel::new([ScriptedStep::new().text("never")]);
    let responses = Trace::new();
    let r = responses.clone();
    let agent = AgentBuilder::new("strict")
        .model(model.clone())
        .context_type::<User>()
        .hook(Hook::<event::BeforeRun>::sync("never", move |_| {
            r.push("before_run")
        }))
        .build()
        .unwrap();

    let missing = agent.run("hi").await;
    assert_eq!(missing.status, TurnStatus::Error);
    let error = missing.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Context);
    assert_eq!(
        error.message,
        format!(
            "agent `strict` needs a run context of type `{}`: give one with `TurnRequest::context`",
            std::any::type_name::<User>()
        )
    );

    let wrong = agent.run(TurnRequest::new("hi").context(7_u32)).await;
    let error = wrong.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Context);
    assert!(
        error.message.ends_with("and the turn carries a `u32`"),
        "{}",
        error.message
    );
    assert!(responses.take().is_empty(), "no hook runs");
    assert!(model.requests().is_empty(), "no model call");
}

#[tokio::test]
async fn asking_for_another_type_names_both() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let s = seen.clone();
    let agent = AgentBuilder::new("loose")
        .model(ScriptedModel::new([ScriptedStep::new().text("ok")]))
        .hook(Hook::<event::BeforeRun>::sync("ask", move |_| {
            *s.lock().unwrap() = Some(run_context::<User>().err().unwrap().to_string());
        }))
        .build()
        .unwrap();
    agent.run(TurnRequest::new("hi").context("a string")).await;
    assert_eq!(
        seen.lock().unwrap().take().unwrap(),
        format!(
            "the turn's run context is a `&str`, not the `{}` asked for",
            std::any::type_name::<User>()
        )
    );
}

/// Every hook and tool can tell which agent it runs for and where in the run it is.
#[tokio::test]
async fn hooks_and_tools_read_the_agent_path_and_the_run_id() {
    use agent_core::current_agent;
    let trace = Trace::new();
    let line = |agent: agent_core::RunAgent| {
        format!(
            "{} same_run={} own_turn={}",
            agent.path,
            agent.run_id == agent.request_id,
            agent.name
        )
    };
    let t = trace.clone();
    let where_am_i = FnTool::new(
        "where",
        "Where am I?",
        json!({"type": "object"}),
        move |_, _| {
            t.push(format!("tool: {}", line(current_agent().unwrap())));
            async { Ok::<Value, ToolError>(json!("here")) }
        },
    );
    let ledger = AgentBuilder::new("ledger")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("w1", "where", "{}"),
            ScriptedStep::new().text("Here."),
        ]))
        .dyn_tool(where_am_i)
        .build()
        .unwrap();
    let t = trace.clone();
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("l1", "ledger", r#"{"input":"?"}"#),
            ScriptedStep::new().text("Done."),
        ]))
        .subagent(Subagent::of(&ledger))
        .hook(Hook::<event::BeforeStep>::sync("where", move |_| {
            t.push(format!("billing hook: {}", line(current_agent().unwrap())));
        }))
        .build()
        .unwrap();
    let t = trace.clone();
    let triage = AgentBuilder::new("triage")
        .model(ScriptedModel::new([ScriptedStep::new().tool_call(
            "h1",
            "transfer_to_billing",
            "{}",
        )]))
        .handoff(Handoff::to(&billing))
        .hook(Hook::<event::BeforeRun>::sync("where", move |_| {
            t.push(format!("triage hook: {}", line(current_agent().unwrap())));
        }))
        .build()
        .unwrap();
    let result = triage.run("where?").await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(
        trace.take(),
        lines(&[
            "triage hook: triage same_run=true own_turn=triage",
            "billing hook: triage > billing same_run=true own_turn=billing",
            "tool: triage > billing > ledger same_run=false own_turn=ledger",
            "billing hook: triage > billing same_run=true own_turn=billing",
        ])
    );
    assert!(current_agent().is_none(), "outside a turn");
}
