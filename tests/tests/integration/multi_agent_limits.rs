//! Stops and budgets across a run (issue 9 item 6): `max_turns` counts model calls of every
//! agent the run reaches, budgets sum tokens (or their cost) across subagents, on_stop fires
//! first with the reason, the agent and the run's usage, and may supply the final output;
//! without one the turn fails with a typed error naming the limit. `max_steps` keeps Think's
//! quiet completion.

use std::sync::{Arc, Mutex};

use agent_core::{
    Agent, AgentBuilder, Budget, Handoff, Hook, PriceTable, ScriptedModel, ScriptedStep,
    StopDecision, StopReason, Subagent, TurnErrorKind, TurnRequest, TurnStatus, Usage, event,
};

/// What on_stop saw: reason, agent, total tokens.
type Stops = Arc<Mutex<Vec<(StopReason, String, u64)>>>;

/// triage (1 call, hands off) -> billing (asks the ledger subagent, 1 call, then answers),
/// every call using 10 input and 5 output tokens. `answer` makes billing's on_stop supply an
/// output.
fn run_agents(stops: &Stops, answer: bool, ledger_model: &str) -> Agent {
    let ledger = AgentBuilder::new("ledger")
        .model(ScriptedModel::with_id(
            ledger_model,
            [ScriptedStep::new().text("Balance 0.").usage(10, 5)],
        ))
        .build()
        .unwrap();
    let seen = stops.clone();
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::with_id(
            "small",
            [
                ScriptedStep::new()
                    .tool_call("l1", "ledger", r#"{"input":"balance?"}"#)
                    .usage(10, 5),
                ScriptedStep::new().text("Settled.").usage(10, 5),
            ],
        ))
        .subagent(Subagent::of(&ledger))
        .hook(Hook::<event::OnStop>::sync("stop", move |ctx| {
            seen.lock().unwrap().push((
                ctx.reason,
                ctx.agent.name.to_string(),
                ctx.usage.total_tokens(),
            ));
            if answer {
                StopDecision::Output(format!("Stopped at {}.", ctx.reason))
            } else {
                StopDecision::Default
            }
        }))
        .build()
        .unwrap();
    AgentBuilder::new("triage")
        .model(ScriptedModel::with_id(
            "small",
            [ScriptedStep::new()
                .tool_call("h1", "transfer_to_billing", "{}")
                .usage(10, 5)],
        ))
        .handoff(Handoff::to(&billing))
        .build()
        .unwrap()
}

#[tokio::test]
async fn max_turns_counts_every_agent_of_the_run() {
    let stops = Stops::default();
    // triage, billing and the ledger subagent make three calls: billing's second is a fourth.
    let result = run_agents(&stops, false, "small")
        .run(TurnRequest::new("balance?").max_turns(3))
        .await;
    assert_eq!(result.status, TurnStatus::Error);
    let error = result.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::MaxTurns));
    assert_eq!(error.message, "the run reached its limit of 3 model calls");
    assert_eq!(
        *stops.lock().unwrap(),
        [(StopReason::MaxTurns, "billing".to_owned(), 45)],
        "on_stop fires first, on the agent running, with the run's usage"
    );

    let stops = Stops::default();
    let result = run_agents(&stops, true, "small")
        .run(TurnRequest::new("balance?").max_turns(3))
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(result.stop_reason, Some(StopReason::MaxTurns));
    assert_eq!(result.text, "Stopped at max_turns.");

    let result = run_agents(&Stops::default(), false, "small")
        .run(TurnRequest::new("balance?").max_turns(4))
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "four calls fit");
}

#[tokio::test]
async fn a_token_budget_sums_the_subagents_usage() {
    let stops = Stops::default();
    // 15 tokens a call: after triage, billing and the ledger, 45 > 40.
    let result = run_agents(&stops, false, "small")
        .run(TurnRequest::new("balance?").budget(Budget::tokens(40)))
        .await;
    let error = result.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::MaxBudget));
    assert_eq!(
        error.message,
        "the run spent 45 tokens, past its budget of 40"
    );
    assert_eq!(
        *stops.lock().unwrap(),
        [(StopReason::MaxBudget, "billing".to_owned(), 45)]
    );

    let stops = Stops::default();
    let result = run_agents(&stops, true, "small")
        .run(TurnRequest::new("balance?").budget(Budget::tokens(40)))
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::MaxBudget));
    assert_eq!(result.text, "Stopped at max_budget.");
    assert_eq!(
        *stops.lock().unwrap(),
        [(StopReason::MaxBudget, "billing".to_owned(), 45)]
    );

    let result = run_agents(&Stops::default(), false, "small")
        .run(TurnRequest::new("balance?").budget(Budget::tokens(60)))
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
}

