//! A stdio server's reply over 16 MiB (rmcp's limit on one message, which it drops without a
//! word) fails its call at once with an error result saying so, not after the call's timeout,
//! and the session goes on. A small MCP server (a node script speaking JSON-RPC over stdio)
//! answers `lookup` with `size` bytes of text, writing the reply's id first (as rmcp and
//! Python's SDK do) or last (as TypeScript's SDK does).

use std::time::Duration;

use agent_core::{ScriptedModel, ScriptedStep};
use agent_mcp::McpServer;

mod common;

const SERVER: &str = r#"
const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');
require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.method === 'initialize') {
    send({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: message.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'big', version: '1.0.0' } } });
  } else if (message.method === 'tools/list') {
    send({ jsonrpc: '2.0', id: message.id, result: { tools: [{ name: 'lookup',
      description: 'Looks it up.', inputSchema: { type: 'object' } }] } });
  } else if (message.method === 'tools/call') {
    const { size, id_last } = message.params.arguments;
    const result = { content: [{ type: 'text', text: 'x'.repeat(size) }] };
    send(id_last ? { result, jsonrpc: '2.0', id: message.id }
                 : { jsonrpc: '2.0', id: message.id, result });
  } else if (message.id !== undefined) {
    send({ jsonrpc: '2.0', id: message.id, result: {} });
  }
});
"#;

#[tokio::test]
async fn a_reply_over_the_limit_is_an_error_result_and_the_session_goes_on() {
    let script = std::env::temp_dir().join(format!("big-mcp-{}.js", std::process::id()));
    std::fs::write(&script, SERVER).unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg(&script);
    // Long enough that a reply waited for would show as a timeout in the result.
    let server = McpServer::stdio("big", command, Duration::from_secs(30))
        .await
        .expect("the server starts");
    let over = 17 * 1024 * 1024;
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call(
            "c1",
            "lookup",
            format!(r#"{{"size":{over},"id_last":true}}"#),
        ),
        ScriptedStep::new().tool_call(
            "c2",
            "lookup",
            format!(r#"{{"size":{over},"id_last":false}}"#),
        ),
        ScriptedStep::new().tool_call("c3", "lookup", r#"{"size":5,"id_last":true}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let read = common::results_read(&server, model).await;
    let too_large = || (common::TOO_LARGE.to_owned(), true);
    let small = || ("xxxxx".to_owned(), false);
    assert_eq!(read, [too_large(), too_large(), small()]);
}
