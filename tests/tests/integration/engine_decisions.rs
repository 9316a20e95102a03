//! before_tool_call decisions (docs/design.md §6): Allow, Modify, Block, Substitute, what
//! after_tool_call sees for each, and the merge rule of several hooks.

use agent_core::{
    AgentBuilder, FailurePolicy, Hook, Matcher, Message, ScriptedModel, ScriptedStep,
    ToolCallDecision, TurnResult, TurnStatus, event,
};
use serde_json::{Value, json};
use tests::{Add, AddArgs, GetWeather, GetWeatherArgs, Trace, Weather, lines};

type Before = event::BeforeToolCall<AddArgs>;
type After = event::AfterToolCall<AddArgs, i64>;

/// A model that calls `add` with a=2, b=3 once, then answers.
fn add_once() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("done"),
    ])
}

/// An after_tool_call hook recording what it sees as
/// `after(KIND success=BOOL model=A,B effective=A,B output=OUT)`.
fn after_probe(trace: &Trace) -> Hook<After> {
    let trace = trace.clone();
    Hook::<After>::sync("after_probe", move |ctx| {
        let output = match ctx.output() {
            Some(value) => value.to_string(),
            None => "none".to_owned(),
        };
        trace.push(format!(
            "after({} success={} model={},{} effective={},{} output={output})",
            ctx.outcome.kind(),
            ctx.success(),
            ctx.model_input().a,
            ctx.model_input().b,
            ctx.effective_input.a,
            ctx.effective_input.b,
        ));
    })
}

/// What the model read for call `c1` in its second request: (content, is_error).
fn tool_result_sent(model: &ScriptedModel) -> (String, bool) {
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        2,
        "the model is called again after the tool"
    );
    requests[1]
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } if call_id == "c1" => Some((content.to_string(), *is_error)),
            _ => None,
        })
        .expect("the second request holds the result of c1")
}

fn assert_completed(result: &TurnResult) {
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "done");
}

#[tokio::test]
async fn allow_and_unit_run_the_tool_with_the_models_input() {
    let trace = Trace::new();
    let model = add_once();
    let (t1, t2) = (trace.clone(), trace.clone());
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::sync("allow", move |ctx| {
                t1.push(format!("allow({},{})", ctx.input.a, ctx.input.b));
                ToolCallDecision::Allow
            }),
        )
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::sync("unit", move |ctx| {
                t2.push(format!("unit({},{})", ctx.input.a, ctx.input.b));
            }),
        )
        .after_tool_call(Matcher::tool("add"), after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            "allow(2,3)",
            "unit(2,3)",
            "add(2,3)",
            "after(executed success=true model=2,3 effective=2,3 output=5)",
        ])
    );
    assert_eq!(tool_result_sent(&model), ("5".to_owned(), false));
}

#[tokio::test]
async fn modify_runs_the_tool_with_the_new_input_and_after_sees_both_inputs() {
    let trace = Trace::new();
    let model = add_once();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::sync("times_ten", |ctx| {
                ToolCallDecision::Modify(AddArgs {
                    a: ctx.input.a * 10,
                    b: ctx.input.b,
                })
            }),
        )
        .after_tool_call(Matcher::tool("add"), after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            "add(20,3)",
            "after(executed success=true model=2,3 effective=20,3 output=23)",
        ])
    );
    assert_eq!(tool_result_sent(&model), ("23".to_owned(), false));
}

#[tokio::test]
async fn block_with_a_reason_gives_the_model_that_reason() {
    let trace = Trace::new();
    let model = add_once();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::sync("deny", |_| {
                ToolCallDecision::block("adding is not allowed today")
            }),
        )
        .after_tool_call(Matcher::tool("add"), after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    // The tool did not run; the after hook still fires, with a successful Blocked outcome.
    assert_eq!(
        trace.take(),
        lines(&["after(blocked success=true model=2,3 effective=2,3 output=none)"])
    );
    assert_eq!(
        tool_result_sent(&model),
        ("adding is not allowed today".to_owned(), false)
    );
    assert_eq!(
        result.steps[0].tool_results[0].outcome,
        agent_core::ToolOutcomeKind::Blocked
    );
}

