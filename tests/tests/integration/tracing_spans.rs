//! The engine's `tracing` spans: names and OpenTelemetry gen_ai attributes for the turn, each
//! step, each model call, each tool call and each hook run, and where each span sits (a
//! subagent's turn under its caller's tool call), recorded by a minimal subscriber.

use std::sync::{Arc, Mutex};

use agent_core::{AgentBuilder, Hook, Matcher, ScriptedModel, ScriptedStep, event};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span's fields as `(name, value)`, in the order they were set.
type SpanFields = Vec<(String, String)>;

/// One recorded span: its name, its fields and its parent's index, if it has one.
type SpanRecord = (String, SpanFields, Option<usize>);

/// One recorded event: its fields and the index of the span it happened in.
type EventRecord = (SpanFields, Option<usize>);

/// Every span in creation order, and the spans entered now (innermost last): enough for a
/// current-thread runtime, where a span's contextual parent is the one entered last. Events
/// are kept apart, with their fields (`message` among them) and the span they happened in.
#[derive(Clone, Default)]
pub(crate) struct Spans {
    spans: Arc<Mutex<Vec<SpanRecord>>>,
    entered: Arc<Mutex<Vec<usize>>>,
    events: Arc<Mutex<Vec<EventRecord>>>,
}

impl Spans {
    /// The messages of the events recorded so far, in order.
    pub(crate) fn messages(&self) -> Vec<String> {
        let events = self.events.lock().unwrap();
        let messages = events
            .iter()
            .filter_map(|(fields, _)| field(fields, "message"));
        messages.map(str::to_owned).collect()
    }
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = Vec::new();
        span.record(&mut Fields(&mut fields));
        let parent = match span.parent() {
            Some(parent) => Some(parent.into_u64() as usize - 1),
            None if span.is_contextual() => self.entered.lock().unwrap().last().copied(),
            None => None,
        };
        let mut spans = self.spans.lock().unwrap();
        spans.push((span.metadata().name().to_owned(), fields, parent));
        Id::from_u64(spans.len() as u64)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        let index = span.into_u64() as usize - 1;
        values.record(&mut Fields(&mut spans[index].1));
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        let parent = self.entered.lock().unwrap().last().copied();
        self.events.lock().unwrap().push((fields, parent));
    }

    fn enter(&self, span: &Id) {
        let index = span.into_u64() as usize - 1;
        self.entered.lock().unwrap().push(index);
    }

    fn exit(&self, span: &Id) {
        let index = span.into_u64() as usize - 1;
        let mut entered = self.entered.lock().unwrap();
        if let Some(at) = entered.iter().rposition(|&i| i == index) {
            entered.remove(at);
        }
    }
}

impl Spans {
    fn find(&self, name: &str) -> Vec<SpanFields> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .filter(|(n, ..)| n == name)
            .map(|(_, fields, _)| fields.clone())
            .collect()
    }

    /// The names of the spans from the one at `index` up to its root, with each turn's agent
    /// (`invoke_agent:writer`).
    fn ancestry(&self, mut index: usize) -> Vec<String> {
        let spans = self.spans.lock().unwrap();
        let mut names = Vec::new();
        loop {
            let (name, fields, parent) = &spans[index];
            names.push(match field(fields, "gen_ai.agent.name") {
                Some(agent) => format!("{name}:{agent}"),
                None => name.clone(),
            });
            match parent {
                Some(parent) => index = *parent,
                None => return names,
            }
        }
    }

    /// The index of the first span named `name` whose field `key` is `value`.
    fn position(&self, name: &str, key: &str, value: &str) -> Option<usize> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .position(|(n, fields, _)| n == name && field(fields, key) == Some(value))
    }
}

/// Makes `spans` this thread's subscriber, after installing (once per test binary) a global one
/// that takes every span and event and keeps nothing. tracing caches each callsite's interest
/// process-wide, computed from the subscriber of the thread that reaches the callsite first
/// while at most one subscriber exists: a test on another thread, with none, could cache one
/// of the engine's spans as off, and `spans` would then never see it (an intermittent
/// failure of these tests in the whole suite). With a global subscriber that wants
/// everything, no callsite is ever cached as off.
pub(crate) fn record_on_this_thread(spans: &Spans) -> tracing::subscriber::DefaultGuard {
    static GLOBAL: std::sync::Once = std::sync::Once::new();
    GLOBAL.call_once(|| {
        let _ = tracing::subscriber::set_global_default(KeepNothing);
    });
    tracing::subscriber::set_default(spans.clone())
}

/// A subscriber interested in everything that keeps nothing (see [`record_on_this_thread`]).
struct KeepNothing;

