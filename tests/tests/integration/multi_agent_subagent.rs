//! Subagents as tools (issue 9 item 3): a call runs the subagent's own turn on its input and
//! returns its final answer; the caller's before_tool_call gates it (block and modify apply),
//! on_subagent_start / on_subagent_stop fire around it, and the subagent's turn has its own
//! request id and hooks.

use std::sync::Arc;

use agent_core::{
    Agent, AgentBuilder, Hook, Matcher, MemoryStore, ScriptedModel, ScriptedStep, SessionStore,
    Subagent, ToolCallDecision, TurnStatus, event,
};
use serde_json::{Value, json};
use tests::{Trace, assert_whole, lines};

/// The subagent, recording its own hooks (with the request id it runs under).
fn researcher(trace: &Trace, model: ScriptedModel, store: &Arc<MemoryStore>) -> Agent {
    let (t1, t2, t3) = (trace.clone(), trace.clone(), trace.clone());
    AgentBuilder::new("researcher")
        .description("Finds facts.")
        .model(model)
        .store(store.clone())
        .hook(Hook::<event::BeforeRun>::sync("trace", move |ctx| {
            t1.push(format!("researcher:before_run({})", ctx.input));
            t1.push(format!("request {}", ctx.request_id));
        }))
        .hook(Hook::<event::OnLlmStart>::sync("trace", move |ctx| {
            t2.push(format!("researcher:on_llm_start({})", ctx.step));
        }))
        .hook(Hook::<event::OnChatResponse>::sync("trace", move |ctx| {
            t3.push(format!("researcher:on_chat_response({})", ctx.status));
        }))
        .build()
        .unwrap()
}

/// The calling agent: asks the researcher in its first step, then answers. `gate` decides its
/// before_tool_call on every tool.
fn writer(
    trace: &Trace,
    model: &ScriptedModel,
    subagent: Subagent,
    store: &Arc<dyn SessionStore>,
    gate: impl Fn() -> ToolCallDecision<Value> + Send + Sync + 'static,
) -> Agent {
    let (t1, t2, t3, t4, t5) = (
        trace.clone(),
        trace.clone(),
        trace.clone(),
        trace.clone(),
        trace.clone(),
    );
    AgentBuilder::new("writer")
        .model(model.clone())
        .store(store.clone())
        .subagent(subagent)
        .hook(Hook::<event::BeforeRun>::sync("trace", move |ctx| {
            t5.push(format!("request {}", ctx.request_id));
        }))
        .before_tool_call(
            Matcher::all(),
            Hook::<event::BeforeToolCall<Value>>::sync("gate", move |ctx| {
                t1.push(format!("writer:before_tool_call({})", ctx.tool_name));
                gate()
            }),
        )
        .after_tool_call(
            Matcher::all(),
            Hook::<event::AfterToolCall<Value>>::sync("trace", move |ctx| {
                t2.push(format!(
                    "writer:after_tool_call({} {})",
                    ctx.tool_name,
                    ctx.outcome.kind()
                ));
            }),
        )
        .hook(Hook::<event::OnSubagentStart>::sync("trace", move |ctx| {
            t3.push(format!(
                "writer:on_subagent_start({}->{} {})",
                ctx.agent.name, ctx.subagent, ctx.input
            ));
        }))
        .hook(Hook::<event::OnSubagentStop>::sync("trace", move |ctx| {
            t4.push(format!(
                "writer:on_subagent_stop({}->{} {:?})",
                ctx.agent.name, ctx.subagent, ctx.result
            ));
        }))
        .build()
        .unwrap()
}

fn writer_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().tool_call("s1", "researcher", r#"{"input":"facts about Rust"}"#),
        ScriptedStep::new().text("Written."),
    ])
}

/// The trace without the request id lines, and those ids.
fn split(trace: &Trace) -> (Vec<String>, Vec<String>) {
    trace
        .take()
        .into_iter()
        .partition(|l| !l.starts_with("request "))
}

/// What the writer's model read as the researcher's answer.
fn answer_read(model: &ScriptedModel) -> String {
    model.requests()[1]
        .messages
        .last()
        .unwrap()
        .text()
        .to_owned()
}

