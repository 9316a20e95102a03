use agent_core::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

struct Add;

impl Tool for Add {
    const NAME: &'static str = "add";
    const DESCRIPTION: &'static str = "Add two numbers.";
    type Args = AddArgs;
    type Output = i64;
    fn schema() -> &'static serde_json::Value {
        static S: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        S.get_or_init(schema_for::<AddArgs>)
    }
    async fn call(&self, args: AddArgs, _ctx: ToolContext) -> Result<i64, ToolError> {
        Ok(args.a + args.b)
    }
}

impl ToolInput for AddArgs {
    type Output = i64;
    fn accepts(tool: &str) -> bool {
        tool == "add"
    }
    fn from_args(tool: &str, args: &AnyValue) -> Option<Self> {
        __private::args_from(tool, "add", args)
    }
    fn into_args(self, tool: &dyn DynTool) -> Result<AnyValue, String> {
        __private::args_into(self, "add", tool)
    }
}

#[tokio::test]
async fn smoke() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .text("let me add")
            .tool_call("c1", "add", r#"{"a":2,"b":3}"#)
            .tool_call("c2", "nope", "{}"),
        ScriptedStep::new().text("5"),
    ]);
    let agent = AgentBuilder::new("calc")
        .model(model.clone())
        .tool(Add)
        .before_tool_call(
            Matcher::tool("add"),
            Hook::<event::BeforeToolCall<AddArgs>>::sync("double", |ctx| {
                ToolCallDecision::Modify(AddArgs {
                    a: ctx.input.a * 2,
                    b: ctx.input.b,
                })
            }),
        )
        .after_tool_call(
            Matcher::tool("add"),
            Hook::<event::AfterToolCall<AddArgs, i64>>::sync("check", |ctx| {
                assert_eq!(ctx.output(), Some(&7));
                assert_eq!(ctx.model_input.a, 2);
            }),
        )
        .build()
        .unwrap();
    let result = agent.run("2+3?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.text, "5");
    assert_eq!(result.steps[0].tool_results[0].content, "7");
    assert!(
        result.steps[0].tool_results[1]
            .content
            .contains("unknown tool `nope`")
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages.len(), 4);
}
