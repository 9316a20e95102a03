//! The tool boundary (issue 15, items 8 and 9): whatever user code a call runs (parsing the
//! arguments, deciding whether it needs approval, the tool, serializing its output) a panic
//! becomes an error result the model reads, never the turn's end; arguments are strict for every kind of tool; and an error
//! result quotes at most a few KB of what the model sent.

use std::sync::Arc;

use agent_core::{
    AgentBuilder, AnyValue, ArgsError, DynTool, FnTool, Message, ScriptedModel, ScriptedStep,
    ToolContext, ToolError, ToolSpec, TurnResult, TurnStatus, tool,
};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};
use tests::{Recorded, Trace};

/// An output whose `Serialize` panics.
#[derive(Debug)]
struct Unwritable;

impl Serialize for Unwritable {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        panic!("cannot serialize this")
    }
}

/// Make a thing that cannot be written down.
#[tool]
fn boom() -> Unwritable {
    Unwritable
}

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A dynamic tool whose argument parser panics.
struct BadParser {
    spec: Arc<ToolSpec>,
}

impl DynTool for BadParser {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }
    fn parse_args(&self, _: &str) -> Result<AnyValue, ArgsError> {
        panic!("parser bug")
    }
    fn args_from_json(&self, value: Value) -> Result<AnyValue, ArgsError> {
        Ok(AnyValue::new(value))
    }
    fn call(
        &self,
        _: Arc<AnyValue>,
        _: ToolContext,
    ) -> agent_core::BoxFuture<'static, Result<AnyValue, ToolError>> {
        Box::pin(async { Ok(AnyValue::new(json!("ran"))) })
    }
}

fn one_call(name: &str, arguments: &str) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", name, arguments),
        ScriptedStep::new().text("done"),
    ])
}

/// The tool result the model read in its second request.
fn result_read(model: &ScriptedModel) -> (String, bool) {
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        2,
        "the model is called again after the call"
    );
    requests[1]
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                content, is_error, ..
            } => Some((content.to_string(), *is_error)),
            _ => None,
        })
        .expect("a tool result")
}

fn assert_done(result: &TurnResult) {
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "done");
}

#[tokio::test]
async fn an_output_whose_serialize_panics_is_an_error_result() {
    let model = one_call("boom", "{}");
    let agent = AgentBuilder::new("t")
        .model(model.clone())
        .tool(boom_tool::Boom)
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_done(&result);
    assert_eq!(
        result_read(&model),
        (
            "serializing the output of tool `boom` panicked: cannot serialize this".to_owned(),
            true
        )
    );
}

#[tokio::test]
async fn a_parser_that_panics_is_an_error_result() {
    let model = one_call("bad", "{}");
    let spec = ToolSpec {
        name: "bad".to_owned(),
        description: "A bad parser.".to_owned(),
        parameters: json!({"type": "object"}),
    };
    let agent = AgentBuilder::new("t")
        .model(model.clone())
        .dyn_tool(BadParser {
            spec: Arc::new(spec),
        })
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_done(&result);
    assert_eq!(
        result_read(&model),
        (
            "parsing the arguments of tool `bad` panicked: parser bug".to_owned(),
            true
        )
    );
}

