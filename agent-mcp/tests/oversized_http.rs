//! A streamable-HTTP server's reply over 16 MiB (rmcp's limit on one message, for a JSON body
//! and for one SSE event) fails its call at once with an error result saying so, as a stdio
//! server's does (`oversized.rs`), and the session goes on. The server is a small in-process
//! HTTP/1.1 server speaking MCP's streamable HTTP: `lookup` answers with `size` bytes of
//! text, as a JSON body or as an SSE event.

use std::time::Duration;

use agent_core::{ScriptedModel, ScriptedStep};
use agent_mcp::McpServer;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;

/// Reads one request: its method and its body (by `content-length`); `None` when the
/// connection closed.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let method = head.split(' ').next().unwrap_or_default().to_owned();
    let length: usize = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0);
    buffer.drain(..head_end + 4);
    while buffer.len() < length {
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = buffer.drain(..length).collect();
    Some((method, body))
}

/// Writes a response with `body`, naming the session.
async fn respond(
    socket: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nmcp-session-id: s1\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body).await?;
    socket.flush().await
}

/// Answers one connection's requests: `initialize`, `tools/list` and `tools/call` of
/// `lookup`; a notification is accepted, a GET (the server's own stream) or DELETE refused.
async fn serve(mut socket: TcpStream) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    while let Some((method, body)) = read_request(&mut socket, &mut buffer).await {
        if method != "POST" {
            respond(&mut socket, "405 Method Not Allowed", "text/plain", b"").await?;
            continue;
        }
        let message: Value = serde_json::from_slice(&body).unwrap_or_default();
        let id = message["id"].clone();
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "big", "version": "1.0.0"}
            }),
            Some("tools/list") => json!({"tools": [{
                "name": "lookup", "description": "Looks it up.", "inputSchema": {"type": "object"}
            }]}),
            Some("tools/call") => {
                let size = message["params"]["arguments"]["size"].as_u64().unwrap_or(0);
                json!({"content": [{"type": "text", "text": "x".repeat(size as usize)}]})
            }
            _ if id.is_null() => {
                respond(&mut socket, "202 Accepted", "text/plain", b"").await?;
                continue;
            }
            _ => json!({}),
        };
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        if message["params"]["arguments"]["sse"] == true {
            let event = format!("event: message\ndata: {reply}\n\n");
            respond(&mut socket, "200 OK", "text/event-stream", event.as_bytes()).await?;
        } else {
            respond(&mut socket, "200 OK", "application/json", reply.as_bytes()).await?;
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_reply_over_the_limit_is_an_error_result_and_the_session_goes_on() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket));
        }
    });
    let server = McpServer::http("big", &url, Duration::from_secs(30))
        .await
        .expect("connects");
    let over = 17 * 1024 * 1024;
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "lookup", format!(r#"{{"size":{over},"sse":false}}"#)),
        ScriptedStep::new().tool_call("c2", "lookup", format!(r#"{{"size":{over},"sse":true}}"#)),
        ScriptedStep::new().tool_call("c3", "lookup", r#"{"size":5,"sse":true}"#),
        ScriptedStep::new().tool_call("c4", "lookup", r#"{"size":5,"sse":false}"#),
        ScriptedStep::new().text("Done."),
    ]);
    let read = common::results_read(&server, model).await;
    let too_large = || (common::TOO_LARGE.to_owned(), true);
    let small = || ("xxxxx".to_owned(), false);
    assert_eq!(read, [too_large(), too_large(), small(), small()]);
}
