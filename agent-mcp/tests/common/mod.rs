//! What the tests of a reply over the size limit share: the turn that calls server `big`'s
//! `lookup` once per step of `model`, and what its calls read.

use agent_core::{AgentBuilder, ScriptedModel};
use agent_mcp::McpServer;

/// The result of a call whose reply was over the 16 MiB limit, as the model reads it.
pub const TOO_LARGE: &str = "MCP server `big`: the reply to `lookup` was larger than the 16 MiB \
                             limit on one message, so it was dropped; ask for less at a time";

/// Runs a turn of an agent with `server`'s tools on `model`, which must complete, and returns
/// each tool call's result as the model read it: its text, and whether it is an error.
pub async fn results_read(server: &McpServer, model: ScriptedModel) -> Vec<(String, bool)> {
    let agent = server
        .add_tools(AgentBuilder::new("big").model(model))
        .build()
        .unwrap();
    let result = agent.run("look it up").await;
    assert!(result.is_completed(), "{:?}", result.error);
    let records = result.steps.iter().flat_map(|step| &step.tool_results);
    records
        .map(|read| (read.content.to_string(), read.is_error))
        .collect()
}
