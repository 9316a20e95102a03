//! `notifications/tools/list_changed`: a small MCP server (a node script speaking JSON-RPC over
//! stdio) adds a tool when one is called and says so; the agent's next turn offers it.

use std::time::Duration;

use agent_core::{AgentBuilder, ScriptedModel, ScriptedStep};
use agent_mcp::McpServer;

/// The server. Given a number N (`node server.js N`), it fails its Nth listing with a JSON-RPC
/// error, and lists its tools at the others.
const SERVER: &str = r#"
const readline = require('readline');
let tools = [{ name: 'first', description: 'The first tool.', inputSchema: { type: 'object' } }];
const failing = Number(process.argv[2] || 0);
let lists = 0;
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.method === 'initialize') {
    send({ id: message.id, result: {
      protocolVersion: message.params.protocolVersion,
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: 'changing', version: '1.0.0' },
    } });
  } else if (message.method === 'tools/list') {
    lists += 1;
    if (lists === failing) {
      send({ id: message.id, error: { code: -32603, message: 'busy, try again' } });
    } else {
      send({ id: message.id, result: { tools } });
    }
  } else if (message.method === 'tools/call') {
    if (!tools.some((tool) => tool.name === 'second')) {
      tools = [...tools, { name: 'second', description: 'Added later.', inputSchema: { type: 'object' } }];
    }
    send({ id: message.id, result: { content: [{ type: 'text', text: 'called ' + message.params.name }] } });
    send({ method: 'notifications/tools/list_changed' });
  } else if (message.id !== undefined) {
    send({ id: message.id, result: {} });
  }
});
"#;

/// Starts [`SERVER`] with these arguments over stdio as `name` (its file is gone once it runs).
async fn node_server(name: &str, args: &[&str]) -> McpServer {
    let path = std::env::temp_dir().join(format!("{name}-mcp-{}.js", std::process::id()));
    std::fs::write(&path, SERVER).unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg(&path).args(args);
    let server = McpServer::stdio(name, command, Duration::from_secs(20)).await;
    let _ = std::fs::remove_file(&path);
    server.expect("the server starts")
}

/// Whether the server said its tools changed within 2 s (the notification arrives on the
/// connection's own task).
async fn said_changed(server: &McpServer) -> bool {
    for _ in 0..200 {
        if server.tools_changed() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// The tools offered in the model's request `n`.
fn offered(model: &ScriptedModel, n: usize) -> Vec<String> {
    model.requests()[n]
        .tools
        .iter()
        .map(|tool| tool.name.clone())
        .collect()
}

#[tokio::test]
async fn a_turn_after_list_changed_offers_the_new_tool() {
    let server = node_server("changing", &[]).await;
    assert_eq!(server.tool_names(), ["first"]);
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "first", "{}"),
        ScriptedStep::new().text("Called."),
        ScriptedStep::new().text("I see a new tool."),
    ]);
    let conversation = server
        .add_tools(AgentBuilder::new("changing").model(model.clone()))
        .build()
        .unwrap()
        .conversation();
    let first = conversation.run("call first").await;
    assert_eq!(first.steps[0].tool_results[0].content, "called first");
    assert!(
        said_changed(&server).await,
        "the server said its tools changed"
    );
    assert_eq!(server.tool_names(), ["first"], "not listed again yet");
    // The next turn's before_turn lists them again.
    conversation.run("anything new?").await;
    assert_eq!(server.tool_names(), ["first", "second"]);
    assert_eq!(offered(&model, 2), ["first", "second"]);
}

#[tokio::test]
async fn a_listing_that_fails_after_list_changed_is_tried_again_next_turn() {
    let server = node_server("flaky", &["2"]).await;
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "first", "{}"),
        ScriptedStep::new().text("Called."),
        ScriptedStep::new().text("Still the old tools."),
        ScriptedStep::new().text("I see a new tool."),
    ]);
    let conversation = server
        .add_tools(AgentBuilder::new("flaky").model(model.clone()))
        .build()
        .unwrap()
        .conversation();
    conversation.run("call first").await;
    assert!(
        said_changed(&server).await,
        "the server said its tools changed"
    );
    // The listing fails: the turn keeps the last list, and the tools stay marked as changed.
    conversation.run("anything new?").await;
    assert_eq!(server.tool_names(), ["first"]);
    assert!(server.tools_changed(), "to be listed again");
    conversation.run("and now?").await;
    assert_eq!(server.tool_names(), ["first", "second"]);
    assert_eq!(offered(&model, 3), ["first", "second"]);
}
