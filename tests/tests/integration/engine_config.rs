//! What reaches the model: agent defaults, TurnConfig (before_turn) and StepConfig
//! (before_step) overrides, and the history of a conversation across turns.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    AgentBuilder, CallSettings, FnTool, Hook, Message, ModelRequest, OutputSchema, ScriptedModel,
    ScriptedStep, StepConfig, StopReason, ToolChoice, ToolError, TurnConfig, TurnContext,
    TurnRequest, TurnStatus, event,
};
use serde_json::{Map, Value, json};
use tests::{Add, GetWeather, ReadFile, Recorded, Seen, Trace, lines, within};

fn options(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn tool_names(request: &ModelRequest) -> Vec<&str> {
    request.tools.iter().map(|t| t.name.as_str()).collect()
}

fn summary(messages: &[Message]) -> Vec<(&str, &str)> {
    messages.iter().map(|m| (m.role(), m.text())).collect()
}

fn agent_settings() -> CallSettings {
    CallSettings {
        temperature: Some(0.1),
        max_output_tokens: Some(100),
        top_p: None,
        stop_sequences: None,
        seed: Some(42),
    }
}

#[tokio::test]
async fn agent_defaults_reach_the_request() {
    let model = ScriptedModel::with_id("primary", [ScriptedStep::new().text("hi")]);
    let agent = AgentBuilder::new("defaults")
        .instructions("You are terse.")
        .model(model.clone())
        .tool(Add::default())
        .tool(GetWeather::default())
        .settings(agent_settings())
        .provider_options(options(json!({"agent_opt": 1})))
        .build()
        .unwrap();

    let result = agent.run("hello").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.model, "primary");
    assert_eq!(request.system.as_deref(), Some("You are terse."));
    assert_eq!(summary(&request.messages), [("user", "hello")]);
    assert_eq!(tool_names(request), ["add", "get_weather"]);
    assert_eq!(request.tool_choice, ToolChoice::Auto);
    assert_eq!(request.settings, agent_settings());
    assert!(!request.send_reasoning);
    assert_eq!(request.provider_options, options(json!({"agent_opt": 1})));
    assert_eq!(result.steps[0].model, "primary");
}

#[tokio::test]
async fn before_turn_sees_the_assembled_turn() {
    let seen = Seen::<TurnContext>::new();
    let model = ScriptedModel::with_id("primary", [ScriptedStep::new().text("hi")]);
    let agent = AgentBuilder::new("ctx")
        .instructions("You are terse.")
        .model(model)
        .tool(Add::default())
        .hook(seen.hook::<event::BeforeTurn>("seen"))
        .build()
        .unwrap();
    let request = TurnRequest::new("hello")
        .body(options(json!({"tenant": "acme"})))
        .continuation(true);

    agent.run(request).await;

    let seen = seen.take();
    assert_eq!(seen.len(), 1);
    let ctx = &seen[0];
    assert_eq!(ctx.system.as_deref(), Some("You are terse."));
    assert_eq!(summary(&ctx.messages), [("user", "hello")]);
    let tools: Vec<&str> = ctx.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["add"]);
    assert_eq!(ctx.model, "primary");
    assert!(ctx.continuation);
    assert_eq!(ctx.body, options(json!({"tenant": "acme"})));
}

/// A tool made at run time, offered for one turn.
fn lookup_user(trace: &Trace) -> FnTool {
    let trace = trace.clone();
    FnTool::new(
        "lookup_user",
        "Look up a user by name.",
        json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        move |args, _ctx| {
            let trace = trace.clone();
            async move {
                trace.push(format!("lookup_user({})", args["name"]));
                Ok::<_, ToolError>(json!({"id": 7}))
            }
        },
    )
}