#[tokio::test]
async fn a_subagent_runs_its_own_turn_and_its_answer_is_the_result() {
    let trace = Trace::new();
    let child_store = Arc::new(MemoryStore::new());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let child_model = ScriptedModel::new([ScriptedStep::new().text("Rust is fast.")]);
    let researcher = researcher(&trace, child_model.clone(), &child_store);
    let model = writer_model();
    let writer = writer(&trace, &model, Subagent::of(&researcher), &store, || {
        ToolCallDecision::Allow
    });

    let result = writer.session("s").run("Write about Rust").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let (events, requests) = split(&trace);
    assert_eq!(
        events,
        lines(&[
            "writer:before_tool_call(researcher)",
            r#"writer:on_subagent_start(writer->researcher {"input":"facts about Rust"})"#,
            "researcher:before_run(facts about Rust)",
            "researcher:on_llm_start(0)",
            "researcher:on_chat_response(completed)",
            r#"writer:on_subagent_stop(writer->researcher Ok("Rust is fast."))"#,
            "writer:after_tool_call(researcher executed)",
        ])
    );
    assert_eq!(requests.len(), 2);
    assert_ne!(
        requests[0], requests[1],
        "the subagent's turn has its own id"
    );
    assert_eq!(answer_read(&model), "Rust is fast.");
    let offered = &model.requests()[0].tools[0];
    assert_eq!(offered.name, "researcher");
    assert_eq!(offered.description, "Ask agent `researcher`: Finds facts.");
    assert_eq!(offered.parameters["required"], json!(["input"]));
    assert_whole(&store.load("s").await.unwrap());
    assert_eq!(
        child_store.session_count(),
        0,
        "the subagent's session is freed when its call ends"
    );
}

#[tokio::test]
async fn the_callers_gate_modifies_or_blocks_a_subagent_call() {
    let trace = Trace::new();
    let child_store = Arc::new(MemoryStore::new());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let child_model = ScriptedModel::new([ScriptedStep::new().text("Done.")]);
    let researcher = researcher(&trace, child_model.clone(), &child_store);
    let model = writer_model();
    let writer = writer(&trace, &model, Subagent::of(&researcher), &store, || {
        ToolCallDecision::Modify(json!({"input": "facts about Rust, in one line"}))
    });
    writer.session("s").run("Write").await;
    let (events, _) = split(&trace);
    assert!(
        events.contains(&"researcher:before_run(facts about Rust, in one line)".to_owned()),
        "a modified input reaches the subagent: {events:?}"
    );

    let model = writer_model();
    let child_model = ScriptedModel::new([ScriptedStep::new().text("never")]);
    let blocked_researcher = self::researcher(&trace, child_model.clone(), &child_store);
    let blocking = self::writer(
        &trace,
        &model,
        Subagent::of(&blocked_researcher),
        &store,
        || ToolCallDecision::block("no research today"),
    );
    blocking.session("t").run("Write").await;
    let (events, _) = split(&trace);
    assert_eq!(
        events,
        lines(&[
            "writer:before_tool_call(researcher)",
            "writer:after_tool_call(researcher blocked)",
        ]),
        "a blocked call never starts the subagent"
    );
    assert!(child_model.requests().is_empty());
    assert_eq!(answer_read(&model), "no research today");
}