#[tokio::test]
async fn block_without_a_reason_gives_a_default_message_naming_the_tool() {
    let trace = Trace::new();
    let model = add_once();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::sync("deny", |_| ToolCallDecision::Block(None)),
        )
        .after_tool_call(Matcher::tool("add"), after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&["after(blocked success=true model=2,3 effective=2,3 output=none)"])
    );
    assert_eq!(
        tool_result_sent(&model),
        ("tool `add` was blocked by a hook".to_owned(), false)
    );
}

#[tokio::test]
async fn substitute_skips_the_tool_and_gives_the_model_the_substituted_output() {
    let trace = Trace::new();
    let model = add_once();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::sync("cached", |_| ToolCallDecision::Substitute(99)),
        )
        .after_tool_call(Matcher::tool("add"), after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&["after(substituted success=true model=2,3 effective=2,3 output=99)"])
    );
    assert_eq!(tool_result_sent(&model), ("99".to_owned(), false));
    assert_eq!(
        result.steps[0].tool_results[0].outcome,
        agent_core::ToolOutcomeKind::Substituted
    );
}

#[tokio::test]
async fn an_untyped_substitute_reaches_the_model_as_json() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "get_weather", r#"{"city":"Oslo"}"#),
        ScriptedStep::new().text("done"),
    ]);
    let t = trace.clone();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(GetWeather::traced(&trace))
        .before_tool_call(
            Matcher::tool("get_weather"),
            Hook::<event::BeforeToolCall<Value>>::sync("offline", |ctx| {
                ToolCallDecision::Substitute(json!({"city": ctx.input["city"], "celsius": -3}))
            }),
        )
        .after_tool_call(
            Matcher::tool("get_weather"),
            Hook::<event::AfterToolCall<GetWeatherArgs, Weather>>::sync("typed_view", move |ctx| {
                // The substituted JSON is not a `Weather`, so the typed view has no output;
                // the JSON view has it.
                t.push(format!(
                    "after({} typed={:?} json={})",
                    ctx.outcome.kind(),
                    ctx.output(),
                    ctx.output_json().unwrap_or_default()
                ));
            }),
        )
        .build()
        .unwrap();

    let result = agent.run("weather?").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[r#"after(substituted typed=None json={"celsius":-3,"city":"Oslo"})"#])
    );
    assert_eq!(
        tool_result_sent(&model),
        (r#"{"celsius":-3,"city":"Oslo"}"#.to_owned(), false)
    );
}

/// A typed before hook recording `NAME(A,B)` and returning `decision(input)`.
fn step(
    trace: &Trace,
    name: &'static str,
    priority: i32,
    decision: fn(&AddArgs) -> ToolCallDecision<AddArgs>,
) -> Hook<Before> {
    let trace = trace.clone();
    Hook::<Before>::sync(name, move |ctx| {
        trace.push(format!("{name}({},{})", ctx.input.a, ctx.input.b));
        decision(&ctx.input)
    })
    .priority(priority)
}

fn allow(_: &AddArgs) -> ToolCallDecision<AddArgs> {
    ToolCallDecision::Allow
}

#[tokio::test]
async fn hooks_run_by_priority_then_registration_and_modify_feeds_the_next_hook() {
    let trace = Trace::new();
    let model = add_once();
    let all = Matcher::tool("add");
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(all.clone(), step(&trace, "late", 10, allow))
        .before_tool_call(
            all.clone(),
            step(&trace, "plus_one", 0, |input| {
                ToolCallDecision::Modify(AddArgs {
                    a: input.a + 1,
                    b: input.b,
                })
            }),
        )
        .before_tool_call(all.clone(), step(&trace, "early", -5, allow))
        .before_tool_call(
            all.clone(),
            step(&trace, "times_ten", 0, |input| {
                ToolCallDecision::Modify(AddArgs {
                    a: input.a * 10,
                    b: input.b,
                })
            }),
        )
        .after_tool_call(all, after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            "early(2,3)",
            "plus_one(2,3)",
            "times_ten(3,3)",
            "late(30,3)",
            "add(30,3)",
            "after(executed success=true model=2,3 effective=30,3 output=33)",
        ])
    );
    assert_eq!(tool_result_sent(&model), ("33".to_owned(), false));
}

#[tokio::test]
async fn block_stops_the_chain() {
    let trace = Trace::new();
    let model = add_once();
    let add = Matcher::tool("add");
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(add.clone(), step(&trace, "first", 0, allow))
        .before_tool_call(
            add.clone(),
            step(&trace, "deny", 0, |_| ToolCallDecision::block("no")),
        )
        .before_tool_call(add.clone(), step(&trace, "never", 0, allow))
        .after_tool_call(add, after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            "first(2,3)",
            "deny(2,3)",
            "after(blocked success=true model=2,3 effective=2,3 output=none)",
        ])
    );
    assert_eq!(tool_result_sent(&model), ("no".to_owned(), false));
}