#[tokio::test]
async fn turn_config_and_step_config_reach_the_requests() {
    let trace = Trace::new();
    // The agent's own model is never used: before_turn swaps it for `turn-model`, and
    // before_step uses `step-model` for step 1 only.
    let primary = ScriptedModel::with_id("primary", []);
    let turn_model = ScriptedModel::with_id(
        "turn-model",
        [
            ScriptedStep::new()
                .reasoning("thinking")
                .text("Working.")
                .tool_call("c1", "read_file", r#"{"path":"secret.txt"}"#)
                .tool_call("c2", "add", r#"{"a":2,"b":3}"#),
            ScriptedStep::new().text("done"),
        ],
    );
    let step_model = ScriptedModel::with_id(
        "step-model",
        [ScriptedStep::new().tool_call("c3", "lookup_user", r#"{"name":"ada"}"#)],
    );
    let (t, tm, sm) = (trace.clone(), turn_model.clone(), step_model.clone());
    let agent = AgentBuilder::new("configured")
        .instructions("Agent system.")
        .model(primary.clone())
        .max_steps(1)
        .tool(Add::traced(&trace))
        .tool(ReadFile::traced(&trace))
        .tool(GetWeather::traced(&trace))
        .settings(agent_settings())
        .provider_options(options(json!({"agent_opt": 1, "shared": "agent"})))
        .hook(Hook::<event::BeforeTurn>::sync("configure", move |_| {
            let mut cfg = TurnConfig::default();
            cfg.model = Some(Arc::new(tm.clone()));
            cfg.system = Some("Turn system.".to_owned());
            cfg.messages = Some(vec![Message::user("rewritten question")]);
            cfg.tools = vec![Arc::new(lookup_user(&t))];
            cfg.active_tools = Some(vec!["add".to_owned(), "lookup_user".to_owned()]);
            cfg.tool_choice = Some(ToolChoice::Required);
            cfg.max_steps = Some(3);
            cfg.send_reasoning = Some(true);
            cfg.settings = CallSettings {
                temperature: Some(0.7),
                max_output_tokens: Some(256),
                top_p: Some(0.9),
                stop_sequences: Some(vec!["STOP".to_owned()]),
                seed: None,
            };
            cfg.provider_options = Some(options(json!({"shared": "turn", "turn_opt": true})));
            cfg.stall_timeout = Some(Duration::from_millis(1500));
            cfg.output_schema = Some(OutputSchema::new("answer", json!({"type": "object"})));
            cfg
        }))
        .hook(Hook::<event::BeforeStep>::sync(
            "per_step",
            move |ctx| match ctx.step {
                1 => Some({
                    let mut cfg = StepConfig::default();
                    cfg.model = Some(Arc::new(sm.clone()));
                    cfg.system = Some("Step one system.".to_owned());
                    cfg.messages = None;
                    cfg.active_tools = Some(vec!["lookup_user".to_owned()]);
                    cfg.tool_choice = Some(ToolChoice::Tool("lookup_user".to_owned()));
                    cfg
                }),
                2 => Some({
                    let mut cfg = StepConfig::default();
                    cfg.messages = Some(vec![Message::user("only this")]);
                    cfg
                }),
                _ => None,
            },
        ))
        .record_tool_calls(&trace)
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let result = conversation.run("original question").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.stop_reason, Some(StopReason::Finished));
    assert_eq!(result.text, "done");
    assert!(primary.requests().is_empty(), "the agent's model is unused");
    let models: Vec<&str> = result.steps.iter().map(|s| s.model.as_str()).collect();
    assert_eq!(models, ["turn-model", "step-model", "turn-model"]);

    // The inactive tool is an error result the model reads; the active ones run.
    assert_eq!(
        trace.take(),
        lines(&[
            "before_tool_call(add c2)",
            "add(2,3)",
            "after_tool_call(add c2 executed)",
            "before_tool_call(lookup_user c3)",
            "lookup_user(\"ada\")",
            "after_tool_call(lookup_user c3 executed)",
        ])
    );
    let first: Vec<(&str, bool)> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| (r.content.as_str(), r.is_error))
        .collect();
    assert_eq!(
        first,
        [
            (
                "unknown tool `read_file`; available tools: add, lookup_user",
                true
            ),
            ("5", false),
        ]
    );

    let turn_settings = CallSettings {
        temperature: Some(0.7),
        max_output_tokens: Some(256),
        top_p: Some(0.9),
        stop_sequences: Some(vec!["STOP".to_owned()]),
        seed: Some(42),
    };
    let turn_options = options(json!({"agent_opt": 1, "shared": "turn", "turn_opt": true}));

    // Step 0: the turn's configuration.
    let turn_requests = turn_model.requests();
    assert_eq!(turn_requests.len(), 2);
    let step0 = &turn_requests[0];
    assert_eq!(step0.model, "turn-model");
    assert_eq!(step0.system.as_deref(), Some("Turn system."));
    assert_eq!(summary(&step0.messages), [("user", "rewritten question")]);
    assert_eq!(tool_names(step0), ["add", "lookup_user"]);
    assert_eq!(step0.tool_choice, ToolChoice::Required);
    assert!(step0.send_reasoning);
    assert_eq!(step0.settings, turn_settings);
    assert_eq!(step0.provider_options, turn_options);
    assert_eq!(step0.stall_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(
        step0.output_schema.as_ref().map(|o| o.name.as_str()),
        Some("answer")
    );

    // Step 1: before_step's overrides, for this step only.
    let step_requests = step_model.requests();
    assert_eq!(step_requests.len(), 1);
    let step1 = &step_requests[0];
    assert_eq!(step1.model, "step-model");
    assert_eq!(step1.system.as_deref(), Some("Step one system."));
    assert_eq!(tool_names(step1), ["lookup_user"]);
    assert_eq!(
        step1.tool_choice,
        ToolChoice::Tool("lookup_user".to_owned())
    );
    assert!(step1.send_reasoning);
    assert_eq!(step1.settings, turn_settings);
    assert_eq!(step1.provider_options, turn_options);
    assert_eq!(
        summary(&step1.messages),
        [
            ("user", "rewritten question"),
            ("assistant", "Working."),
            (
                "tool",
                "unknown tool `read_file`; available tools: add, lookup_user"
            ),
            ("tool", "5"),
        ]
    );
    assert!(matches!(
        &step1.messages[1],
        Message::Assistant { reasoning, tool_calls, .. }
            if reasoning == "thinking" && tool_calls.len() == 2
    ));

    // Step 2: back to the turn's configuration, with this step's own messages.
    let step2 = &turn_requests[1];
    assert_eq!(step2.system.as_deref(), Some("Turn system."));
    assert_eq!(tool_names(step2), ["add", "lookup_user"]);
    assert_eq!(step2.tool_choice, ToolChoice::Required);
    assert_eq!(step2.settings, turn_settings);
    assert_eq!(summary(&step2.messages), [("user", "only this")]);

    // Replacing what is sent changes no history: the user's own words and every reply are kept.
    let history = conversation.history().await.unwrap();
    assert_eq!(
        summary(&history),
        [
            ("user", "original question"),
            ("assistant", "Working."),
            (
                "tool",
                "unknown tool `read_file`; available tools: add, lookup_user"
            ),
            ("tool", "5"),
            ("assistant", ""),
            ("tool", r#"{"id":7}"#),
            ("assistant", "done"),
        ]
    );
}

#[tokio::test]
async fn a_before_step_active_tools_limit_also_rejects_calls_to_other_tools() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":1}"#),
        ScriptedStep::new().text("ok"),
    ]);
    let agent = AgentBuilder::new("limited")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .tool(GetWeather::traced(&trace))
        .hook(Hook::<event::BeforeStep>::sync("weather_only", |ctx| {
            (ctx.step == 0).then(|| {
                let mut cfg = StepConfig::default();
                cfg.active_tools = Some(vec!["get_weather".to_owned()]);
                cfg
            })
        }))
        .build()
        .unwrap();

    let result = agent.run("1+1").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert!(trace.take().is_empty(), "add did not run");
    assert_eq!(
        result.steps[0].tool_results[0].content,
        "unknown tool `add`; available tools: get_weather"
    );
    let requests = model.requests();
    assert_eq!(tool_names(&requests[0]), ["get_weather"]);
    assert_eq!(tool_names(&requests[1]), ["add", "get_weather"]);
}

/// A step whose tool choice names one of the agent's tools that the step does not offer is not
/// sent (the provider would refuse it): the turn fails saying so, before the model call. A name
/// that is none of the agent's tools (a provider's server tool, say) goes to the model as is.
#[tokio::test]
async fn a_tool_choice_naming_a_tool_the_step_does_not_offer_fails_before_the_call() {
    for (choice, refused) in [("add", true), ("web_search", false)] {
        let trace = Trace::new();
        let model = ScriptedModel::new([ScriptedStep::new().text("ok")]);
        let agent = AgentBuilder::new("limited")
            .model(model.clone())
            .tool(Add::traced(&trace))
            .tool(GetWeather::traced(&trace))
            .hook(Hook::<event::BeforeStep>::sync("weather_only", move |_| {
                let mut cfg = StepConfig::default();
                cfg.active_tools = Some(vec!["get_weather".to_owned()]);
                cfg.tool_choice = Some(ToolChoice::Tool(choice.to_owned()));
                Some(cfg)
            }))
            .record_turn(&trace)
            .build()
            .unwrap();

        let result = agent.run("1+1").await;

        if !refused {
            assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
            let requests = model.requests();
            assert_eq!(requests[0].tool_choice, ToolChoice::Tool(choice.to_owned()));
            continue;
        }
        assert_eq!(result.status, TurnStatus::Error, "{result:?}");
        let error = result.error.unwrap();
        assert_eq!(
            error.kind,
            agent_core::TurnErrorKind::Model(agent_core::ModelErrorKind::BadRequest)
        );
        assert_eq!(
            error.message,
            "the step's tool_choice names the tool `add`, which the step does not offer (it \
             offers: get_weather); choose one of its tools, or add `add` to its active_tools"
        );
        assert!(model.requests().is_empty());
        assert_eq!(
            trace.take(),
            lines(&[
                "before_run(1+1)",
                "before_turn",
                "before_step(0)",
                "classify_chat_error(turn)",
                "on_chat_error(turn)",
                "on_chat_response(error)",
            ])
        );
    }
}

/// A hook's step limit lowers the agent's; 0 (which the builder refuses) is taken as 1, as the
/// rustdoc says: a turn calls its model at least once.
/// The tool choice of each request of a turn forced to call a tool (`Required` for the turn,
/// `add` by name for step 1 only), the model calling `add` twice and then answering.
async fn forced_choices(reset: bool) -> Vec<ToolChoice> {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().tool_call("c2", "add", r#"{"a":5,"b":1}"#),
        ScriptedStep::new().text("6"),
    ]);
    let agent = AgentBuilder::new("forced")
        .model(model.clone())
        .tool(Add::traced(&Trace::new()))
        .reset_tool_choice(reset)
        .hook(Hook::<event::BeforeTurn>::sync("force", |_| {
            let mut cfg = TurnConfig::default();
            cfg.tool_choice = Some(ToolChoice::Required);
            cfg
        }))
        .hook(Hook::<event::BeforeStep>::sync("step one", |ctx| {
            (ctx.step == 1).then(|| {
                let mut cfg = StepConfig::default();
                cfg.tool_choice = Some(ToolChoice::Tool("add".to_owned()));
                cfg
            })
        }))
        .build()
        .unwrap();
    let result = agent.run("2+3, then add 1").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let requests = model.requests().into_iter();
    requests.map(|request| request.tool_choice).collect()
}