#[tokio::test]
async fn a_cost_budget_prices_each_call_by_its_model() {
    // $1 per million input tokens, $2 per million output: 10 in + 5 out = $0.00002 a call.
    let prices = PriceTable::new()
        .price("small", 1.0, 2.0)
        .price("big", 100.0, 200.0);
    let stops = Stops::default();
    let result = run_agents(&stops, false, "big")
        .run(TurnRequest::new("balance?").budget(Budget::cost(0.001, prices.clone())))
        .await;
    let error = result.error.unwrap();
    assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::MaxBudget));
    assert_eq!(
        error.message, "the run spent $0.0020, past its budget of $0.0010",
        "the subagent's big model ($0.002) spends it"
    );

    let result = run_agents(&Stops::default(), false, "small")
        .run(TurnRequest::new("balance?").budget(Budget::cost(0.001, prices)))
        .await;
    assert_eq!(result.status, TurnStatus::Completed);

    let result = run_agents(&Stops::default(), false, "unknown")
        .run(TurnRequest::new("balance?").budget(Budget::cost(
            1.0,
            PriceTable::new().price("small", 1.0, 2.0),
        )))
        .await;
    assert_eq!(
        result.error.unwrap().message,
        "model `unknown` has no price in the run's price table: its cost cannot be counted against the budget"
    );
}

/// A cost that cannot be compared with the budget (a budget or a price that is not a number,
/// as a price table read from a config file may hold) ends the run at its first model call,
/// saying so, instead of never stopping it: a comparison with NaN is always false.
#[tokio::test]
async fn a_budget_or_a_price_that_is_not_a_number_ends_the_run_at_its_first_call() {
    let runs = [
        (
            Budget::cost(f64::NAN, PriceTable::new().price("small", 1.0, 2.0)),
            "the run spent $0.0000, past its budget of $NaN",
        ),
        (
            Budget::cost(1.0, PriceTable::new().price("small", f64::NAN, 2.0)),
            "the run spent $NaN, past its budget of $1.0000",
        ),
    ];
    for (budget, message) in runs {
        let stops = Stops::default();
        let result = run_agents(&stops, false, "small")
            .run(TurnRequest::new("balance?").budget(budget))
            .await;
        assert_eq!(result.status, TurnStatus::Error);
        let error = result.error.unwrap();
        assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::MaxBudget));
        assert_eq!(error.message, message);
        assert_eq!(
            *stops.lock().unwrap(),
            [],
            "triage's first call ends the run, before billing"
        );
        assert_eq!(&*result.agent.name, "triage");
    }
}

#[tokio::test]
async fn max_steps_still_completes_quietly_by_default() {
    let stops = Stops::default();
    let seen = stops.clone();
    let agent = AgentBuilder::new("looper")
        .model(ScriptedModel::new([ScriptedStep::new().tool_call(
            "t1",
            "transfer_to_nowhere",
            "{}",
        )]))
        .max_steps(1)
        .hook(Hook::<event::OnStop>::sync("stop", move |ctx| {
            seen.lock().unwrap().push((
                ctx.reason,
                ctx.agent.name.to_string(),
                ctx.usage.total_tokens(),
            ));
        }))
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(result.stop_reason, Some(StopReason::MaxSteps));
    assert_eq!(
        *stops.lock().unwrap(),
        [(StopReason::MaxSteps, "looper".to_owned(), 0)]
    );
}

