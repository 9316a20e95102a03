//! `#[hook]` end to end: matchers resolved at compile time (exact, list, unanchored regex),
//! priority order, typed inputs and outputs, free hooks attached with `hooks(...)`, and their
//! matchers checked when the agent is built.

use std::sync::Arc;

use agent_core::{
    AgentBuilder, AgentSpec, ScriptedModel, ScriptedStep, ToolCallContext, ToolCallDecision,
    ToolCallResultContext, TurnStatus, agent, hook, tool,
};
use serde_json::Value;
use tests::Trace;

struct Desk {
    trace: Trace,
}

/// Current weather for a city.
#[tool]
fn get_weather(city: String) -> String {
    format!("sunny in {city}")
}

static AUDITED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[hook(after_tool_call)]
fn audit_all(ctx: &ToolCallResultContext<Value>) {
    if ctx.tool_name.as_ref() == "get_weather" {
        AUDITED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A desk with files and the weather.
#[agent(tools(get_weather), hooks(audit_all))]
impl Desk {
    /// Read a file.
    #[tool]
    fn read_file(&self, path: String) -> String {
        self.trace.push(format!("run read_file({path})"));
        format!("<{path}>")
    }

    /// Write a file.
    #[tool]
    fn write_file(&self, path: String, contents: String) -> usize {
        self.trace.push(format!("run write_file({path})"));
        contents.len()
    }

    /// Delete a file.
    #[tool]
    fn delete_file(&self, path: String) -> bool {
        self.trace.push(format!("run delete_file({path})"));
        true
    }

    // Unanchored: `..._file` matches every `*_file` tool, not `get_weather`.
    #[hook(before_tool_call, match = "..._file", priority = 2)]
    fn files_late(&self, ctx: &ToolCallContext<AnyFile>) {
        let which = match &ctx.input {
            AnyFile::ReadFile(_) => "read",
            AnyFile::WriteFile(_) => "write",
            AnyFile::DeleteFile(_) => "delete",
        };
        self.trace.push(format!("files_late({which})"));
    }

    // Anchored regex: only `write_file`; exactly one tool, so its own args type.
    #[hook(before_tool_call, match = "^write_", priority = -1)]
    fn writes_first(
        &self,
        ctx: &ToolCallContext<desk_tools::WriteFileArgs>,
    ) -> ToolCallDecision<desk_tools::WriteFileArgs> {
        self.trace.push(format!("writes_first({})", ctx.input.path));
        ToolCallDecision::Modify(desk_tools::WriteFileArgs {
            path: format!("safe/{}", ctx.input.path),
            contents: ctx.input.contents.clone(),
        })
    }

    #[hook(before_tool_call, tools = ["delete_file", "get_weather"])]
    fn list(&self, ctx: &ToolCallContext<DeleteOrWeather>) -> ToolCallDecision<DeleteOrWeather> {
        match &ctx.input {
            DeleteOrWeather::DeleteFile(args) => {
                self.trace
                    .push(format!("list blocks delete({})", args.path));
                ToolCallDecision::block("deleting is not allowed")
            }
            DeleteOrWeather::GetWeather(args) => {
                self.trace.push(format!("list({})", args.city));
                ToolCallDecision::Allow
            }
        }
    }

    #[hook(after_tool_call, tool = "write_file")]
    fn written(&self, ctx: &ToolCallResultContext<desk_tools::WriteFileArgs, usize>) {
        self.trace.push(format!(
            "written model={} effective={} bytes={:?}",
            ctx.model_input().path,
            ctx.effective_input.path,
            ctx.output()
        ));
    }

    #[hook(after_tool_call, tool = "get_weather")]
    async fn weather_seen(
        &self,
        ctx: &ToolCallResultContext<get_weather_tool::GetWeatherArgs, String>,
    ) {
        tokio::task::yield_now().await;
        self.trace.push(format!("weather_seen {:?}", ctx.output()));
    }
}

#[tokio::test]
async fn matchers_priorities_and_typed_views_in_order() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "read_file", r#"{"path":"a"}"#)
            .tool_call("c2", "write_file", r#"{"path":"b","contents":"xyz"}"#)
            .tool_call("c3", "delete_file", r#"{"path":"c"}"#)
            .tool_call("c4", "get_weather", r#"{"city":"Oslo"}"#),
        ScriptedStep::new().text("done"),
    ]);
    let trace = Trace::new();
    let desk = Arc::new(Desk {
        trace: trace.clone(),
    });
    let agent = Desk::shared_builder(desk)
        .model(model)
        .tool_concurrency(1)
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        [
            "files_late(read)",
            "run read_file(a)",
            "writes_first(b)",
            "files_late(write)",
            "run write_file(safe/b)",
            "written model=b effective=safe/b bytes=Some(3)",
            "list blocks delete(c)",
            "list(Oslo)",
            "weather_seen Some(\"sunny in Oslo\")",
        ]
    );
    assert_eq!(
        AUDITED.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the free hook attached with hooks(...) ran"
    );
    let outcomes: Vec<&str> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| r.outcome.as_str())
        .collect();
    assert_eq!(outcomes, ["executed", "executed", "blocked", "executed"]);
}