#[tokio::test]
async fn reset_tool_choice_lets_the_model_answer_after_its_forced_call() {
    let add = ToolChoice::Tool("add".to_owned());
    assert_eq!(
        forced_choices(true).await,
        [ToolChoice::Required, add.clone(), ToolChoice::Auto]
    );
    assert_eq!(
        forced_choices(false).await,
        [ToolChoice::Required, add, ToolChoice::Required],
        "by default the turn's choice holds for every step"
    );
}

#[tokio::test]
async fn turn_config_max_steps_lowers_the_agents_limit() {
    for limit in [1, 0] {
        let model = ScriptedModel::new([
            ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":1}"#),
            ScriptedStep::new().text("never asked"),
        ]);
        let agent = AgentBuilder::new("limited")
            .model(model.clone())
            .max_steps(10)
            .tool(Add::default())
            .hook(Hook::<event::BeforeTurn>::sync("one_step", move |_| {
                TurnConfig::new().max_steps(limit)
            }))
            .build()
            .unwrap();

        let result = agent.run("1+1").await;

        assert_eq!(result.status, TurnStatus::Completed, "{limit}: {result:?}");
        assert_eq!(result.stop_reason, Some(StopReason::MaxSteps), "{limit}");
        assert_eq!(model.requests().len(), 1, "{limit}");
    }
}

