//! Extension hooks (issue 10 item 3): subscribers receive JSON snapshots with exactly the
//! fields of Think's table, after the agent's own hooks and in the order they were added; a
//! failing or slow one never aborts the turn; only beforeTurn's answer merges back (scalar
//! TurnConfig fields, the last subscriber winning).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    AgentBuilder, Extension, ExtensionEvent, FnTool, Hook, ScriptedModel, ScriptedStep, ToolError,
    TurnStatus, event,
};
use serde_json::{Value, json};
use tests::{Trace, lines};

type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// An extension recording every snapshot (`tag` first) and answering `answer` to beforeTurn.
fn recorder(tag: &'static str, seen: &Seen, trace: &Trace, answer: Value) -> Extension {
    let (seen, trace) = (seen.clone(), trace.clone());
    Extension::new(tag, move |event, snapshot| {
        trace.push(format!("{tag}:{}", event.as_str()));
        seen.lock()
            .unwrap()
            .push((format!("{tag}:{}", event.as_str()), snapshot));
        let answer = if event == ExtensionEvent::BeforeTurn {
            answer.clone()
        } else {
            Value::Null
        };
        async move { Ok(answer) }
    })
    .subscribe([
        ExtensionEvent::BeforeTurn,
        ExtensionEvent::BeforeToolCall,
        ExtensionEvent::AfterToolCall,
        ExtensionEvent::OnStepFinish,
        ExtensionEvent::OnChunk,
    ])
}

fn agent(trace: &Trace, model: &ScriptedModel) -> AgentBuilder {
    let lookup = FnTool::new(
        "lookup",
        "Looks it up.",
        json!({"type": "object"}),
        |_, _| async { Ok::<Value, ToolError>(json!({"found": true})) },
    );
    let (t1, t2) = (trace.clone(), trace.clone());
    AgentBuilder::new("ext")
        .instructions("Be brief.")
        .model(model.clone())
        .dyn_tool(lookup)
        .hook(Hook::<event::BeforeTurn>::sync("own", move |_| {
            t1.push("own:before_turn")
        }))
        .hook(Hook::<event::OnStepFinish>::sync("own", move |ctx| {
            t2.push(format!("own:on_step_finish({})", ctx.step));
        }))
}

#[tokio::test]
async fn a_before_turn_answer_sets_thinks_stream_stall_timeout() {
    for (ms, expected) in [(1500, Duration::from_millis(1500)), (0, Duration::ZERO)] {
        let (trace, seen) = (Trace::new(), Seen::default());
        let model = ScriptedModel::new([ScriptedStep::new().text("Done.")]);
        let answer = json!({"chatStreamStallTimeoutMs": ms});
        let result = agent(&trace, &model)
            .extension(recorder("stall", &seen, &trace, answer))
            .build()
            .unwrap()
            .run("go")
            .await;
        assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
        assert_eq!(model.requests()[0].stall_timeout, Some(expected), "{ms} ms");
    }
}