#[hook(before_tool_call, tool = "missing_tool")]
fn guards_a_missing_tool(ctx: &ToolCallContext<Value>) {
    let _ = ctx;
}

#[hook(before_tool_call, match = "^dyn_", dynamic)]
fn dynamic_guard(ctx: &ToolCallContext<Value>) -> ToolCallDecision<Value> {
    ToolCallDecision::block(format!("{} is blocked", ctx.tool_name))
}

#[test]
fn a_free_hook_matcher_is_checked_when_the_agent_is_built() {
    let error = AgentBuilder::new("a")
        .model(ScriptedModel::new([]))
        .tool(get_weather_tool::GetWeather)
        .hooks(GuardsAMissingTool)
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        [
            "hook `guards_a_missing_tool`: `tool = \"missing_tool\"` matches none of the agent's tools (get_weather); add `dynamic` if tools are added at run time"
        ]
    );
    assert!(
        AgentBuilder::new("a")
            .model(ScriptedModel::new([]))
            .hooks(DynamicGuard)
            .build()
            .is_ok()
    );
}

#[tokio::test]
async fn a_dynamic_regex_matches_tools_added_at_run_time() {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "dyn_echo", r#"{"x":1}"#),
        ScriptedStep::new().text("done"),
    ]);
    let echo = agent_core::FnTool::new(
        "dyn_echo",
        "Echo.",
        serde_json::json!({"type": "object"}),
        |args, _| async move { Ok(args) },
    );
    let agent = AgentBuilder::new("a")
        .model(model)
        .dyn_tool(echo)
        .hooks(DynamicGuard)
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_eq!(
        result.steps[0].tool_results[0].content,
        "dyn_echo is blocked"
    );
}

struct Files {
    trace: Trace,
}

/// A JSON hook with a regex, not `dynamic`: it must match a static tool when the macro
/// expands, and it also gates the tools added at run time that its regex matches.
#[agent]
impl Files {
    /// Read a file.
    #[tool]
    fn read_file(&self, path: String) -> String {
        path
    }

    #[hook(before_tool_call, match = "_file$")]
    fn sandbox(&self, ctx: &ToolCallContext<Value>) -> ToolCallDecision<Value> {
        self.trace.push(format!("sandbox({})", ctx.tool_name));
        if &*ctx.tool_name == "delete_file" {
            ToolCallDecision::block("deleting is not allowed")
        } else {
            ToolCallDecision::Allow
        }
    }
}

#[tokio::test]
async fn a_json_hooks_regex_in_an_agent_gates_tools_added_at_run_time() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "read_file", r#"{"path":"a"}"#),
        ScriptedStep::new().tool_call("c2", "delete_file", "{}"),
        ScriptedStep::new().tool_call("c3", "list_dir", "{}"),
        ScriptedStep::new().text("done"),
    ]);
    let tool = |name: &'static str| {
        let ran = trace.clone();
        agent_core::FnTool::new(name, "A tool.", serde_json::json!({"type": "object"}), {
            move |_, _| {
                ran.push(format!("run {name}"));
                async { Ok(serde_json::json!("ok")) }
            }
        })
    };
    let agent = Files {
        trace: trace.clone(),
    }
    .builder()
    .model(model)
    .dyn_tool(tool("delete_file"))
    .dyn_tool(tool("list_dir"))
    .build()
    .unwrap();
    let result = agent.run("tidy up").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        ["sandbox(read_file)", "sandbox(delete_file)", "run list_dir"]
    );
    assert_eq!(
        result.steps[1].tool_results[0].content,
        "deleting is not allowed"
    );
}

