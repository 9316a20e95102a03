//! What a model reads of odd MCP answers and tool lists: a result carrying only structured
//! content, an error result without a message, media, and tools the agent cannot offer (a
//! duplicate name, an empty or invalid one, one a Rust tool of the agent already has, an input
//! schema that is not an object's). A small
//! MCP server (a node script speaking JSON-RPC over stdio) lists the tools and gives the answer
//! it is started with.

use std::time::Duration;

use agent_core::{AgentBuilder, FnTool, ScriptedModel, ScriptedStep};
use agent_mcp::McpServer;
use serde_json::{Value, json};

const SERVER: &str = r#"
const tools = JSON.parse(process.argv[2]), answer = JSON.parse(process.argv[3]);
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.method === 'initialize') {
    send({ id: message.id, result: { protocolVersion: message.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'odd', version: '1.0.0' } } });
  } else if (message.method === 'tools/list') {
    send({ id: message.id, result: { tools } });
  } else if (message.method === 'tools/call') {
    send({ id: message.id, result: answer });
  } else if (message.id !== undefined) {
    send({ id: message.id, result: {} });
  }
});
"#;

/// A server listing `tools` and answering every call with `answer`.
async fn server(name: &str, tools: Value, answer: Value) -> McpServer {
    let script = std::env::temp_dir().join(format!("odd-mcp-{name}-{}.js", std::process::id()));
    std::fs::write(&script, SERVER).unwrap();
    let mut command = tokio::process::Command::new("node");
    command
        .arg(&script)
        .arg(tools.to_string())
        .arg(answer.to_string());
    McpServer::stdio(name, command, Duration::from_secs(20))
        .await
        .expect("the server starts")
}

fn tool(name: &str) -> Value {
    json!({ "name": name, "description": "A tool.", "inputSchema": { "type": "object" } })
}

/// What the model read of one call of `lookup` answered with `answer`.
async fn read_of(name: &str, answer: Value) -> (String, bool) {
    let server = server(name, json!([tool("lookup")]), answer).await;
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "lookup", "{}"),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = server
        .add_tools(AgentBuilder::new("odd").model(model))
        .build()
        .unwrap();
    let result = agent.run("look it up").await;
    let read = &result.steps[0].tool_results[0];
    (read.content.to_string(), read.is_error)
}

#[tokio::test]
async fn structured_content_alone_is_read_as_json() {
    let answer = json!({ "content": [], "structuredContent": { "answer": 42 } });
    assert_eq!(
        read_of("structured", answer).await,
        (r#"{"answer":42}"#.to_owned(), false)
    );
    // With a text copy, the text is what the model reads.
    let answer = json!({ "content": [{ "type": "text", "text": "42" }],
        "structuredContent": { "answer": 42 } });
    assert_eq!(read_of("both", answer).await, ("42".to_owned(), false));
}

#[tokio::test]
async fn an_error_without_a_message_says_so() {
    let (read, is_error) = read_of("silent", json!({ "content": [], "isError": true })).await;
    assert!(is_error);
    assert_eq!(
        read,
        "MCP server `silent` reported an error on `lookup`, without a message"
    );
}

#[tokio::test]
async fn tools_the_agent_cannot_offer_are_left_out() {
    let echo = FnTool::new(
        "echo",
        "The Rust echo.",
        json!({"type": "object"}),
        |_, _| async { Ok(Value::String("rust".into())) },
    );
    let listed = json!([
        tool("echo"),
        tool("lookup"),
        tool("lookup"),
        tool(""),
        tool("has space")
    ]);
    let answer = json!({ "content": [{ "type": "text", "text": "mcp" }] });
    let server = server("names", listed, answer).await;
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "echo", "{}")
            .tool_call("c2", "lookup", "{}"),
        ScriptedStep::new().text("Done."),
    ]);
    let agent = server
        .add_tools(
            AgentBuilder::new("names")
                .model(model.clone())
                .dyn_tool(echo),
        )
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert!(result.is_completed(), "{:?}", result.error);
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert_eq!(
        offered,
        ["echo", "lookup"],
        "each name once, valid ones only"
    );
    let read: Vec<&str> = result.steps[0]
        .tool_results
        .iter()
        .map(|result| result.content.as_str())
        .collect();
    assert_eq!(read, ["rust", "mcp"], "the agent's own `echo` answers");
}

