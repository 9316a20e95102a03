//! Which tools a tool-call hook applies to (docs/design.md §6 "Matchers"), hook priority, the problems
//! `AgentBuilder::build` reports, and hooks matching tools added at run time.

use std::sync::Arc;

use agent_core::{
    AgentBuilder, BuildError, ChunkContext, FnTool, Hook, Matcher, ScriptedModel, ScriptedStep,
    StepConfig, ToolCallContext, ToolCallDecision, ToolError, TurnConfig, TurnStatus, event,
};
use serde_json::{Value, json};
use tests::{
    Add, FileCall, GetWeather, ReadFile, ReadFileArgs, Recorded, Trace, WriteFile, WriteFileArgs,
    lines,
};

type AnyBefore = event::BeforeToolCall<Value>;

/// An untyped before hook recording `NAME(TOOL)`.
fn probe(trace: &Trace, name: &'static str) -> Hook<AnyBefore> {
    let trace = trace.clone();
    Hook::<AnyBefore>::sync(name, move |ctx| {
        trace.push(format!("{name}({})", ctx.tool_name));
    })
}

/// The three tools of docs/design.md §2's file agent.
fn file_agent(model: &ScriptedModel, trace: &Trace) -> AgentBuilder {
    AgentBuilder::new("files")
        .model(model.clone())
        .tool(ReadFile::traced(trace))
        .tool(WriteFile::traced(trace))
        .tool(GetWeather::traced(trace))
}

/// One step calling all three tools, then an answer.
fn call_all_three() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "read_file", r#"{"path":"notes.txt"}"#)
            .tool_call("c2", "write_file", r#"{"path":"out.txt","contents":"hi"}"#)
            .tool_call("c3", "get_weather", r#"{"city":"Oslo"}"#),
        ScriptedStep::new().text("done"),
    ])
}

#[tokio::test]
async fn each_matcher_kind_selects_its_tools() {
    let trace = Trace::new();
    let model = call_all_three();
    let agent = file_agent(&model, &trace)
        .before_tool_call(Matcher::tool("read_file"), probe(&trace, "exact"))
        .before_tool_call(
            Matcher::tools(["write_file", "get_weather"]),
            probe(&trace, "list"),
        )
        .before_tool_call(Matcher::regex("..._file"), probe(&trace, "regex"))
        .before_tool_call(Matcher::regex("weather"), probe(&trace, "substring"))
        .before_tool_call(Matcher::regex("^read"), probe(&trace, "prefix"))
        .before_tool_call(Matcher::regex("^....._file$"), probe(&trace, "anchored"))
        .before_tool_call(Matcher::all(), probe(&trace, "all"))
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "exact(read_file)",
            "regex(read_file)",
            "prefix(read_file)",
            "all(read_file)",
            "read_file(notes.txt)",
            "list(write_file)",
            "regex(write_file)",
            "anchored(write_file)",
            "all(write_file)",
            "write_file(out.txt)",
            "list(get_weather)",
            "substring(get_weather)",
            "all(get_weather)",
            "get_weather(Oslo)",
        ])
    );
}

#[tokio::test]
async fn a_hook_matching_several_tools_receives_their_args_enum() {
    let trace = Trace::new();
    let model = call_all_three();
    let t = trace.clone();
    let agent = file_agent(&model, &trace)
        .before_tool_call(
            Matcher::regex("..._file"),
            Hook::<event::BeforeToolCall<FileCall>>::sync("sandbox", move |ctx| {
                t.push(format!("sandbox({} {})", ctx.tool_name, ctx.input.path()));
                let path = format!("sandbox/{}", ctx.input.path());
                ToolCallDecision::Modify(match &ctx.input {
                    FileCall::Read(_) => FileCall::Read(ReadFileArgs { path }),
                    FileCall::Write(args) => FileCall::Write(WriteFileArgs {
                        path,
                        contents: args.contents.clone(),
                    }),
                })
            }),
        )
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "sandbox(read_file notes.txt)",
            "read_file(sandbox/notes.txt)",
            "sandbox(write_file out.txt)",
            "write_file(sandbox/out.txt)",
            "get_weather(Oslo)",
        ])
    );
    let contents: Vec<&str> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| r.content.as_str())
        .collect();
    assert_eq!(
        contents,
        [
            "contents of sandbox/notes.txt",
            r#"{"path":"sandbox/out.txt","bytes":2}"#,
            r#"{"city":"Oslo","celsius":21}"#,
        ]
    );
}