#[tokio::test]
async fn several_before_turn_configs_merge_in_order() {
    let model = ScriptedModel::new([ScriptedStep::new().text("ok")]);
    let agent = AgentBuilder::new("merged")
        .instructions("Agent system.")
        .model(model.clone())
        .tool(Add::default())
        .tool(GetWeather::default())
        .hook(Hook::<event::BeforeTurn>::sync("first", |_| {
            let mut cfg = TurnConfig::default();
            cfg.system = Some("first".to_owned());
            cfg.tool_choice = Some(ToolChoice::None);
            cfg.settings = CallSettings {
                temperature: Some(0.5),
                ..CallSettings::default()
            };
            cfg.provider_options = Some(options(json!({"a": 1, "b": 1})));
            cfg
        }))
        .hook(Hook::<event::BeforeTurn>::sync("second", |_| {
            let mut cfg = TurnConfig::default();
            cfg.system = Some("second".to_owned());
            cfg.active_tools = Some(vec!["get_weather".to_owned()]);
            cfg.settings = CallSettings {
                seed: Some(9),
                ..CallSettings::default()
            };
            cfg.provider_options = Some(options(json!({"b": 2})));
            cfg
        }))
        .hook(Hook::<event::BeforeTurn>::sync("nothing", |_| {}))
        .build()
        .unwrap();

    agent.run("hi").await;

    let request = &model.requests()[0];
    assert_eq!(request.system.as_deref(), Some("second"));
    assert_eq!(request.tool_choice, ToolChoice::None);
    assert_eq!(tool_names(request), ["get_weather"]);
    assert_eq!(request.settings.temperature, Some(0.5));
    assert_eq!(request.settings.seed, Some(9));
    assert_eq!(request.provider_options, options(json!({"a": 1, "b": 2})));
}