impl Subscriber for KeepNothing {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn turn_step_model_tool_and_hook_spans_carry_gen_ai_attributes() {
    let spans = Spans::default();
    let _guard = record_on_this_thread(&spans);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let model = ScriptedModel::with_id(
        "gpt-test",
        [
            ScriptedStep::new()
                .tool_call("call_7", "echo", r#"{"x":1}"#)
                .usage(11, 3),
            ScriptedStep::new().text("done").usage(20, 2),
        ],
    );
    let echo = agent_core::FnTool::new(
        "echo",
        "Echo.",
        serde_json::json!({"type": "object"}),
        |args, _| async move { Ok(args) },
    );
    let agent = AgentBuilder::new("tracer")
        .model(model)
        .dyn_tool(echo)
        .hook(Hook::<event::OnStepFinish>::sync("finished", |_| {}))
        .before_tool_call(
            Matcher::tool("echo"),
            Hook::<event::BeforeToolCall<serde_json::Value>>::sync("gate", |_| {}),
        )
        .build()
        .unwrap();
    let result = runtime.block_on(agent.run("hi"));
    assert!(result.is_completed(), "{result:?}");

    let turns = spans.find("invoke_agent");
    assert_eq!(turns.len(), 1);
    assert_eq!(
        field(&turns[0], "gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(field(&turns[0], "gen_ai.agent.name"), Some("tracer"));
    assert_eq!(field(&turns[0], "gen_ai.usage.input_tokens"), Some("31"));
    assert_eq!(field(&turns[0], "gen_ai.usage.output_tokens"), Some("5"));

    let step_numbers: Vec<String> = spans
        .find("step")
        .iter()
        .map(|f| field(f, "gen_ai.agent.step").unwrap_or("?").to_owned())
        .collect();
    assert_eq!(step_numbers, ["0", "1"]);

    let chats = spans.find("chat");
    assert_eq!(chats.len(), 2);
    assert_eq!(field(&chats[0], "gen_ai.operation.name"), Some("chat"));
    assert_eq!(field(&chats[0], "gen_ai.request.model"), Some("gpt-test"));
    assert_eq!(field(&chats[0], "gen_ai.usage.input_tokens"), Some("11"));
    assert_eq!(field(&chats[1], "gen_ai.usage.output_tokens"), Some("2"));
    // Finish reasons as the wire spells them, not as Rust's Debug does.
    assert_eq!(
        field(&chats[0], "gen_ai.response.finish_reasons"),
        Some("tool_calls")
    );
    assert_eq!(
        field(&chats[1], "gen_ai.response.finish_reasons"),
        Some("stop")
    );

    let tools = spans.find("execute_tool");
    assert_eq!(tools.len(), 1);
    assert_eq!(
        field(&tools[0], "gen_ai.operation.name"),
        Some("execute_tool")
    );
    assert_eq!(field(&tools[0], "gen_ai.tool.name"), Some("echo"));
    assert_eq!(field(&tools[0], "gen_ai.tool.call.id"), Some("call_7"));

    let hooks: Vec<(String, String)> = spans
        .find("hook")
        .iter()
        .map(|f| {
            (
                field(f, "hook.event").unwrap_or("?").to_owned(),
                field(f, "hook.name").unwrap_or("?").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        hooks,
        [
            ("before_tool_call".to_owned(), "gate".to_owned()),
            ("on_step_finish".to_owned(), "finished".to_owned()),
            ("on_step_finish".to_owned(), "finished".to_owned()),
        ]
    );
}

#[test]
fn a_subagents_turn_is_traced_under_the_callers_tool_call_with_its_own_request_id() {
    let spans = Spans::default();
    let _guard = record_on_this_thread(&spans);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let researcher = AgentBuilder::new("researcher")
        .description("Finds facts.")
        .model(ScriptedModel::new([
            ScriptedStep::new().text("Rust is fast.")
        ]))
        .build()
        .unwrap();
    let writer = AgentBuilder::new("writer")
        .model(ScriptedModel::new([
            ScriptedStep::new().tool_call("call_1", "researcher", r#"{"input":"facts"}"#),
            ScriptedStep::new().text("Rust is fast, says my researcher."),
        ]))
        .subagent(agent_core::Subagent::of(&researcher))
        .build()
        .unwrap();
    let result = runtime.block_on(writer.run("Write about Rust"));
    assert!(result.is_completed(), "{result:?}");

    let child = spans
        .position("invoke_agent", "gen_ai.agent.name", "researcher")
        .expect("the subagent's turn has a span");
    assert_eq!(
        spans.ancestry(child),
        [
            "invoke_agent:researcher",
            "execute_tool",
            "step:writer",
            "invoke_agent:writer"
        ]
    );
    let turns = spans.find("invoke_agent");
    let ids: Vec<_> = turns
        .iter()
        .map(|f| field(f, "gen_ai.request.id").unwrap_or("?").to_owned())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "the subagent's turn has its own request id");
}

#[test]
fn an_output_retry_is_an_event_in_the_step_whose_answer_failed() {
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Total {
        cents: u64,
    }
    let spans = Spans::default();
    let _guard = record_on_this_thread(&spans);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "final_result", r#"{"cents":"ten"}"#),
        ScriptedStep::new().tool_call("c2", "final_result", r#"{"cents":10}"#),
    ]);
    let agent = AgentBuilder::new("typed")
        .model(model)
        .output::<Total>()
        .build()
        .unwrap();
    let result = runtime.block_on(agent.run("hi"));
    assert!(result.is_completed(), "{result:?}");

    let events = spans.events.lock().unwrap().clone();
    let retries: Vec<_> = events
        .iter()
        .filter(|(fields, _)| {
            field(fields, "message").is_some_and(|m| m.starts_with("output retry: "))
        })
        .collect();
    assert_eq!(retries.len(), 1, "{events:?}");
    let (fields, parent) = retries[0];
    assert_eq!(
        field(fields, "message"),
        Some("output retry: invalid answer at `cents`: invalid type: string \"ten\", expected u64")
    );
    assert_eq!(field(fields, "attempt"), Some("1"));
    assert_eq!(field(fields, "gen_ai.agent.step"), Some("0"));
    assert_eq!(field(fields, "gen_ai.agent.name"), Some("typed"));
    assert_eq!(
        spans.ancestry(parent.unwrap()),
        ["step:typed", "invoke_agent:typed"]
    );
}
