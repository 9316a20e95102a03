//! A tool call routed through a dynamic matcher to an MCP server over stdio, beside the same
//! call to a native tool: a whole two-step turn each (`cargo bench -p agent-mcp`; needs
//! `node`). The server is a small node script answering `echo` at once, so the difference is
//! the MCP round trip (JSON-RPC over pipes, two process hops) and the dynamic tool's plumbing.

use std::time::Duration;

use agent_core::{
    Agent, AgentBuilder, FnTool, Hook, Matcher, ScriptedModel, ScriptedStep, ToolError, event,
};
use agent_mcp::McpServer;
use divan::{Bencher, black_box};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

fn main() {
    divan::main();
}

const SERVER: &str = r#"
const readline = require('readline');
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') send({ id: m.id, result: { protocolVersion: m.params.protocolVersion,
    capabilities: { tools: {} }, serverInfo: { name: 'echo', version: '1.0.0' } } });
  else if (m.method === 'tools/list') send({ id: m.id, result: { tools: [
    { name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' } }] } });
  else if (m.method === 'tools/call') send({ id: m.id, result: { content: [
    { type: 'text', text: JSON.stringify(m.params.arguments) }] } });
  else if (m.id !== undefined) send({ id: m.id, result: {} });
});
"#;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn script() -> Vec<ScriptedStep> {
    vec![
        ScriptedStep::new().tool_call("c1", "echo", r#"{"text":"hi"}"#),
        ScriptedStep::new().text("done"),
    ]
}

/// A gate on every tool, so both turns pay for one dynamic hook.
fn gated(builder: AgentBuilder) -> Agent {
    builder
        .before_tool_call(
            Matcher::regex("^echo$").dynamic(),
            Hook::<event::BeforeToolCall<Value>>::sync("gate", |ctx| {
                black_box(&ctx.input);
            }),
        )
        .build()
        .expect("agent builds")
}

#[divan::bench(sample_count = 300)]
fn native_tool_call(bencher: Bencher) {
    let rt = runtime();
    let agent = || {
        let echo = FnTool::new(
            "echo",
            "Echoes.",
            json!({"type": "object"}),
            |args, _| async move { Ok::<Value, ToolError>(json!(args.to_string())) },
        );
        gated(
            AgentBuilder::new("native")
                .model(ScriptedModel::new(script()))
                .dyn_tool(echo),
        )
    };
    bencher
        .with_inputs(agent)
        .bench_local_refs(|agent| rt.block_on(agent.run("go")));
}

#[divan::bench(sample_count = 300)]
fn mcp_tool_call(bencher: Bencher) {
    let rt = runtime();
    let path = std::env::temp_dir().join(format!("echo-mcp-{}.js", std::process::id()));
    std::fs::write(&path, SERVER).expect("write the server script");
    let mut command = tokio::process::Command::new("node");
    command.arg(&path);
    let server = rt
        .block_on(McpServer::stdio("echo", command, Duration::from_secs(20)))
        .expect("the echo server starts (is node on PATH?)");
    let agent =
        || gated(server.add_tools(AgentBuilder::new("mcp").model(ScriptedModel::new(script()))));
    let check = rt.block_on(agent().run("go"));
    assert_eq!(check.steps[0].tool_results[0].content, r#"{"text":"hi"}"#);
    bencher
        .with_inputs(agent)
        .bench_local_refs(|agent| rt.block_on(agent.run("go")));
}