#[tokio::test]
async fn tool_hooks_of_both_kinds_run_by_priority_then_registration() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":1}"#),
        ScriptedStep::new().text("2"),
    ]);
    let after = |name: &'static str, priority: i32| {
        let trace = trace.clone();
        Hook::<event::AfterToolCall<Value>>::sync(name, move |_| trace.push(name))
            .priority(priority)
    };
    let agent = AgentBuilder::new("calc")
        .model(model)
        .tool(Add::traced(&trace))
        .before_tool_call(Matcher::all(), probe(&trace, "b_zero_first").priority(0))
        .before_tool_call(Matcher::all(), probe(&trace, "b_plus_two").priority(2))
        .before_tool_call(
            Matcher::tool("add"),
            probe(&trace, "b_minus_one").priority(-1),
        )
        .before_tool_call(Matcher::all(), probe(&trace, "b_zero_second"))
        .after_tool_call(Matcher::all(), after("a_plus_one", 1))
        .after_tool_call(Matcher::tool("add"), after("a_minus_three", -3))
        .after_tool_call(Matcher::all(), after("a_zero", 0))
        .build()
        .unwrap();

    let result = agent.run("1+1").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            "b_minus_one(add)",
            "b_zero_first(add)",
            "b_zero_second(add)",
            "b_plus_two(add)",
            "add(1,1)",
            "a_minus_three",
            "a_zero",
            "a_plus_one",
        ])
    );
}

#[tokio::test]
async fn turn_hooks_run_by_priority_then_registration() {
    let trace = Trace::new();
    let model = ScriptedModel::new([ScriptedStep::new().text("ok")]);
    let hook = |name: &'static str, priority: i32| {
        let trace = trace.clone();
        Hook::<event::BeforeStep>::sync(name, move |_| trace.push(name)).priority(priority)
    };
    let agent = AgentBuilder::new("order")
        .model(model)
        .hook(hook("plus_three", 3))
        .hook(hook("zero_first", 0))
        .hook(hook("minus_two", -2))
        .hook(hook("zero_second", 0))
        .build()
        .unwrap();

    let result = agent.run("hi").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&["minus_two", "zero_first", "zero_second", "plus_three"])
    );
}

/// A lookup tool made at run time.
fn lookup_user(trace: &Trace) -> FnTool {
    let trace = trace.clone();
    FnTool::new(
        "lookup_user",
        "Look up a user by name.",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        move |args, _ctx| {
            let trace = trace.clone();
            async move {
                let name = args["name"].as_str().unwrap_or_default().to_owned();
                trace.push(format!("lookup_user({name})"));
                Ok::<_, ToolError>(json!({"name": name, "id": 7}))
            }
        },
    )
}

#[tokio::test]
async fn dynamic_hooks_match_tools_added_for_one_turn() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "lookup_user", r#"{"name":"ada"}"#)
            .tool_call("c2", "add", r#"{"a":1,"b":2}"#),
        ScriptedStep::new().text("found"),
    ]);
    let (t1, t2, t3) = (trace.clone(), trace.clone(), trace.clone());
    let agent = AgentBuilder::new("dyn")
        .model(model.clone())
        .tool(Add::traced(&trace))
        .hook(Hook::<event::BeforeTurn>::sync("add_lookup", move |_| {
            let mut cfg = TurnConfig::default();
            cfg.tools = vec![Arc::new(lookup_user(&t1))];
            cfg
        }))
        .before_tool_call(
            Matcher::regex("^lookup_").dynamic(),
            Hook::<AnyBefore>::sync("dyn_before", move |ctx| {
                t2.push(format!(
                    "dyn_before({} dynamic={} name={})",
                    ctx.tool_name, ctx.dynamic, ctx.input["name"]
                ));
            }),
        )
        .after_tool_call(
            Matcher::regex("^lookup_").dynamic(),
            Hook::<event::AfterToolCall<Value>>::sync("dyn_after", move |ctx| {
                t3.push(format!(
                    "dyn_after({} {} {})",
                    ctx.tool_name,
                    ctx.outcome.kind(),
                    ctx.output_json().unwrap_or_default()
                ));
            }),
        )
        .build()
        .unwrap();

    let result = agent.run("who is ada?").await;

    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        lines(&[
            r#"dyn_before(lookup_user dynamic=true name="ada")"#,
            "lookup_user(ada)",
            r#"dyn_after(lookup_user executed {"id":7,"name":"ada"})"#,
            "add(1,2)",
        ])
    );
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(offered, ["add", "lookup_user"]);
}