// ---- History across turns ----

#[tokio::test]
async fn a_conversation_keeps_its_history_across_turns() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":2,"b":3}"#),
        ScriptedStep::new().text("5"),
        ScriptedStep::new().text("10"),
    ]);
    let agent = AgentBuilder::new("memory")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let first = conversation.run("2+3?").await;
    let second = conversation.run("times two?").await;

    assert_eq!(first.text, "5");
    assert_eq!(second.text, "10");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        summary(&requests[2].messages),
        [
            ("user", "2+3?"),
            ("assistant", ""),
            ("tool", "5"),
            ("assistant", "5"),
            ("user", "times two?"),
        ]
    );
    assert_eq!(
        summary(&conversation.history().await.unwrap()),
        [
            ("user", "2+3?"),
            ("assistant", ""),
            ("tool", "5"),
            ("assistant", "5"),
            ("user", "times two?"),
            ("assistant", "10"),
        ]
    );
    // The turn results carry only what each turn added.
    assert_eq!(summary(&second.messages), [("assistant", "10")]);

    // A session id reopens the same history; a new conversation starts empty.
    let reopened = agent.session(conversation.session_id());
    assert_eq!(reopened.history().await.unwrap().len(), 6);
    assert!(agent.conversation().history().await.unwrap().is_empty());
}