/// The budget is checked after every model call, not only before the next: a reply that ends
/// past it runs none of its tool calls (each is answered with an error result, so the stored
/// history stays whole), and a final reply past it still ends the run through on_stop.
#[tokio::test]
async fn a_reply_past_the_budget_runs_no_tool_and_ends_the_run_through_on_stop() {
    use agent_core::{MemoryStore, Message, SessionStore};
    use tests::{Add, Trace};
    let run = |steps: Vec<ScriptedStep>| async move {
        let trace = Trace::new();
        let seen = trace.clone();
        let store = Arc::new(MemoryStore::new());
        let agent = AgentBuilder::new("b")
            .model(ScriptedModel::new(steps))
            .tool(Add::traced(&trace))
            .store(store.clone())
            .hook(Hook::<event::OnStop>::sync("stop", move |ctx| {
                seen.push(format!("on_stop({})", ctx.reason.as_str()));
            }))
            .build()
            .unwrap();
        // Held while the rows are read: `MemoryStore` lets go of a session no one holds.
        let session = agent.session("s");
        let result = session
            .run(TurnRequest::new("go").budget(Budget::tokens(10)))
            .await;
        let stored = store.load("s").await.unwrap();
        drop(session);
        (result, trace.take(), stored)
    };

    let (result, trace, _) = run(vec![ScriptedStep::new().text("answer").usage(100, 100)]).await;
    assert_eq!(trace, ["on_stop(max_budget)"]);
    let error = result.error.expect("a limit error");
    assert_eq!(error.kind, TurnErrorKind::Limit(StopReason::MaxBudget));
    assert_eq!(
        error.message,
        "the run spent 200 tokens, past its budget of 10"
    );

    let (result, trace, stored) = run(vec![
        ScriptedStep::new()
            .tool_call("c1", "add", r#"{"a":1,"b":2}"#)
            .usage(100, 100),
        ScriptedStep::new().text("never"),
    ])
    .await;
    assert_eq!(trace, ["on_stop(max_budget)"], "the tool never ran");
    assert_eq!(result.status, TurnStatus::Error);
    let kinds: Vec<(&str, bool)> = stored
        .iter()
        .map(|row| match &row.message {
            Message::User { .. } => ("user", false),
            Message::Assistant { tool_calls, .. } => ("assistant", !tool_calls.is_empty()),
            Message::Tool { is_error, .. } => ("tool", *is_error),
            Message::System { .. } => ("system", false),
        })
        .collect();
    assert_eq!(
        kinds,
        [("user", false), ("assistant", true), ("tool", true)],
        "the call is answered with an error result"
    );
}

/// A parent whose first step asks the `researcher` subagent (which asks the `checker`
/// subagent) and the `checker` at once, then answers: parent 10+5 and 20+7 tokens, researcher
/// 100+40 and 3+1, each checker turn 1000+400.
fn nested_subagents() -> Agent {
    let checker = AgentBuilder::new("checker")
        .model(ScriptedModel::new(
            (0..2).map(|_| ScriptedStep::new().text("checked").usage(1000, 400)),
        ))
        .build()
        .unwrap();
    let researcher = AgentBuilder::new("researcher")
        .model(ScriptedModel::new([
            ScriptedStep::new()
                .tool_call("r1", "checker", r#"{"input":"check"}"#)
                .usage(100, 40),
            ScriptedStep::new().text("found").usage(3, 1),
        ]))
        .subagent(Subagent::of(&checker))
        .build()
        .unwrap();
    AgentBuilder::new("parent")
        .model(ScriptedModel::new([
            ScriptedStep::new()
                .tool_call("p1", "researcher", r#"{"input":"find"}"#)
                .tool_call("p2", "checker", r#"{"input":"check"}"#)
                .usage(10, 5),
            ScriptedStep::new().text("done").usage(20, 7),
        ]))
        .subagent(Subagent::of(&researcher))
        .subagent(Subagent::of(&checker))
        .build()
        .unwrap()
}

fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    }
}

#[tokio::test]
async fn total_usage_adds_every_subagent_turn_and_usage_keeps_the_turns_own() {
    let result = nested_subagents().run("go").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.usage, usage(30, 12), "the parent's own two calls");
    // 30 + (103 + 1000) + 1000 in, 12 + (41 + 400) + 400 out.
    assert_eq!(result.total_usage, usage(2133, 853));
}

#[tokio::test]
async fn a_token_budget_counts_what_total_usage_counts() {
    // 2133 + 853 = 2986 tokens in all: one fewer is past the budget at the parent's last call.
    let result = nested_subagents()
        .run(TurnRequest::new("go").budget(Budget::tokens(2985)))
        .await;
    assert_eq!(
        result.error.unwrap().message,
        "the run spent 2986 tokens, past its budget of 2985"
    );
    assert_eq!(result.total_usage, usage(2133, 853));

    let result = nested_subagents()
        .run(TurnRequest::new("go").budget(Budget::tokens(2986)))
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
}

#[tokio::test]
async fn on_stop_reads_the_subagents_usage_without_a_budget() {
    let researcher = AgentBuilder::new("researcher")
        .model(ScriptedModel::new([ScriptedStep::new()
            .text("found")
            .usage(100, 40)]))
        .build()
        .unwrap();
    let stops = Stops::default();
    let seen = stops.clone();
    let agent = AgentBuilder::new("parent")
        .model(ScriptedModel::new([ScriptedStep::new()
            .tool_call("p1", "researcher", r#"{"input":"find"}"#)
            .usage(10, 5)]))
        .subagent(Subagent::of(&researcher))
        .max_steps(1)
        .hook(Hook::<event::OnStop>::sync("stop", move |ctx| {
            seen.lock().unwrap().push((
                ctx.reason,
                ctx.agent.name.to_string(),
                ctx.usage.total_tokens(),
            ));
        }))
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.stop_reason, Some(StopReason::MaxSteps));
    assert_eq!(
        *stops.lock().unwrap(),
        [(StopReason::MaxSteps, "parent".to_owned(), 155)],
        "the parent's 15 tokens and the researcher's 140"
    );
    assert_eq!(result.total_usage, usage(110, 45));
}

/// A handoff target whose step limit is as large as it gets (`usize::MAX`, "no limit") takes
/// the turn and answers: the turn's new limit, its steps left after the step it took over at,
/// saturates instead of overflowing (which panicked, or, wrapped, left it no step at all).
#[tokio::test]
async fn a_handoff_target_without_a_step_limit_takes_the_turn() {
    let billing = AgentBuilder::new("billing")
        .model(ScriptedModel::new([ScriptedStep::new().text("Refunded.")]))
        .max_steps(usize::MAX)
        .build()
        .unwrap();
    let triage = tests::triage_handing_to(&billing).build().unwrap();
    let result = triage.run("I was charged twice.").await;
    assert_eq!(result.status, TurnStatus::Completed, "{:?}", result.error);
    assert_eq!(&*result.agent.name, "billing");
    assert_eq!(result.text, "Refunded.");
    assert_eq!(result.stop_reason, Some(StopReason::Finished));
}