#[tokio::test]
async fn substitute_stops_the_chain() {
    let trace = Trace::new();
    let model = add_once();
    let add = Matcher::tool("add");
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            add.clone(),
            step(&trace, "plus_one", 0, |input| {
                ToolCallDecision::Modify(AddArgs {
                    a: input.a + 1,
                    b: input.b,
                })
            }),
        )
        .before_tool_call(
            add.clone(),
            step(&trace, "cached", 0, |_| ToolCallDecision::Substitute(7)),
        )
        .before_tool_call(add.clone(), step(&trace, "never", 0, allow))
        .after_tool_call(add, after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            "plus_one(2,3)",
            "cached(3,3)",
            "after(substituted success=true model=2,3 effective=3,3 output=7)",
        ])
    );
    assert_eq!(tool_result_sent(&model), ("7".to_owned(), false));
}

#[tokio::test]
async fn an_untyped_modify_that_fits_the_args_runs_the_tool() {
    let trace = Trace::new();
    let model = add_once();
    let t = trace.clone();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<event::BeforeToolCall<Value>>::sync("json_edit", |ctx| {
                let mut input = ctx.input.clone();
                input["a"] = json!(40);
                ToolCallDecision::Modify(input)
            }),
        )
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::sync("typed_next", move |ctx| {
                t.push(format!("typed_next({},{})", ctx.input.a, ctx.input.b));
            }),
        )
        .after_tool_call(Matcher::tool("add"), after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            "typed_next(40,3)",
            "add(40,3)",
            "after(executed success=true model=2,3 effective=40,3 output=43)",
        ])
    );
    assert_eq!(tool_result_sent(&model), ("43".to_owned(), false));
}

/// An untyped after_tool_call hook recording what it sees as `NAME(model=JSON effective=JSON)`.
fn json_after(trace: &Trace, name: &'static str) -> Hook<event::AfterToolCall<Value>> {
    let trace = trace.clone();
    Hook::<event::AfterToolCall<Value>>::sync(name, move |ctx| {
        let (model, effective) = (ctx.model_input(), &ctx.effective_input);
        trace.push(format!("{name}(model={model} effective={effective})"));
    })
}

/// The untyped hooks of one call hand its JSON from one to the next (serialized once): each
/// still sees the input the previous hook left, before and after a modification.
#[tokio::test]
async fn untyped_hooks_each_see_the_input_the_previous_one_left() {
    let trace = Trace::new();
    let model = add_once();
    let json_before = |name: &'static str, edit: Option<i64>| {
        let trace = trace.clone();
        Hook::<event::BeforeToolCall<Value>>::sync(name, move |ctx| {
            trace.push(format!("{name}({})", ctx.input));
            match edit {
                Some(a) => {
                    let mut input = ctx.input.clone();
                    input["a"] = json!(a);
                    ToolCallDecision::Modify(input)
                }
                None => ToolCallDecision::Allow,
            }
        })
    };
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(Matcher::tool("add"), json_before("first", None))
        .before_tool_call(Matcher::tool("add"), json_before("second", Some(40)))
        .before_tool_call(Matcher::tool("add"), json_before("third", None))
        .after_tool_call(Matcher::tool("add"), json_after(&trace, "after_one"))
        .after_tool_call(Matcher::tool("add"), json_after(&trace, "after_two"))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            r#"first({"a":2,"b":3})"#,
            r#"second({"a":2,"b":3})"#,
            r#"third({"a":40,"b":3})"#,
            "add(40,3)",
            r#"after_one(model={"a":2,"b":3} effective={"a":40,"b":3})"#,
            r#"after_two(model={"a":2,"b":3} effective={"a":40,"b":3})"#,
        ])
    );
    assert_eq!(tool_result_sent(&model), ("43".to_owned(), false));
}