#[tokio::test]
async fn a_dynamic_hook_that_matches_nothing_never_fires() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "add", r#"{"a":1,"b":2}"#),
        ScriptedStep::new().text("3"),
    ]);
    let agent = AgentBuilder::new("dyn")
        .model(model)
        .tool(Add::traced(&trace))
        .before_tool_call(Matcher::tool("plugin_tool").dynamic(), probe(&trace, "dyn"))
        .hook(Hook::<event::BeforeStep>::sync("noop", |_| {
            StepConfig::default()
        }))
        .build()
        .unwrap();
    let result = agent.run("1+2").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(trace.take(), lines(&["add(1,2)"]));
}

// ---- Build errors ----

fn build_error(builder: AgentBuilder) -> BuildError {
    match builder.build() {
        Ok(agent) => panic!("expected a build error, built {agent:?}"),
        Err(error) => error,
    }
}

fn no_model() -> ScriptedModel {
    ScriptedModel::new([])
}

#[test]
fn a_matcher_matching_no_tool_is_a_build_error_listing_the_tools() {
    let trace = Trace::new();
    let error = build_error(
        file_agent(&no_model(), &trace)
            .before_tool_call(Matcher::tool("delete_file"), probe(&trace, "guard"))
            .after_tool_call(
                Matcher::regex("^file"),
                Hook::<event::AfterToolCall<Value>>::sync("audit", |_| {}),
            ),
    );
    assert_eq!(
        error.problems,
        lines(&[
            "hook `guard`: `tool = \"delete_file\"` matches none of the agent's tools \
             (read_file, write_file, get_weather); add `dynamic` if tools are added at run time",
            "hook `audit`: `match = \"^file\"` matches none of the agent's tools \
             (read_file, write_file, get_weather); add `dynamic` if tools are added at run time",
        ])
    );
    assert!(
        error
            .to_string()
            .starts_with("the agent cannot be built: hook `guard`: "),
        "{error}"
    );
}

/// The message of a trybuild snapshot's first error (`tests/ui/<fixture>.stderr`).
fn macro_message(fixture: &str) -> String {
    let path = format!("{}/ui/{fixture}.stderr", env!("CARGO_MANIFEST_DIR"));
    let stderr = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let first = stderr.lines().next().unwrap_or_default();
    first
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("{path} starts with an error: {first}"))
        .to_owned()
}

#[test]
fn the_macro_and_the_builder_word_a_matcher_matching_no_tool_alike() {
    // The same agent as `tests/ui/agent/fail/matcher_matches_no_tool.rs`, built by hand.
    let trace = Trace::new();
    let error = build_error(
        file_agent(&no_model(), &trace)
            .before_tool_call(Matcher::regex("^delete_"), probe(&trace, "guard")),
    );
    assert_eq!(
        error.problems,
        [macro_message("agent/fail/matcher_matches_no_tool")]
    );
    // `tests/ui/agent/fail/matcher_tool_not_listed.rs`: the macro says the builder's sentence,
    // then what to do about the name.
    let error = build_error(
        AgentBuilder::new("clock")
            .model(no_model())
            .before_tool_call(Matcher::tool("current_time"), probe(&trace, "guard")),
    );
    let from_macro = macro_message("agent/fail/matcher_tool_not_listed");
    assert!(
        from_macro.starts_with(&format!("{}; ", error.problems[0])),
        "macro: {from_macro}\nbuilder: {}",
        error.problems[0]
    );
}

#[test]
fn dynamic_opts_a_matcher_out_of_the_build_check() {
    let trace = Trace::new();
    let built = file_agent(&no_model(), &trace)
        .before_tool_call(
            Matcher::tool("delete_file").dynamic(),
            probe(&trace, "guard"),
        )
        .before_tool_call(Matcher::regex("^plugin_").dynamic(), probe(&trace, "p"))
        .build();
    assert!(built.is_ok(), "{built:?}");
}

#[test]
fn matcher_all_on_an_agent_without_tools_needs_dynamic() {
    let trace = Trace::new();
    let error = build_error(
        AgentBuilder::new("bare")
            .model(no_model())
            .before_tool_call(Matcher::all(), probe(&trace, "every")),
    );
    assert_eq!(
        error.problems,
        lines(&[
            "hook `every`: `every tool` matches none of the agent's tools (it has none); add `dynamic` if tools are added at run time"
        ])
    );
    // The recorder hooks of `tests` use `Matcher::all().dynamic()`.
    let built = AgentBuilder::new("bare")
        .model(no_model())
        .record_all(&trace)
        .build();
    assert!(built.is_ok(), "{built:?}");
}