fn keys(snapshot: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = snapshot
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[tokio::test]
async fn snapshots_have_thinks_fields_and_come_after_the_agents_hooks_in_load_order() {
    let trace = Trace::new();
    let seen = Seen::default();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Hm.")
            .tool_call("c1", "lookup", r#"{"q":"x"}"#)
            .usage(10, 2),
        ScriptedStep::new().text("Done."),
    ]);
    let result = agent(&trace, &model)
        .extension(recorder(
            "one",
            &seen,
            &trace,
            json!({"system": "From one"}),
        ))
        .extension(recorder(
            "two",
            &seen,
            &trace,
            json!({"system": "From two", "maxSteps": 5}),
        ))
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(result.status, TurnStatus::Completed);

    let order: Vec<String> = trace
        .take()
        .into_iter()
        .filter(|l| !l.ends_with("onChunk"))
        .collect();
    assert_eq!(
        order,
        lines(&[
            "own:before_turn",
            "one:beforeTurn",
            "two:beforeTurn",
            "one:beforeToolCall",
            "two:beforeToolCall",
            "one:afterToolCall",
            "two:afterToolCall",
            "own:on_step_finish(0)",
            "one:onStepFinish",
            "two:onStepFinish",
            "own:on_step_finish(1)",
            "one:onStepFinish",
            "two:onStepFinish",
        ])
    );
    assert_eq!(
        model.requests()[0].system.as_deref(),
        Some("From two"),
        "the last subscriber's scalar wins"
    );

    let seen = seen.lock().unwrap();
    let first = |name: &str| &seen.iter().find(|(n, _)| n == name).unwrap().1;
    let turn = first("one:beforeTurn");
    assert_eq!(
        keys(turn),
        [
            "body",
            "continuation",
            "messageCount",
            "modelId",
            "system",
            "toolNames"
        ]
    );
    assert_eq!(turn["toolNames"], json!(["lookup"]));
    assert_eq!(turn["system"], json!("Be brief."));
    assert_eq!(turn["messageCount"], json!(1));
    let before = first("one:beforeToolCall");
    assert_eq!(
        keys(before),
        ["dynamic", "input", "stepNumber", "toolCallId", "toolName"]
    );
    assert_eq!(before["input"], json!({"q": "x"}));
    let after = first("one:afterToolCall");
    assert_eq!(
        keys(after),
        [
            "durationMs",
            "dynamic",
            "input",
            "modelResult",
            "output",
            "stepNumber",
            "success",
            "toolCallId",
            "toolName"
        ]
    );
    assert_eq!(after["output"], json!({"found": true}));
    assert_eq!(after["success"], json!(true));
    assert_eq!(
        after["modelResult"],
        json!({"content": r#"{"found":true}"#, "isError": false, "replaced": false, "dropped": false})
    );
    let step = first("one:onStepFinish");
    assert_eq!(
        keys(step),
        [
            "finishReason",
            "providerMetadata",
            "reasoningText",
            "stepNumber",
            "text",
            "toolCallCount",
            "toolResultCount",
            "usage"
        ]
    );
    assert_eq!(step["toolCallCount"], json!(1));
    assert_eq!(step["usage"]["inputTokens"], json!(10));
    let chunk = first("one:onChunk");
    assert_eq!(chunk, &json!({"type": "text-delta", "text": "Hm."}));
    let call_chunk = seen
        .iter()
        .find(|(n, s)| n == "one:onChunk" && s["type"] == "tool-call")
        .unwrap();
    assert_eq!(
        call_chunk.1,
        json!({"type": "tool-call", "toolName": "lookup", "toolCallId": "c1"})
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_or_slow_extension_never_aborts_the_turn() {
    let failing = Extension::new("failing", |_, _| async { Err("broken".to_owned()) })
        .subscribe([ExtensionEvent::BeforeTurn, ExtensionEvent::OnStepFinish]);
    let slow = Extension::new("slow", |_, _| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(Value::Null)
    })
    .subscribe([ExtensionEvent::OnStepFinish])
    .timeout(Duration::from_millis(50));
    let panicking = Extension::new("panicking", |_, _| async { panic!("extension bug") })
        .subscribe([ExtensionEvent::BeforeToolCall]);
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "lookup", "{}"),
        ScriptedStep::new().text("Done."),
    ]);
    let started = tokio::time::Instant::now();
    let result = agent(&Trace::new(), &model)
        .extension(failing)
        .extension(slow)
        .extension(panicking)
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(result.text, "Done.");
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(100),
        "the slow one is abandoned at its 50 ms timeout, on each of the two steps"
    );
}

#[tokio::test]
async fn a_session_config_adds_extensions_after_the_agents() {
    let trace = Trace::new();
    let seen = Seen::default();
    let (session_seen, session_trace) = (seen.clone(), trace.clone());
    let model = ScriptedModel::new([ScriptedStep::new().text("Hi.")]);
    let result = agent(&trace, &model)
        .extension(recorder("agent", &seen, &trace, Value::Null))
        .configure_session(move |config| {
            config.extension(recorder(
                "session",
                &session_seen,
                &session_trace,
                json!({"temperature": 0.25}),
            ))
        })
        .build()
        .unwrap()
        .run("hello")
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    let turn: Vec<String> = trace
        .take()
        .into_iter()
        .filter(|l| l.ends_with("beforeTurn"))
        .collect();
    assert_eq!(turn, lines(&["agent:beforeTurn", "session:beforeTurn"]));
    assert_eq!(model.requests()[0].settings.temperature, Some(0.25));
}

/// `agent-core/docs/extensions.md` documents each snapshot with a JSON Schema: its properties
/// are exactly the fields a real run produces (optional ones included).
#[tokio::test]
async fn the_documented_schemas_list_exactly_the_snapshot_fields() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-core/docs/extensions.md"),
    )
    .unwrap();
    let schema = |event: &str| -> Value {
        let section = doc.split(&format!("## {event}\n")).nth(1).unwrap();
        let block = section.split("```json\n").nth(1).unwrap();
        serde_json::from_str(block.split("```").next().unwrap()).unwrap()
    };
    let trace = Trace::new();
    let seen = Seen::default();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "lookup", "{}"),
        ScriptedStep::new().text("Done."),
    ]);
    agent(&trace, &model)
        .extension(recorder("x", &seen, &trace, Value::Null))
        .build()
        .unwrap()
        .run("go")
        .await;
    let seen = seen.lock().unwrap();
    for event in [
        "beforeTurn",
        "beforeToolCall",
        "afterToolCall",
        "onStepFinish",
    ] {
        let schema = schema(event);
        let mut documented: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        documented.sort_unstable();
        let snapshot = &seen
            .iter()
            .find(|(n, _)| n == &format!("x:{event}"))
            .unwrap()
            .1;
        let mut produced = keys(snapshot);
        // `error` is the documented alternative to `output`.
        if event == "afterToolCall" {
            produced.push("error");
            produced.sort_unstable();
        }
        assert_eq!(produced, documented, "{event}");
    }
    let chunk_fields = schema("onChunk");
    for (_, snapshot) in seen.iter().filter(|(n, _)| n == "x:onChunk") {
        for key in keys(snapshot) {
            assert!(chunk_fields["properties"].get(key).is_some(), "{key}");
        }
    }
}