#[tokio::test]
async fn two_turns_on_one_conversation_never_overlap() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("first ")
            .sleep(Duration::from_millis(50))
            .text("answer"),
        ScriptedStep::new().text("second answer"),
    ]);
    let agent = AgentBuilder::new("serial")
        .model(model.clone())
        .record_turn(&trace)
        .build()
        .unwrap();
    let conversation = agent.conversation();

    let (first, second) = within("two turns", async {
        tokio::join!(conversation.run("one"), conversation.run("two"))
    })
    .await;

    assert_eq!(first.text, "first answer");
    assert_eq!(second.text, "second answer");
    // The second turn starts only after the first has ended (its lock is released just
    // before on_chat_response).
    assert_eq!(
        trace.take(),
        lines(&[
            "before_run(one)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:first )",
            "on_chunk(text:answer)",
            "on_llm_end(0)",
            "on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
            "before_run(two)",
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:second answer)",
            "on_llm_end(0)",
            "on_step_finish(0)",
            "after_run(completed)",
            "on_chat_response(completed)",
        ])
    );
    // The second turn saw the first one's messages.
    assert_eq!(
        summary(&model.requests()[1].messages),
        [
            ("user", "one"),
            ("assistant", "first answer"),
            ("user", "two"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_on_different_threads_never_overlap_either() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("a")
            .sleep(Duration::from_millis(20))
            .text("b"),
        ScriptedStep::new()
            .text("a")
            .sleep(Duration::from_millis(20))
            .text("b"),
    ]);
    let agent = AgentBuilder::new("serial")
        .model(model)
        .record_turn(&trace)
        .build()
        .unwrap();
    let conversation = agent.conversation();
    let handles: Vec<_> = ["x", "y"]
        .into_iter()
        .map(|input| {
            let conversation = conversation.clone();
            tokio::spawn(async move { conversation.run(input).await })
        })
        .collect();
    within("two spawned turns", async {
        for handle in handles {
            assert_eq!(handle.await.unwrap().status, TurnStatus::Completed);
        }
    })
    .await;

    // Whichever turn went first, its events between before_run and after_run are contiguous.
    let entries: Vec<String> = trace
        .take()
        .into_iter()
        .filter(|e| !e.starts_with("on_chat_response"))
        .collect();
    let turn = |input: &str| {
        lines(&[
            &format!("before_run({input})"),
            "before_turn",
            "before_step(0)",
            "on_llm_start(0)",
            "on_chunk(text:a)",
            "on_chunk(text:b)",
            "on_llm_end(0)",
            "on_step_finish(0)",
            "after_run(completed)",
        ])
    };
    let x_first = [turn("x"), turn("y")].concat();
    let y_first = [turn("y"), turn("x")].concat();
    assert!(entries == x_first || entries == y_first, "{entries:#?}");
}

#[tokio::test]
async fn two_handles_on_one_session_share_its_turn_lock() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("first ")
            .sleep(Duration::from_millis(50))
            .text("answer"),
        ScriptedStep::new().text("second answer"),
    ]);
    let agent = AgentBuilder::new("serial")
        .model(model.clone())
        .record_turn(&trace)
        .build()
        .unwrap();
    // Two requests resuming the same session, as a server handling them would.
    let one = agent.session("shared-session");
    let two = agent.session("shared-session");

    let (first, second) = within("two turns", async {
        tokio::join!(one.run("one"), two.run("two"))
    })
    .await;

    assert_eq!(first.text, "first answer");
    assert_eq!(second.text, "second answer");
    let starts: Vec<String> = trace
        .take()
        .into_iter()
        .filter(|e| e.starts_with("before_run") || e.starts_with("after_run"))
        .collect();
    assert_eq!(
        starts,
        lines(&[
            "before_run(one)",
            "after_run(completed)",
            "before_run(two)",
            "after_run(completed)",
        ])
    );
    assert_eq!(
        summary(&model.requests()[1].messages),
        [
            ("user", "one"),
            ("assistant", "first answer"),
            ("user", "two"),
        ]
    );
}

/// A call to an unknown tool is an error result naming the tools the model may call, or saying
/// there is none (not an empty list).
#[tokio::test]
async fn an_unknown_tool_without_any_tools_says_there_is_none() {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "delete", "{}"),
        ScriptedStep::new().text("Sorry."),
    ]);
    let agent = AgentBuilder::new("bare").model(model).build().unwrap();
    let result = agent.run("delete it").await;
    let read = &result.steps[0].tool_results[0];
    assert!(read.is_error);
    assert_eq!(
        read.content.as_str(),
        "unknown tool `delete`: no tool is available now"
    );
}