#[tokio::test]
async fn a_failing_subagent_is_an_error_result_the_caller_reads() {
    let trace = Trace::new();
    let child_store = Arc::new(MemoryStore::new());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let child_model = ScriptedModel::new([ScriptedStep::new().in_band_error("overloaded")]);
    let researcher = researcher(&trace, child_model, &child_store);
    let subagent = Subagent::of(&researcher)
        .tool_name("research")
        .description("Look it up.");
    let model_with_name = ScriptedModel::new([
        ScriptedStep::new().tool_call("s1", "research", r#"{"input":"x"}"#),
        ScriptedStep::new().text("Written anyway."),
    ]);
    let writer = writer(&trace, &model_with_name, subagent, &store, || {
        ToolCallDecision::Allow
    });
    let result = writer.session("s").run("Write").await;
    assert_eq!(result.status, TurnStatus::Completed);
    let read = answer_read(&model_with_name);
    assert!(
        read.starts_with("agent `researcher` ended error: "),
        "{read}"
    );
    let (events, _) = split(&trace);
    let stop = events
        .iter()
        .find(|l| l.starts_with("writer:on_subagent_stop"))
        .unwrap();
    assert!(
        stop.contains("Err(\"agent `researcher` ended error"),
        "{stop}"
    );
    assert!(
        events.contains(&"writer:after_tool_call(research failed)".to_owned()),
        "{events:?}"
    );
    assert_eq!(
        model_with_name.requests()[0].tools[0].description,
        "Look it up."
    );
}

/// Inheritance (issue 9 item 5): with `inherit_tool_hooks(true)` the caller's untyped tool
/// hooks run on the subagent's tool calls, before its own; by default they do not (isolate).
#[tokio::test]
async fn a_subagent_inherits_the_callers_untyped_tool_hooks_only_when_marked() {
    use agent_core::{FnTool, ToolError};
    for inherit in [false, true] {
        let trace = Trace::new();
        let t = trace.clone();
        let search = FnTool::new(
            "search",
            "Searches.",
            json!({"type": "object"}),
            move |_, _| {
                t.push("search ran");
                async { Ok::<Value, ToolError>(json!("results")) }
            },
        );
        let t = trace.clone();
        let researcher = AgentBuilder::new("researcher")
            .model(ScriptedModel::new([
                ScriptedStep::new().tool_call("q1", "search", "{}"),
                ScriptedStep::new().text("Found it."),
            ]))
            .dyn_tool(search)
            .before_tool_call(
                Matcher::all(),
                Hook::<event::BeforeToolCall<Value>>::sync("own", move |ctx| {
                    t.push(format!("researcher:own({})", ctx.tool_name));
                }),
            )
            .build()
            .unwrap();
        let (t1, t2) = (trace.clone(), trace.clone());
        let writer = AgentBuilder::new("writer")
            .model(writer_model())
            .subagent(Subagent::of(&researcher).inherit_tool_hooks(inherit))
            .before_tool_call(
                Matcher::all().dynamic(),
                Hook::<event::BeforeToolCall<Value>>::sync("audit", move |ctx| {
                    t1.push(format!("writer:audit({})", ctx.tool_name));
                }),
            )
            .after_tool_call(
                Matcher::all().dynamic(),
                Hook::<event::AfterToolCall<Value>>::sync("audit", move |ctx| {
                    t2.push(format!("writer:after({})", ctx.tool_name));
                }),
            )
            .build()
            .unwrap();
        let result = writer.run("write").await;
        assert_eq!(result.status, TurnStatus::Completed);
        let expected: &[&str] = if inherit {
            &[
                "writer:audit(researcher)",
                "writer:audit(search)",
                "researcher:own(search)",
                "search ran",
                "writer:after(search)",
                "writer:after(researcher)",
            ]
        } else {
            &[
                "writer:audit(researcher)",
                "researcher:own(search)",
                "search ran",
                "writer:after(researcher)",
            ]
        };
        assert_eq!(trace.take(), lines(expected), "inherit: {inherit}");
    }
}

/// A subagent on `store` with a slow tool, recording its session id and its on_chat_response.
fn worker(store: &Arc<dyn SessionStore>, trace: &Trace, model: ScriptedModel) -> Agent {
    let (t1, t2) = (trace.clone(), trace.clone());
    let slow = agent_core::FnTool::new("slow", "Slow.", json!({"type": "object"}), |_, _| async {
        tokio::time::sleep(std::time::Duration::from_secs(600)).await;
        Ok::<Value, agent_core::ToolError>(json!("late"))
    });
    AgentBuilder::new("worker")
        .model(model)
        .store(store.clone())
        .dyn_tool(slow)
        .hook(Hook::<event::OnSessionStart>::sync("trace", move |ctx| {
            t1.push(format!("session {}", ctx.session_id));
        }))
        .hook(Hook::<event::OnChatResponse>::sync("trace", move |ctx| {
            t2.push(format!("worker:on_chat_response({})", ctx.status));
        }))
        .build()
        .unwrap()
}

/// Waits (up to 10 s) for the dropped subagent's turn to finish on its own task, then checks it
/// ended aborted through on_chat_response with its session whole.
async fn worker_finished(store: &Arc<dyn SessionStore>, trace: &Trace) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !trace
        .snapshot()
        .iter()
        .any(|line| line.starts_with("worker:on_chat_response"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the subagent's turn never finished: {:?}",
            trace.snapshot()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let seen = trace.take();
    let session = seen
        .iter()
        .find_map(|line| line.strip_prefix("session "))
        .unwrap();
    assert_eq!(seen.last().unwrap(), "worker:on_chat_response(aborted)");
    assert_whole(&store.load(session).await.unwrap());
}

/// A subagent's turn dropped mid-flight, by its caller's cancel or by the call's timeout, is
/// cancelled and finishes as `aborted`, its rows settled, as a dropped `run` is.
#[tokio::test]
async fn a_dropped_subagent_turn_finishes_aborted_and_whole() {
    let scratch = tests::Scratch::new("dropped-subagent");
    let store: Arc<dyn SessionStore> =
        Arc::new(agent_core::SqliteStore::open(scratch.join("s.db")).unwrap());
    // The caller cancelled while the subagent's model streams.
    let trace = Trace::new();
    let streaming = ScriptedModel::new([ScriptedStep::new()
        .text("thinking")
        .sleep(std::time::Duration::from_secs(600))
        .text(" done")]);
    let sub = worker(&store, &trace, streaming);
    let caller = AgentBuilder::new("boss")
        .model(ScriptedModel::new([ScriptedStep::new().tool_call(
            "s1",
            "worker",
            r#"{"input":"go"}"#,
        )]))
        .store(store.clone())
        .subagent(&sub)
        .build()
        .unwrap();
    let cancel = agent_core::CancelToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let result = caller
        .run(agent_core::TurnRequest::new("go").cancel(cancel))
        .await;
    assert_eq!(result.status, TurnStatus::Aborted);
    worker_finished(&store, &trace).await;

    // The call past its timeout while the subagent's tool runs.
    let trace = Trace::new();
    let calling = ScriptedModel::new([
        ScriptedStep::new().tool_call("w1", "slow", "{}"),
        ScriptedStep::new().text("worked"),
    ]);
    let sub = worker(&store, &trace, calling);
    let caller = AgentBuilder::new("boss")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("s1", "worker", r#"{"input":"go"}"#),
            ScriptedStep::new().text("done"),
        ]))
        .store(store.clone())
        .subagent(&sub)
        .tool_timeout(std::time::Duration::from_millis(200))
        .build()
        .unwrap();
    let result = caller.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    worker_finished(&store, &trace).await;
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    number: String,
    total_cents: u64,
}