/// An onChunk subscriber that asks for tool calls and their starts only receives those, in
/// order (the text and argument chunks cost it nothing: no snapshot is built for them).
#[tokio::test]
async fn an_on_chunk_subscriber_receives_only_the_chunk_types_it_asked_for() {
    let seen = Seen::default();
    let s = seen.clone();
    let calls_only = Extension::new("calls", move |event, snapshot| {
        s.lock()
            .unwrap()
            .push((event.as_str().to_owned(), snapshot));
        async { Ok(Value::Null) }
    })
    .subscribe([ExtensionEvent::OnChunk])
    .chunk_types(["tool-input-start", "tool-call"]);
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("Let me look.")
            .tool_call("c1", "lookup", "{}"),
        ScriptedStep::new().text("Done."),
    ]);
    let result = agent(&Trace::new(), &model)
        .extension(calls_only)
        .build()
        .unwrap()
        .run("go")
        .await;
    assert_eq!(result.status, TurnStatus::Completed);
    let seen = seen.lock().unwrap();
    let snapshots: Vec<&Value> = seen.iter().map(|(_, s)| s).collect();
    assert_eq!(
        snapshots,
        [
            &json!({"type": "tool-input-start", "toolName": "lookup", "toolCallId": "c1"}),
            &json!({"type": "tool-call", "toolName": "lookup", "toolCallId": "c1"}),
        ]
    );
}

/// A chunk type that no chunk has (`text` for `text-delta`), or chunk types given to an
/// extension not subscribed to onChunk, left it receiving no chunk at all, without a word:
/// both are build errors naming the extension.
#[test]
fn chunk_types_that_select_no_chunk_are_a_build_error() {
    let handler = |_, _| async { Ok::<_, String>(Value::Null) };
    let typo = Extension::new("typo", handler)
        .subscribe([ExtensionEvent::OnChunk])
        .chunk_types(["text", "tool-call"]);
    let unsubscribed = Extension::new("unsubscribed", handler)
        .subscribe([ExtensionEvent::AfterToolCall])
        .chunk_types(["tool-call"]);
    let error = AgentBuilder::new("watched")
        .model(ScriptedModel::new([]))
        .extension(typo)
        .extension(unsubscribed)
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        [
            "extension `typo`: no chunk has the onChunk type `text`; the types are text-delta, \
             reasoning-delta, tool-input-start, tool-input-delta, tool-call, tool-result, tool-preliminary, \
             discarded",
            "extension `unsubscribed`: `chunk_types` selects onChunk snapshots, and it is not \
             subscribed to onChunk: add `ExtensionEvent::OnChunk` to its `subscribe`",
        ]
    );
}

#[tokio::test]
async fn a_session_extension_that_could_never_run_fails_the_sessions_turns_saying_why() {
    // A session's configuration is made when the session opens, after the agent was built:
    // what the builder refuses for the agent's extensions fails the turn instead.
    let handler = |_, _| async { Ok::<_, String>(Value::Null) };
    let model = ScriptedModel::new([ScriptedStep::new().text("never")]);
    let agent = AgentBuilder::new("watched")
        .model(model.clone())
        .configure_session(move |session| {
            session
                .extension(Extension::new("hasty", handler).timeout(Duration::ZERO))
                .extension(
                    Extension::new("typo", handler)
                        .subscribe([ExtensionEvent::OnChunk])
                        .chunk_types(["text"]),
                )
        })
        .build()
        .unwrap();
    let result = agent.session("s").run("go").await;
    assert_eq!(
        result.error.map(|error| error.message),
        Some(
            "extension `hasty`: its timeout is zero, so every run would time out at once; give a \
             positive limit; extension `typo`: no chunk has the onChunk type `text`; the types \
             are text-delta, reasoning-delta, tool-input-start, tool-input-delta, tool-call, tool-result, \
             tool-preliminary, discarded"
                .to_owned()
        )
    );
    assert!(model.requests().is_empty());
}