#[tokio::test]
async fn an_approval_rule_that_panics_fails_the_call_and_the_tool_does_not_run() {
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = ran.clone();
    let on_the_spot = FnTool::sync("rule", "Its rule panics.", json!({"type": "object"}), {
        move |_, _| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(json!("ran"))
        }
    });
    let counted = ran.clone();
    let awaited = FnTool::new("rule", "Its rule panics.", json!({"type": "object"}), {
        move |_, _| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok(json!("ran")) }
        }
    });
    for tool in [on_the_spot, awaited] {
        let trace = Trace::new();
        let model = one_call("rule", "{}");
        let tool = tool.needs_approval(|args| args["path"].as_str().unwrap().is_empty());
        let agent = AgentBuilder::new("t")
            .model(model.clone())
            .dyn_tool(tool)
            .record_all(&trace)
            .build()
            .unwrap();
        let result = agent.run("go").await;
        assert_done(&result);
        let (text, is_error) = result_read(&model);
        assert!(
            text.starts_with("deciding whether tool `rule` needs approval panicked: "),
            "{text}"
        );
        assert!(is_error);
        assert_eq!(
            trace.take(),
            [
                "before_run(go)",
                "before_turn",
                "before_step(0)",
                "on_llm_start(0)",
                "on_chunk(tool_start:c1 rule)",
                "on_chunk(tool_input:c1)",
                "on_chunk(tool_call:c1 rule)",
                "on_llm_end(0)",
                "before_tool_call(rule c1)",
                "after_tool_call(rule c1 failed)",
                "on_chunk(tool_result:c1 rule error)",
                "on_step_finish(0)",
                "before_step(1)",
                "on_llm_start(1)",
                "on_chunk(text:done)",
                "on_llm_end(1)",
                "on_step_finish(1)",
                "after_run(completed)",
                "on_chat_response(completed)",
            ]
        );
    }
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn trailing_text_after_the_arguments_is_rejected_by_every_kind_of_tool() {
    let echo = || {
        FnTool::new(
            "echo",
            "Echo.",
            json!({"type": "object"}),
            |args, _| async move { Ok(args) },
        )
    };
    for (name, arguments) in [
        ("echo", r#"{"message":"x"} trailing"#),
        ("add", r#"{"a":1,"b":2} trailing"#),
    ] {
        let model = one_call(name, arguments);
        let agent = AgentBuilder::new("t")
            .model(model.clone())
            .tool(add_tool::Add)
            .dyn_tool(echo())
            .build()
            .unwrap();
        let result = agent.run("go").await;
        assert_done(&result);
        assert_eq!(
            result_read(&model),
            (
                format!(
                    "invalid arguments for tool `{name}` at `.`: trailing characters at line 1 column {}",
                    arguments.find(" trailing").unwrap() + 2
                ),
                true
            ),
            "{name}"
        );
        assert_eq!(
            result.steps[0].tool_results[0].outcome,
            agent_core::ToolOutcomeKind::Rejected
        );
    }
}

/// Arguments are a JSON object for every kind of tool, as their schema says: serde would read
/// a typed tool's arguments from an array by position (`[1, 2]` as `a = 1, b = 2`), and a
/// JSON tool's would receive the array. Anything but an object is an error result the model
/// reads, and the tool does not run.
#[tokio::test]
async fn arguments_that_are_no_object_are_rejected_by_every_kind_of_tool() {
    let echo = || {
        FnTool::new(
            "echo",
            "Echo.",
            json!({"type": "object"}),
            |args, _| async move { Ok(args) },
        )
    };
    for (name, arguments, found) in [
        ("add", "[1, 2]", "[1,2]"),
        ("add", " [1, 2]", "[1,2]"),
        ("add", "7", "7"),
        ("add", "null", "null"),
        ("echo", "[1, 2]", "[1,2]"),
        ("echo", r#""text""#, r#""text""#),
    ] {
        let model = one_call(name, arguments);
        let agent = AgentBuilder::new("t")
            .model(model.clone())
            .tool(add_tool::Add)
            .dyn_tool(echo())
            .build()
            .unwrap();
        let result = agent.run("go").await;
        assert_done(&result);
        assert_eq!(
            result_read(&model),
            (
                format!(
                    "invalid arguments for tool `{name}` at `.`: expected a JSON object, found {found}"
                ),
                true
            ),
            "{name} {arguments}"
        );
        assert_eq!(
            result.steps[0].tool_results[0].outcome,
            agent_core::ToolOutcomeKind::Rejected
        );
    }
}

#[tokio::test]
async fn an_error_result_quotes_a_few_kb_of_a_huge_argument_and_says_how_long_it_was() {
    let huge = "x".repeat(10 << 20);
    let cases = [
        ("add", format!(r#"{{"a":"{huge}","b":2}}"#)),
        ("echo", format!(r#"["{huge}"]"#)),
        (huge.as_str(), "{}".to_owned()),
    ];
    for (name, arguments) in cases {
        let model = one_call(name, &arguments);
        let agent = AgentBuilder::new("t")
            .model(model.clone())
            .tool(add_tool::Add)
            .dyn_tool(FnTool::new(
                "echo",
                "Echo.",
                json!({"type": "object"}),
                |args, _| async move { Ok(args) },
            ))
            .build()
            .unwrap();
        let result = agent.run("go").await;
        assert_done(&result);
        let (content, is_error) = result_read(&model);
        assert!(is_error);
        assert!(content.len() < 5000, "{} bytes quoted", content.len());
        assert!(
            content.contains(" bytes in all)"),
            "the cut is said: {}",
            &content[content.len() - 100..]
        );
    }
}

/// Sets its flag when dropped: shows a tool's future was dropped, not left running.
struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A tool that never returns, noting when its future is dropped.
fn hanging(dropped: &Arc<std::sync::atomic::AtomicBool>) -> FnTool {
    let dropped = dropped.clone();
    FnTool::new(
        "hang",
        "Never returns.",
        json!({"type": "object"}),
        move |_, _| {
            let flag = DropFlag(dropped.clone());
            async move {
                let _flag = flag;
                std::future::pending::<()>().await;
                Ok(Value::Null)
            }
        },
    )
}

/// Time is paused: the runtime jumps to each timer, so a 30 s limit is checked at its real
/// value, exactly, without the test waiting 30 s.
#[tokio::test(start_paused = true)]
async fn a_tool_past_its_timeout_is_stopped_and_the_model_reads_why() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    for (own, agent_wide, expected) in [
        (None, Some(30), 30),
        (Some(2), Some(30), 2),
        (Some(45), None, 45),
    ] {
        let dropped = Arc::new(AtomicBool::new(false));
        let mut tool = hanging(&dropped);
        if let Some(secs) = own {
            tool = tool.with_timeout(Duration::from_secs(secs));
        }
        let model = one_call("hang", "{}");
        let mut builder = AgentBuilder::new("t").model(model.clone()).dyn_tool(tool);
        if let Some(secs) = agent_wide {
            builder = builder.tool_timeout(Duration::from_secs(secs));
        }
        let result = builder.build().unwrap().run("go").await;
        assert_done(&result);
        assert_eq!(
            result_read(&model),
            (
                format!("tool `hang` timed out after {expected}s and was stopped"),
                true
            )
        );
        let record = &result.steps[0].tool_results[0];
        assert_eq!(record.outcome, agent_core::ToolOutcomeKind::Failed);
        assert_eq!(
            record.duration.as_secs(),
            expected,
            "{own:?} {agent_wide:?}"
        );
        assert!(
            dropped.load(Ordering::SeqCst),
            "the tool's future was dropped"
        );
    }
}

/// A typed tool's own limit (`Tool::TIMEOUT`).
struct Slow;

impl agent_core::Tool for Slow {
    const NAME: &'static str = "slow";
    const DESCRIPTION: &'static str = "Takes an hour.";
    const TIMEOUT: Option<std::time::Duration> = Some(std::time::Duration::from_secs(5));
    type Args = Value;
    type Output = String;

    fn schema() -> &'static Value {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| json!({"type": "object"}))
    }

    async fn call(&self, _: Value, _: ToolContext) -> Result<String, ToolError> {
        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        Ok("late".to_owned())
    }
}

#[tokio::test(start_paused = true)]
async fn a_typed_tool_takes_its_own_timeout() {
    let model = one_call("slow", "{}");
    let agent = AgentBuilder::new("t")
        .model(model.clone())
        .tool(Slow)
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_done(&result);
    assert_eq!(
        result_read(&model),
        (
            "tool `slow` timed out after 5s and was stopped".to_owned(),
            true
        )
    );
}

/// Sleeps for an hour: `#[tool(timeout_ms = 50)]` stops it first.
#[tool(timeout_ms = 50)]
async fn sleepy() -> String {
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    "late".to_owned()
}

#[tokio::test(start_paused = true)]
async fn a_macro_tool_takes_its_timeout_ms() {
    use agent_core::Tool;
    assert_eq!(
        sleepy_tool::Sleepy::TIMEOUT,
        Some(std::time::Duration::from_millis(50))
    );
    let model = one_call("sleepy", "{}");
    let agent = AgentBuilder::new("t")
        .model(model.clone())
        .tool(sleepy_tool::Sleepy)
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_done(&result);
    assert_eq!(
        result_read(&model),
        (
            "tool `sleepy` timed out after 50ms and was stopped".to_owned(),
            true
        )
    );
    let record = &result.steps[0].tool_results[0];
    assert_eq!(record.outcome, agent_core::ToolOutcomeKind::Failed);
    assert_eq!(record.duration, std::time::Duration::from_millis(50));
}
