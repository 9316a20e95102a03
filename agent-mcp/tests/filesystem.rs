//! The reference filesystem MCP server (npm `@modelcontextprotocol/server-filesystem`, pinned,
//! installed on first use into the target directory, as the AIMock tests do): its tools offered
//! beside Rust ones, a dynamic `_file` sandbox hook blocking a path outside the allowed folder,
//! and a real file's contents reaching the model.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use agent_core::{
    AgentBuilder, Hook, Matcher, ScriptedModel, ScriptedStep, ToolCallDecision, event,
};
use agent_mcp::McpServer;
use serde_json::Value;

const VERSION: &str = "2026.8.31";

/// Installs the server once per test binary; its entry point.
fn server_js() -> PathBuf {
    static INSTALL: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut slot = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    slot.get_or_insert_with(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("mcp-fs-{VERSION}"));
        let js = dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
        if !js.exists() {
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
                .arg(format!("@modelcontextprotocol/server-filesystem@{VERSION}"))
                .stdout(Stdio::null())
                .status()
                .expect("npm runs (the MCP tests need Node.js >= 20.15 and npm; see the README)");
            assert!(
                status.success(),
                "npm install of the filesystem MCP server failed"
            );
        }
        js
    })
    .clone()
}

async fn start(allowed: &Path) -> McpServer {
    let mut command = tokio::process::Command::new("node");
    command.arg(server_js()).arg(allowed);
    McpServer::stdio("filesystem", command, Duration::from_secs(20))
        .await
        .expect("the filesystem server starts")
}

/// A test's sandbox folder (its canonical path), removed when the test ends.
struct Folder(PathBuf);

impl std::ops::Deref for Folder {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn folder(name: &str) -> Folder {
    let dir = std::env::temp_dir().join(format!("mcp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Folder(dir.canonicalize().unwrap())
}

#[tokio::test]
async fn the_filesystem_servers_tools_run_under_a_dynamic_sandbox_hook() {
    let allowed = folder("fs");
    std::fs::write(allowed.join("notes.txt"), "hello from disk").unwrap();
    let server = start(&allowed).await;
    let names = server.tool_names();
    assert!(names.iter().any(|n| n == "read_text_file"), "{names:?}");
    assert!(names.iter().any(|n| n == "write_file"), "{names:?}");

    let inside = allowed.join("notes.txt").display().to_string();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call(
                "r1",
                "read_text_file",
                serde_json::json!({"path": inside}).to_string(),
            )
            .tool_call("r2", "read_text_file", r#"{"path":"/etc/passwd"}"#),
        ScriptedStep::new().text("Read."),
    ]);
    let root = allowed.display().to_string();
    let sandbox = Hook::<event::BeforeToolCall<Value>>::sync("sandbox", move |ctx| {
        let path = ctx.input.get("path").and_then(Value::as_str).unwrap_or("");
        if path.starts_with(&root) {
            ToolCallDecision::Allow
        } else {
            ToolCallDecision::block(format!("`{path}` is outside the workspace"))
        }
    });
    let agent = server
        .add_tools(AgentBuilder::new("files").model(model.clone()))
        .before_tool_call(Matcher::regex("_file$").dynamic(), sandbox)
        .build()
        .unwrap();
    let result = agent.run("read my notes").await;
    assert!(result.is_completed(), "{result:?}");
    let read: Vec<(String, bool)> = result.steps[0]
        .tool_results
        .iter()
        .map(|r| (r.content.to_string(), r.is_error))
        .collect();
    assert_eq!(
        read,
        [
            ("hello from disk".to_owned(), false),
            ("`/etc/passwd` is outside the workspace".to_owned(), false),
        ]
    );
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        offered.contains(&"read_text_file".to_owned()),
        "{offered:?}"
    );
}

#[tokio::test]
async fn a_server_error_is_an_error_result_the_model_reads() {
    let allowed = folder("missing");
    let server = start(&allowed).await;
    let missing = allowed.join("nope.txt").display().to_string();
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call(
            "r1",
            "read_text_file",
            serde_json::json!({"path": missing}).to_string(),
        ),
        ScriptedStep::new().text("It is not there."),
    ]);
    let agent = server
        .add_tools(AgentBuilder::new("files").model(model))
        .build()
        .unwrap();
    let result = agent.run("read it").await;
    assert!(result.is_completed());
    let record = &result.steps[0].tool_results[0];
    assert!(record.is_error, "{record:?}");
    assert!(
        record.content.contains("ENOENT") || record.content.contains("no such file"),
        "{}",
        record.content
    );
}

/// Whether process `pid` still runs (a zombie waiting to be reaped does not).
fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(") ")
        .next()
        .and_then(|rest| rest.chars().next());
    !matches!(state, None | Some('Z' | 'X'))
}

#[tokio::test]
async fn a_dead_server_is_an_error_result_and_a_dropped_server_leaves_no_process() {
    let allowed = folder("dead");
    let server = start(&allowed).await;
    let pid = server.process_id().expect("a server process");
    assert!(running(pid));
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("l1", "list_allowed_directories", "{}"),
        ScriptedStep::new().text("The server is gone."),
    ]);
    let agent = server
        .add_tools(AgentBuilder::new("files").model(model))
        .build()
        .unwrap();
    Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    let result = agent.run("list").await;
    assert!(result.is_completed(), "the turn goes on: {result:?}");
    let record = &result.steps[0].tool_results[0];
    assert!(record.is_error, "{record:?}");
    assert!(
        record
            .content
            .starts_with("MCP server `filesystem` failed on `list_allowed_directories`"),
        "{}",
        record.content
    );

    let second = start(&allowed).await;
    let pid = second.process_id().unwrap();
    drop(second);
    let mut gone = false;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if !running(pid) {
            gone = true;
            break;
        }
    }
    assert!(gone, "the server process ends with its last handle");
}