/// Media reach the model as a line saying what was left out, not as base64 filling its context;
/// a text resource as its text.
#[tokio::test]
async fn media_are_described_not_sent_as_base64() {
    let image = "iVBORw0KGgo".repeat(1_000);
    let answer = json!({ "content": [
        { "type": "text", "text": "Here it is." },
        { "type": "image", "data": image, "mimeType": "image/png" },
        { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" },
        { "type": "resource", "resource": { "uri": "file:///notes.txt", "text": "the notes" } },
        { "type": "resource", "resource": { "uri": "file:///a.bin", "blob": "AAEC" } },
    ] });
    let (read, is_error) = read_of("media", answer).await;
    assert!(!is_error);
    assert_eq!(
        read.lines().collect::<Vec<_>>(),
        [
            "Here it is.",
            "[an image (image/png, 11000 bytes of base64) left out: tool results reach the model as text]",
            "[audio (audio/wav, 8 bytes of base64) left out: tool results reach the model as text]",
            "the notes",
            "[resource file:///a.bin (unknown type, 4 bytes of base64) left out: tool results reach the model as text]",
        ]
    );
}

/// Providers refuse a tool whose input schema is not an object schema: such a tool is left out,
/// and a schema without a `type` is taken as the object schema MCP requires.
#[tokio::test]
async fn tools_whose_schema_is_not_an_object_are_left_out() {
    let listed = json!([
        tool("typed"),
        { "name": "untyped", "inputSchema": { "properties": { "q": { "type": "string" } } } },
        { "name": "stringy", "inputSchema": { "type": "string" } },
        { "name": "listy", "inputSchema": { "type": ["object", "null"] } },
    ]);
    let server = server("schemas", listed, json!({ "content": [] })).await;
    let model = ScriptedModel::new([ScriptedStep::new().text("Done.")]);
    let agent = server
        .add_tools(AgentBuilder::new("schemas").model(model.clone()))
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert!(result.is_completed(), "{:?}", result.error);
    let offered: Vec<(String, Value)> = model.requests()[0]
        .tools
        .iter()
        .map(|tool| (tool.name.clone(), tool.parameters.clone()))
        .collect();
    assert_eq!(
        offered,
        [
            ("typed".to_owned(), json!({ "type": "object" })),
            (
                "untyped".to_owned(),
                json!({ "type": "object", "properties": { "q": { "type": "string" } } })
            ),
        ]
    );
}

/// A program that cannot be started is named in the error, with what to check: "No such file
/// or directory" alone did not say which file.
#[tokio::test]
async fn a_program_that_cannot_start_is_named_in_the_error() {
    let command = tokio::process::Command::new("no-such-mcp-server-program");
    let error = McpServer::stdio("missing", command, Duration::from_secs(5))
        .await
        .expect_err("nothing to start");
    let message = error.to_string();
    assert!(
        message.starts_with("MCP server `missing`: could not start `no-such-mcp-server-program`: "),
        "{message}"
    );
    assert!(message.contains("installed and on the PATH"), "{message}");
}

/// A server that exits as it starts (here `node` running a script that exits at once) fails
/// to initialize with an error that says it may have exited and where to look.
#[tokio::test]
async fn a_server_that_exits_at_start_says_where_to_look() {
    let mut command = tokio::process::Command::new("node");
    command.args(["-e", "process.exit(3)"]);
    let error = McpServer::stdio("quitter", command, Duration::from_secs(20))
        .await
        .expect_err("it exits");
    let message = error.to_string();
    assert!(
        message.starts_with("MCP server `quitter`: did not initialize: "),
        "{message}"
    );
    assert!(
        message.ends_with(
            "the process may have exited before it answered: see what it wrote to standard error"
        ),
        "{message}"
    );
}