/// Unmodified, an untyped after_tool_call hook sees the model's input as both inputs, each
/// hook of the pair the same.
#[tokio::test]
async fn untyped_after_hooks_see_the_models_input_twice_when_unmodified() {
    let trace = Trace::new();
    let model = add_once();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .after_tool_call(Matcher::tool("add"), json_after(&trace, "after_one"))
        .after_tool_call(Matcher::tool("add"), json_after(&trace, "after_two"))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            "add(2,3)",
            r#"after_one(model={"a":2,"b":3} effective={"a":2,"b":3})"#,
            r#"after_two(model={"a":2,"b":3} effective={"a":2,"b":3})"#,
        ])
    );
}

#[tokio::test]
async fn an_untyped_modify_that_does_not_fit_fails_closed() {
    // Whatever the hook's policy: a fail-open hook that meant to redact the input must not let
    // the model's through.
    for policy in [FailurePolicy::FailClosed, FailurePolicy::FailOpen] {
        let trace = Trace::new();
        let model = add_once();
        let agent = AgentBuilder::new("decide")
            .model(model.clone())
            .tool(Add::traced(&trace))
            .before_tool_call(
                Matcher::tool("add"),
                Hook::<event::BeforeToolCall<Value>>::sync("retype", |_| {
                    ToolCallDecision::Modify(json!({"a": "two", "b": 3}))
                })
                .on_error(policy),
            )
            .before_tool_call(Matcher::tool("add"), step(&trace, "never", 0, allow))
            .after_tool_call(Matcher::tool("add"), after_probe(&trace))
            .build()
            .unwrap();

        let result = agent.run("2+3").await;

        assert_completed(&result);
        // Nothing ran after the failed gate; the after hook sees the model's input unchanged.
        assert_eq!(
            trace.take(),
            lines(&["after(failed success=false model=2,3 effective=2,3 output=none)"]),
            "{policy:?}"
        );
        assert_eq!(
            tool_result_sent(&model),
            (
                "tool `add` did not run: hook `retype` modified its input to arguments it does \
                 not take: invalid arguments for tool `add` at `a`: invalid type: string \"two\", \
                 expected i64"
                    .to_owned(),
                true
            )
        );
        assert_eq!(
            result.steps[0].tool_results[0].outcome,
            agent_core::ToolOutcomeKind::Failed
        );
    }
}

#[tokio::test]
async fn an_async_hook_decides_like_a_sync_one() {
    let trace = Trace::new();
    let model = add_once();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::from_async("remote_policy", |ctx| {
                Box::pin(async move {
                    tokio::task::yield_now().await;
                    ToolCallDecision::Modify(AddArgs {
                        a: ctx.input.a,
                        b: ctx.input.b * 100,
                    })
                })
            }),
        )
        .after_tool_call(Matcher::tool("add"), after_probe(&trace))
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&[
            "add(2,300)",
            "after(executed success=true model=2,3 effective=2,300 output=302)",
        ])
    );
    assert_eq!(tool_result_sent(&model), ("302".to_owned(), false));
}

/// An `async fn` gate: reads the typed input across an await.
async fn triple_b(ctx: &agent_core::ToolCallContext<AddArgs>) -> ToolCallDecision<AddArgs> {
    tokio::task::yield_now().await;
    ToolCallDecision::Modify(AddArgs {
        a: ctx.input.a,
        b: ctx.input.b * 3,
    })
}

#[tokio::test]
async fn async_fns_and_async_closures_are_hooks_without_boxing() {
    let trace = Trace::new();
    let model = add_once();
    let agent = AgentBuilder::new("decide")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::new_async("triple", triple_b),
        )
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<Before>::new_async(
                "plus_one",
                async |ctx: &agent_core::ToolCallContext<AddArgs>| {
                    tokio::task::yield_now().await;
                    ToolCallDecision::Modify(AddArgs {
                        a: ctx.input.a + 1,
                        b: ctx.input.b,
                    })
                },
            ),
        )
        // Shared state is passed in, not captured.
        .after_tool_call(
            Matcher::tool("add"),
            Hook::<After>::new_async_with(
                "record",
                trace.clone(),
                async |trace: &Trace, ctx: &agent_core::ToolCallResultContext<AddArgs, i64>| {
                    tokio::task::yield_now().await;
                    trace.push(format!("record(output={:?})", ctx.output()));
                },
            ),
        )
        .build()
        .unwrap();

    let result = agent.run("2+3").await;

    assert_completed(&result);
    assert_eq!(
        trace.take(),
        lines(&["add(3,9)", "record(output=Some(12))"])
    );
    assert_eq!(tool_result_sent(&model), ("12".to_owned(), false));
}
