//! `notifications/tools/list_changed`: a small MCP server (a node script speaking JSON-RPC over
//! stdio) adds a tool when one is called and says so; the agent's next turn offers it.

use std::time::Duration;

use agent_core::{AgentBuilder, ScriptedModel, ScriptedStep};
use agent_mcp::McpServer;

const SERVER: &str = r#"
const readline = require('readline');
let tools = [{ name: 'first', description: 'The first tool.', inputSchema: { type: 'object' } }];
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
    send({ id: message.id, result: { tools } });
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

/// Starts `script`, a node MCP server, over stdio as `name` (its file is gone once it runs).
async fn node_server(name: &str, script: &str) -> McpServer {
    let path = std::env::temp_dir().join(format!("{name}-mcp-{}.js", std::process::id()));
    std::fs::write(&path, script).unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg(&path);
    let server = McpServer::stdio(name, command, Duration::from_secs(20)).await;
    let _ = std::fs::remove_file(&path);
    server.expect("the server starts")
}

#[tokio::test]
async fn a_turn_after_list_changed_offers_the_new_tool() {
    let server = node_server("changing", SERVER).await;
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
    // The notification arrives on the connection's own task.
    let mut changed = false;
    for _ in 0..200 {
        if server.tools_changed() {
            changed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(changed, "the server said its tools changed");
    assert_eq!(server.tool_names(), ["first"], "not listed again yet");
    // The next turn's before_turn lists them again.
    conversation.run("anything new?").await;
    assert_eq!(server.tool_names(), ["first", "second"]);
    let offered: Vec<String> = model.requests()[2]
        .tools
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert_eq!(offered, ["first", "second"]);
}

/// A server that says its tools changed, then fails the first listing that follows (a JSON-RPC
/// error), and lists them after.
const FLAKY: &str = r#"
const readline = require('readline');
let tools = [{ name: 'first', description: 'The first tool.', inputSchema: { type: 'object' } }];
let lists = 0;
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.method === 'initialize') {
    send({ id: message.id, result: {
      protocolVersion: message.params.protocolVersion,
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: 'flaky', version: '1.0.0' },
    } });
  } else if (message.method === 'tools/list') {
    lists += 1;
    if (lists === 2) {
      send({ id: message.id, error: { code: -32603, message: 'busy, try again' } });
    } else {
      send({ id: message.id, result: { tools } });
    }
  } else if (message.method === 'tools/call') {
    tools = [...tools, { name: 'second', description: 'Added later.', inputSchema: { type: 'object' } }];
    send({ id: message.id, result: { content: [{ type: 'text', text: 'called' }] } });
    send({ method: 'notifications/tools/list_changed' });
  } else if (message.id !== undefined) {
    send({ id: message.id, result: {} });
  }
});
"#;

#[tokio::test]
async fn a_listing_that_fails_after_list_changed_is_tried_again_next_turn() {
    let server = node_server("flaky", FLAKY).await;
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
    for _ in 0..200 {
        if server.tools_changed() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(server.tools_changed(), "the server said its tools changed");
    // The listing fails: the turn keeps the last list, and the tools stay marked as changed.
    conversation.run("anything new?").await;
    assert_eq!(server.tool_names(), ["first"]);
    assert!(server.tools_changed(), "to be listed again");
    conversation.run("and now?").await;
    assert_eq!(server.tool_names(), ["first", "second"]);
    let offered: Vec<String> = model.requests()[3]
        .tools
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert_eq!(offered, ["first", "second"]);
}