struct Drawer {
    trace: Trace,
}

/// A drawer whose `shred` tool is added on the builder, at run time for the macro.
#[agent]
impl Drawer {
    /// Open the drawer.
    #[tool]
    fn open(&self) -> String {
        "open".to_owned()
    }

    // Names the macro cannot see: `shred` is added on the builder.
    #[hook(before_tool_call, tool = "shred", dynamic)]
    fn no_shredding(&self, ctx: &ToolCallContext<Value>) -> ToolCallDecision<Value> {
        self.trace.push(format!("no_shredding({})", ctx.tool_name));
        ToolCallDecision::block("shredding is not allowed")
    }

    #[hook(after_tool_call, tools = ["open", "shred"], dynamic)]
    fn listed(&self, ctx: &ToolCallResultContext<Value>) {
        self.trace.push(format!("listed({})", ctx.tool_name));
    }

    #[hook(after_tool_call, dynamic)]
    fn every(&self, ctx: &ToolCallResultContext<Value>) {
        self.trace.push(format!("every({})", ctx.tool_name));
    }
}

#[tokio::test]
async fn dynamic_names_in_an_agent_match_tools_added_at_run_time() {
    let trace = Trace::new();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "open", "{}"),
        ScriptedStep::new().tool_call("c2", "shred", r#"{"page":1}"#),
        ScriptedStep::new().text("done"),
    ]);
    let shredded = trace.clone();
    let shred = agent_core::FnTool::new(
        "shred",
        "Shred a page.",
        serde_json::json!({"type": "object"}),
        move |_, _| {
            shredded.push("run shred");
            async { Ok(serde_json::json!("shredded")) }
        },
    );
    let agent = Drawer {
        trace: trace.clone(),
    }
    .builder()
    .model(model)
    .dyn_tool(shred)
    .build()
    .unwrap();
    let result = agent.run("tidy up").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        trace.take(),
        [
            "listed(open)",
            "every(open)",
            "no_shredding(shred)",
            "listed(shred)",
            "every(shred)",
        ]
    );
    assert_eq!(
        result.steps[1].tool_results[0].content,
        "shredding is not allowed"
    );
}

/// An agent whose hooks are methods, in a module without the prelude: what `#[agent]` and
/// `#[hook]` generate names every trait by its path.
#[no_implicit_prelude]
mod without_prelude {
    use ::agent_core::{ChunkContext, StepRecord, agent};

    #[derive(::std::default::Default)]
    pub(super) struct Counter {
        pub(super) seen: ::std::sync::atomic::AtomicUsize,
    }

    /// Counts its chunks and steps.
    #[agent]
    impl Counter {
        #[hook(on_chunk)]
        async fn chunk(&self, _ctx: &ChunkContext) {
            self.seen
                .fetch_add(1, ::std::sync::atomic::Ordering::SeqCst);
        }

        #[hook(on_step_finish)]
        fn step(&self, _record: &StepRecord) {
            self.seen
                .fetch_add(10, ::std::sync::atomic::Ordering::SeqCst);
        }
    }
}

#[tokio::test]
async fn method_hooks_compile_in_a_module_without_the_prelude() {
    let counter = Arc::new(without_prelude::Counter::default());
    let agent = without_prelude::Counter::shared_builder(counter.clone())
        .model(ScriptedModel::new([ScriptedStep::new().text("hi")]))
        .build()
        .unwrap();
    assert_eq!(agent.run("go").await.status, TurnStatus::Completed);
    assert_eq!(counter.seen.load(std::sync::atomic::Ordering::SeqCst), 11);
}
