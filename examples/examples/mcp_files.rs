//! Tool sources and plugins together, offline (a scripted model): the tools of the reference
//! filesystem MCP server beside a Rust streaming tool, a dynamic `_file` sandbox hook over the
//! MCP tools, and a command hook (a shell script) writing an audit line per call.
//!
//! Run: `cargo run -p examples --example mcp_files` (needs Node.js and npm: the server is
//! started with `npx`, which fetches it on first use).

use std::time::Duration;

use agent_core::{
    AgentBuilder, Chunk, CommandEvent, CommandHook, FnTool, Hook, Matcher, ScriptedModel,
    ScriptedStep, ToolCallDecision, ToolError, TurnEvent, event, tool_progress,
};
use agent_mcp::McpServer;
use serde_json::{Value, json};

const USAGE: &str = "usage: mcp_files

Runs one offline turn of an agent that reads and writes files through the reference filesystem
MCP server (started with `npx @modelcontextprotocol/server-filesystem`; Node.js and npm needed)
beside a Rust tool that reports progress, with a sandbox hook on every `..._file` tool and a
shell script as an audit command hook.";

#[tokio::main]
async fn main() {
    if let Some(arg) = std::env::args().nth(1) {
        if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            return;
        }
        eprintln!("mcp_files: unknown argument `{arg}`\n\n{USAGE}");
        std::process::exit(2);
    }
    if let Err(error) = run().await {
        eprintln!("mcp_files: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = std::env::temp_dir().join(format!("mcp-files-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;
    let workspace = workspace.canonicalize()?;
    std::fs::write(workspace.join("todo.txt"), "buy milk\nwrite the report\n")?;
    let audit_log = workspace.join("audit.log");
    let audit = workspace.join("audit.sh");
    std::fs::write(
        &audit,
        format!(
            "#!/bin/sh\ncat >> {}\necho >> {}\n",
            audit_log.display(),
            audit_log.display()
        ),
    )?;
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&audit)
        .status()?;

    let mut command = tokio::process::Command::new("npx");
    command
        .args(["--yes", "@modelcontextprotocol/server-filesystem@2026.8.31"])
        .arg(&workspace);
    let files = McpServer::stdio("filesystem", command, Duration::from_secs(60))
        .await
        .map_err(|e| format!("{e} (is `npx` on PATH? see --help)"))?;
    println!("MCP tools: {}", files.tool_names().join(", "));

    // A Rust tool that streams progress beside the MCP tools.
    let count_words = FnTool::new(
        "count_words",
        "Counts the words of a text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |args: Value, _| async move {
            let text = args["text"].as_str().unwrap_or_default().to_owned();
            let lines: Vec<&str> = text.lines().collect();
            for (done, _) in lines.iter().enumerate() {
                tool_progress(json!({ "lines_done": done + 1, "of": lines.len() }));
            }
            Ok::<Value, ToolError>(json!(text.split_whitespace().count()))
        },
    );
    let todo = workspace.join("todo.txt").display().to_string();
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("r1", "read_text_file", json!({ "path": todo }).to_string())
            .tool_call("r2", "read_text_file", r#"{"path":"/etc/shadow"}"#),
        ScriptedStep::new().tool_call(
            "c1",
            "count_words",
            r#"{"text":"buy milk\nwrite the report\n"}"#,
        ),
        ScriptedStep::new().text("Your list has 2 items and 5 words."),
    ]);
    let root = workspace.display().to_string();
    let sandbox = Hook::<event::BeforeToolCall<Value>>::sync("sandbox", move |ctx| {
        let path = ctx.input.get("path").and_then(Value::as_str).unwrap_or("");
        if path.starts_with(&root) {
            ToolCallDecision::Allow
        } else {
            ToolCallDecision::block(format!("`{path}` is outside the workspace"))
        }
    });
    let agent = files
        .add_tools(AgentBuilder::new("files").model(model))
        .dyn_tool(count_words)
        .before_tool_call(Matcher::regex("_file$").dynamic(), sandbox)
        .command_hook(CommandHook::new(
            "audit",
            CommandEvent::AfterToolCall,
            [audit.display().to_string()],
        ))
        .build()?;

    let mut events = agent.conversation().stream("What is on my todo list?");
    while let Some(event) = events.next().await {
        match event {
            TurnEvent::Chunk { chunk, .. } => match chunk {
                Chunk::ToolCall(call) => println!("→ {}({})", call.name, call.arguments),
                Chunk::ToolPreliminary { name, content, .. } => {
                    println!("  … {name}: {content}")
                }
                Chunk::ToolResult { name, content, .. } => {
                    println!("← {name}: {}", content.replace('\n', " / "))
                }
                Chunk::TextDelta(text) => print!("{text}"),
                _ => {}
            },
            TurnEvent::Finished(result) => println!("\nstatus: {}", result.status),
            _ => {}
        }
    }
    let audit = std::fs::read_to_string(&audit_log)?;
    println!("\naudit.log ({} lines):", audit.lines().count());
    for line in audit.lines() {
        let snapshot: Value = serde_json::from_str(line)?;
        println!(
            "  {} success={} {}ms",
            snapshot["toolName"], snapshot["success"], snapshot["durationMs"]
        );
    }
    let _ = std::fs::remove_dir_all(&workspace);
    Ok(())
}