#[test]
fn an_invalid_regex_is_a_build_error() {
    let trace = Trace::new();
    let error = build_error(
        file_agent(&no_model(), &trace)
            .before_tool_call(Matcher::regex("(read_file").dynamic(), probe(&trace, "bad")),
    );
    assert_eq!(error.problems.len(), 1, "{error}");
    assert!(
        error.problems[0].starts_with("hook `bad`: invalid regex `(read_file`: "),
        "{error}"
    );
}

#[test]
fn duplicate_tool_names_are_a_build_error() {
    let error = build_error(
        AgentBuilder::new("dup")
            .model(no_model())
            .tool(Add::default())
            .tool(ReadFile::default())
            .tool(Add::default()),
    );
    assert_eq!(error.problems, lines(&["duplicate tool name `add`"]));
}

#[test]
fn an_invalid_tool_name_is_a_build_error() {
    let tool = |name: &str| {
        FnTool::new(
            name,
            "A tool.",
            json!({"type": "object"}),
            |args, _ctx| async move { Ok::<_, ToolError>(args) },
        )
    };
    let error = build_error(
        AgentBuilder::new("names")
            .model(no_model())
            .dyn_tool(tool("has space"))
            .dyn_tool(tool(""))
            .dyn_tool(tool(&"x".repeat(65)))
            .dyn_tool(tool("ok-name_64"))
            .dyn_tool(tool(&"y".repeat(64))),
    );
    assert_eq!(
        error.problems,
        vec![
            "invalid tool name `has space`: use 1 to 64 of `[A-Za-z0-9_-]`".to_owned(),
            "invalid tool name ``: use 1 to 64 of `[A-Za-z0-9_-]`".to_owned(),
            format!(
                "invalid tool name `{}`: use 1 to 64 of `[A-Za-z0-9_-]`",
                "x".repeat(65)
            ),
        ]
    );
}

#[test]
fn parameters_that_are_not_an_object_schema_are_a_build_error() {
    // Anthropic requires `"type": "object"` on a tool's input schema, OpenAI an object schema:
    // offered, any other fails every model call of the agent.
    let tool = |name: &str, schema: serde_json::Value| {
        FnTool::new(name, "A tool.", schema, |args, _ctx| async move {
            Ok::<_, ToolError>(args)
        })
    };
    let error = build_error(
        AgentBuilder::new("schemas")
            .model(no_model())
            .dyn_tool(tool("text", json!({"type": "string"})))
            .dyn_tool(tool("anything", json!({})))
            .dyn_tool(tool("yes", json!(true)))
            .dyn_tool(tool("fine", json!({"type": "object"}))),
    );
    let problem = |name: &str| {
        format!(
            "tool `{name}`: its parameters schema must be an object schema, `{{\"type\": \"object\", \"properties\": {{...}}}}` (providers refuse any other)"
        )
    };
    assert_eq!(
        error.problems,
        [problem("text"), problem("anything"), problem("yes")]
    );
}

#[test]
fn a_typed_hook_that_cannot_carry_a_matched_tools_args_is_a_build_error() {
    let trace = Trace::new();
    let error = build_error(
        file_agent(&no_model(), &trace)
            .before_tool_call(
                Matcher::regex("_file"),
                Hook::<event::BeforeToolCall<ReadFileArgs>>::sync("reader", |_| {}),
            )
            .after_tool_call(
                Matcher::all(),
                Hook::<event::AfterToolCall<FileCall>>::sync("files_only", |_| {}),
            ),
    );
    assert_eq!(
        error.problems,
        lines(&[
            "hook `reader`: its input type cannot carry the arguments of tool `write_file`",
            "hook `files_only`: its input type cannot carry the arguments of tool `get_weather`",
        ])
    );
}

#[test]
fn a_builder_without_a_model_is_a_build_error() {
    let error = build_error(AgentBuilder::new("mute").tool(Add::default()));
    assert_eq!(
        error.problems,
        lines(&["no model: call `.model(...)` on the builder"])
    );
    // Listed with the builder's other problems, not alone.
    let error = build_error(AgentBuilder::new("mute").max_steps(0));
    assert_eq!(
        error.problems,
        lines(&[
            "no model: call `.model(...)` on the builder",
            "`max_steps` must be at least 1",
        ])
    );
}

