//! A stdio server's process ends with its last handle even when that handle goes with the Tokio
//! runtime (a task still holding it as the runtime shuts down, as when `#[tokio::main]`
//! returns): a small server that keeps running after its stdin closes.

use std::time::Duration;

use agent_mcp::McpServer;

/// An MCP server (a node script speaking JSON-RPC over stdio) with no tools, which a timer
/// keeps alive after its stdin closes.
const SERVER: &str = r#"
setInterval(() => {}, 1000);
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.method === 'initialize') {
    send({ id: message.id, result: { protocolVersion: message.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'stubborn', version: '1.0.0' } } });
  } else if (message.method === 'tools/list') {
    send({ id: message.id, result: { tools: [] } });
  } else if (message.id !== undefined) {
    send({ id: message.id, result: {} });
  }
});
"#;

/// Whether process `pid` still runs (a zombie waiting to be reaped does not).
fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(") ")
        .next()
        .and_then(|rest| rest.chars().next());
    !matches!(state, None | Some('Z' | 'X'))
}

#[test]
fn a_server_held_by_a_task_as_the_runtime_shuts_down_is_killed() {
    let script = std::env::temp_dir().join(format!("stubborn-mcp-{}.js", std::process::id()));
    std::fs::write(&script, SERVER).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut command = tokio::process::Command::new("node");
    command.arg(&script);
    let server = runtime
        .block_on(McpServer::stdio(
            "stubborn",
            command,
            Duration::from_secs(20),
        ))
        .expect("the server starts");
    let pid = server.process_id().expect("a server process");
    runtime.spawn(async move {
        let _held = server;
        std::future::pending::<()>().await
    });
    drop(runtime);
    let mut gone = false;
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(10));
        if !running(pid) {
            gone = true;
            break;
        }
    }
    if !gone {
        // Not left behind by a failing test either.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let _ = std::fs::remove_file(&script);
    assert!(gone, "the server process ends with the runtime holding it");
}