/// A typed subagent that ends without a valid answer (out of steps) is an error result to its
/// caller, not its rejected text read as an answer.
#[tokio::test]
async fn a_typed_subagent_without_a_valid_answer_is_an_error_result() {
    let bad = r#"{"number":"INV-7","total_cents":"twelve"}"#;
    let sub = AgentBuilder::new("extractor")
        .model(ScriptedModel::new([ScriptedStep::new().text(bad)]).supporting_output_schema())
        .output::<Invoice>()
        .output_mode(agent_core::OutputMode::Native)
        .max_steps(1)
        .build()
        .unwrap();
    let caller = AgentBuilder::new("caller")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("s1", "extractor", r#"{"input":"extract"}"#),
            ScriptedStep::new().text("done"),
        ]))
        .subagent(&sub)
        .build()
        .unwrap();
    let result = caller.run("go").await;
    let read = &result.steps[0].tool_results[0];
    assert!(read.is_error, "{read:?}");
    assert_eq!(
        read.content.as_str(),
        "agent `extractor` ended without a valid answer (max_steps)"
    );
}

/// A subagent whose turn completes with no answer at all (its step limit reached by a step
/// that called tools, or an empty reply) is an error result saying so, as a typed one's is,
/// not an empty result the caller's model reads as a successful answer.
#[tokio::test]
async fn a_subagent_that_ends_without_an_answer_is_an_error_result() {
    let sub = AgentBuilder::new("worker")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("a1", "add", r#"{"a":1,"b":2}"#),
            ScriptedStep::new(),
        ]))
        .tool(tests::Add::default())
        .max_steps(1)
        .build()
        .unwrap();
    let caller = AgentBuilder::new("caller")
        .model(ScriptedModel::new([
            ScriptedStep::new()
                .tool_call("s1", "worker", r#"{"input":"add"}"#)
                .tool_call("s2", "worker", r#"{"input":"again"}"#),
            ScriptedStep::new().text("done"),
        ]))
        .subagent(&sub)
        .tool_concurrency(1)
        .build()
        .unwrap();
    let result = caller.run("go").await;
    let read: Vec<(&str, bool)> = result.steps[0]
        .tool_results
        .iter()
        .map(|read| (read.content.as_str(), read.is_error))
        .collect();
    assert_eq!(
        read,
        [
            ("agent `worker` ended without an answer (max_steps)", true),
            ("agent `worker` ended without an answer", true),
        ]
    );
}

/// A subagent whose tool name cannot be offered (an agent named with a space) or is taken is
/// a build problem naming the subagent and how to name its tool, as a handoff's is.
#[test]
fn a_subagent_whose_tool_name_is_invalid_or_taken_says_how_to_name_it() {
    let agent = |name: &str| {
        AgentBuilder::new(name)
            .model(ScriptedModel::new([]))
            .build()
            .unwrap()
    };
    let error = AgentBuilder::new("triage")
        .model(ScriptedModel::new([]))
        .subagent(&agent("Billing Desk"))
        .subagent(&agent("helper"))
        .subagent(&agent("helper"))
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        lines(&[
            "subagent `Billing Desk`: invalid tool name `Billing Desk`: use 1 to 64 of \
             `[A-Za-z0-9_-]` (name it with `Subagent::tool_name`)",
            "subagent `helper`: the tool name `helper` is taken; name it with \
             `Subagent::tool_name`",
        ])
    );
}