#[test]
fn limits_of_zero_are_build_errors_not_quietly_one() {
    let error = build_error(
        AgentBuilder::new("zero")
            .model(no_model())
            .max_steps(0)
            .tool_concurrency(0),
    );
    assert_eq!(
        error.problems,
        lines(&[
            "`max_steps` must be at least 1",
            "`tool_concurrency` must be at least 1 (1 runs a step's tool calls one at a time)",
        ])
    );
}

/// An empty approval key would seal every waiting call with a token anyone can make (an
/// HMAC under no secret), while the agent refuses answers without one as if they were
/// safe: a build error, as a key read from an unset variable would give.
#[test]
fn an_empty_approval_key_is_a_build_error() {
    let error = build_error(
        AgentBuilder::new("keyless")
            .model(no_model())
            .approval_key(String::new()),
    );
    assert_eq!(
        error.problems,
        lines(&[
            "`approval_key` is empty: anyone could make its tokens; give a secret key (32 random bytes, say)"
        ])
    );
}

/// A zero timeout (the agent's `tool_timeout`, a tool's own, a hook's or an extension's) is a
/// build error naming it: everything it bounds would time out at once. So is a sync hook's
/// timeout, and a timeout of a tool that runs on the spot: nothing can stop what runs inline.
/// The macros refuse `timeout_ms = 0`, and `timeout_ms` on a sync hook or a plain `fn` tool,
/// the same way.
#[test]
fn a_zero_timeout_is_a_build_error() {
    use std::time::Duration;
    let zero = Duration::ZERO;
    let instant = FnTool::sync(
        "instant",
        "Answers at once.",
        json!({"type": "object"}),
        |_, _| Ok(Value::Null),
    )
    .with_timeout(zero);
    // A tool that runs on the spot runs inline too; an async one's limit applies.
    let inline_tool = FnTool::sync(
        "inline_tool",
        "Answers at once.",
        json!({"type": "object"}),
        |_, _| Ok(Value::Null),
    )
    .with_timeout(Duration::from_millis(250));
    let async_tool = FnTool::new(
        "async_tool",
        "Waits.",
        json!({"type": "object"}),
        |_, _| async { Ok(Value::Null) },
    )
    .with_timeout(Duration::from_millis(250));
    let gate =
        Hook::<AnyBefore>::new_async("gate", async |_: &ToolCallContext<Value>| {}).timeout(zero);
    let meter =
        Hook::<event::OnChunk>::new_async("meter", async |_: &ChunkContext| {}).timeout(zero);
    // A sync hook runs inline: no timeout, zero or not, can stop it.
    let inline = Hook::<event::OnChunk>::sync("inline", |_| {}).timeout(zero);
    let bounded = Hook::<AnyBefore>::sync("bounded", |_| {}).timeout(Duration::from_millis(250));
    let extension =
        agent_core::Extension::new("audit", |_, _| async { Ok(Value::Null) }).timeout(zero);
    let error = build_error(
        AgentBuilder::new("hasty")
            .model(no_model())
            .tool_timeout(zero)
            .dyn_tool(instant)
            .dyn_tool(inline_tool)
            .dyn_tool(async_tool)
            .before_tool_call(Matcher::all(), gate)
            .hook(meter)
            .hook(inline)
            .before_tool_call(Matcher::all(), bounded)
            .extension(extension),
    );
    assert_eq!(
        error.problems,
        lines(&[
            "hook `gate`: its timeout is zero, so every run would time out at once; give a positive limit, or none",
            "hook `meter`: its timeout is zero, so every run would time out at once; give a positive limit, or none",
            "hook `inline`: a timeout applies to async hooks; a sync hook runs inline and cannot be stopped: make it async, or remove its timeout",
            "hook `bounded`: a timeout applies to async hooks; a sync hook runs inline and cannot be stopped: make it async, or remove its timeout",
            "extension `audit`: its timeout is zero, so every run would time out at once; give a positive limit",
            "`tool_timeout` is zero, so every tool call would time out at once; give a positive limit, or none",
            "tool `instant`: its timeout is zero, so every call would time out at once; give a positive limit, or none",
            "tool `inline_tool`: a timeout applies to async tools; a tool that runs on the spot (`FnTool::sync`, `Tool::RUNS_NOW`) runs inline and cannot be stopped: make it async, or remove its timeout",
        ])
    );
    // A limit of a nanosecond is the user's to give.
    let tiny = Duration::from_nanos(1);
    assert!(
        AgentBuilder::new("hasty")
            .model(no_model())
            .tool_timeout(tiny)
            .build()
            .is_ok()
    );
}
