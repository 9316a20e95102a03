//! MCP over streamable HTTP, against AIMock's MCP mock (npm `@copilotkit/aimock`, pinned, the
//! same install the provider conformance tests use): the server's tool offered and called, and
//! what a failed connection says.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_core::{AgentBuilder, ScriptedModel, ScriptedStep};
use agent_mcp::McpServer;

const VERSION: &str = "1.43.0";

/// A running AIMock; killed when dropped.
struct Aimock {
    url: String,
    child: Child,
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// AIMock's command-line script, installed on first use. The tests start their servers at once:
/// the lock makes the others wait for the first install, since two `npm install`s into one folder
/// fail each other (`ENOTEMPTY`).
fn cli() -> PathBuf {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _installing = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("aimock-{VERSION}"));
    let cli = dir.join("node_modules/@copilotkit/aimock/dist/aimock-cli.js");
    if !cli.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--prefix",
            ])
            .arg(&dir)
            .arg(format!("@copilotkit/aimock@{VERSION}"))
            .stdout(Stdio::null())
            .status()
            .expect("npm runs (the MCP tests need Node.js >= 20.15 and npm; see the README)");
        assert!(status.success(), "npm install of AIMock failed");
    }
    cli
}

fn start(config: &str) -> Aimock {
    // One file for each server: the tests start theirs at once, and each deletes its own.
    static STARTED: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "aimock-mcp-{}-{}.json",
        std::process::id(),
        STARTED.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, config).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let child = Command::new("node")
        .arg(cli())
        .arg("--config")
        .arg(&path)
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start AIMock with node");
    let server = Aimock {
        url: format!("http://127.0.0.1:{port}"),
        child,
    };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "AIMock did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // AIMock read its config at start: the file is not needed any more.
    let _ = std::fs::remove_file(&path);
    server
}

#[tokio::test]
async fn a_streamable_http_servers_tool_is_offered_and_called() {
    let aimock = start(
        r#"{"mcp": {"path": "/mcp", "tools": [{
            "name": "lookup_order",
            "description": "Looks up an order.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            "result": "order 42: shipped"
        }]}}"#,
    );
    let server = McpServer::http(
        "orders",
        &format!("{}/mcp", aimock.url),
        Duration::from_secs(20),
    )
    .await
    .expect("the HTTP server connects");
    assert_eq!(server.tool_names(), ["lookup_order"]);
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("o1", "lookup_order", r#"{"id":"42"}"#),
        ScriptedStep::new().text("Your order has shipped."),
    ]);
    let result = server
        .add_tools(AgentBuilder::new("orders").model(model.clone()))
        .build()
        .unwrap()
        .run("where is order 42?")
        .await;
    assert!(result.is_completed(), "{result:?}");
    let record = &result.steps[0].tool_results[0];
    assert_eq!(
        (record.content.as_str(), record.is_error),
        ("order 42: shipped", false)
    );
    assert_eq!(
        model.requests()[0].tools[0].description,
        "Looks up an order."
    );
}

/// A server that cannot be reached, or answers with an error status, is named with what went
/// wrong: the cause (the connection refused, the status), never rmcp's transport type names.
#[tokio::test]
async fn a_failed_http_connection_says_why_in_plain_words() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    drop(listener);
    // A key in the URL's query (a gateway's) is not shown.
    let keyed = format!("{closed}?key=s3cret");
    let Err(refused) = McpServer::http("orders", &keyed, Duration::from_secs(20)).await else {
        panic!("nothing listens at {closed}");
    };
    let refused = refused.to_string();
    assert!(
        refused.starts_with(&format!(
            "MCP server `orders`: did not initialize: error sending request for url ({closed})"
        )) && refused.contains("Connection refused")
            && !refused.contains("rmcp::")
            && !refused.contains("s3cret"),
        "{refused}"
    );

    let aimock = start(r#"{"mcp": {"path": "/mcp", "tools": []}}"#);
    let elsewhere = format!("{}/elsewhere", aimock.url);
    let Err(missing) = McpServer::http("orders", &elsewhere, Duration::from_secs(20)).await else {
        panic!("no MCP endpoint at {elsewhere}");
    };
    let missing = missing.to_string();
    assert!(
        missing.starts_with(
            "MCP server `orders`: did not initialize: unexpected server response: HTTP 404"
        ) && !missing.contains("rmcp::"),
        "{missing}"
    );
}

/// A URL that is not http or https is refused at once, saying so (it was a "builder error"
/// that did not name it).
#[tokio::test]
async fn a_url_that_is_not_http_says_what_is_wrong() {
    for url in [
        "localhost:8000/mcp",
        "notaurl",
        "",
        "ftp://host/mcp",
        "http://",
    ] {
        let error = McpServer::http("orders", url, Duration::from_secs(5))
            .await
            .expect_err(url)
            .to_string();
        assert_eq!(
            error,
            format!(
                "MCP server `orders`: `{url}` is not an http or https URL: give one such as \
                 http://localhost:8000/mcp"
            )
        );
    }
    let error = McpServer::http(
        "orders",
        "ftp://host/mcp?key=s3cret",
        Duration::from_secs(5),
    )
    .await
    .expect_err("ftp")
    .to_string();
    assert!(
        error.starts_with("MCP server `orders`: `ftp://host/mcp` is not"),
        "{error}"
    );
}
