//! Tools from MCP servers for `agent-core` agents, through the `rmcp` crate.
//!
//! [`McpServer::stdio`] starts a server program and lists its tools; [`McpServer::add_tools`]
//! adds them to an agent beside its Rust tools ([`McpServer::tools`] gives each as an
//! `agent_core::FnTool`). MCP tools are dynamic: the agent's hooks with `dynamic` matchers see
//! their JSON input, typed hooks never match them. A call goes to the server; a server error,
//! a timeout or a dead server is an error result the model reads, never a crashed turn. The
//! server process lives as long as the server handle or any of its tools, and is killed with
//! the last of them (no orphans).

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentBuilder, FnTool, ToolError};
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;

/// Why a server could not be started or listed.
#[derive(Debug)]
pub struct McpError(String);

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for McpError {}

/// A running MCP server and the tools it listed when it started.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Connection>,
}

struct Connection {
    name: String,
    pid: Option<u32>,
    service: RunningService<RoleClient, ()>,
    tools: Vec<rmcp::model::Tool>,
    timeout: Duration,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<&str> = self.inner.tools.iter().map(|t| &*t.name).collect();
        f.debug_struct("McpServer")
            .field("name", &self.inner.name)
            .field("tools", &tools)
            .finish()
    }
}

impl McpServer {
    /// Starts `command` as an MCP server over stdio, initializes the session and lists its
    /// tools. `name` names the server in errors. Each call may take `timeout` before it is
    /// abandoned (the model reads that it timed out).
    pub async fn stdio(
        name: impl Into<String>,
        command: tokio::process::Command,
        timeout: Duration,
    ) -> Result<McpServer, McpError> {
        let name = name.into();
        let fail = |what: &str, error: &dyn fmt::Display| {
            McpError(format!("MCP server `{name}`: {what}: {error}"))
        };
        let transport = TokioChildProcess::new(command).map_err(|e| fail("could not start", &e))?;
        let pid = transport.id();
        let service = tokio::time::timeout(timeout, ().serve(transport))
            .await
            .map_err(|_| {
                fail(
                    "did not initialize",
                    &format!("no answer within {timeout:?}"),
                )
            })?
            .map_err(|e| fail("did not initialize", &e))?;
        let tools = tokio::time::timeout(timeout, service.list_all_tools())
            .await
            .map_err(|_| {
                fail(
                    "did not list its tools",
                    &format!("no answer within {timeout:?}"),
                )
            })?
            .map_err(|e| fail("did not list its tools", &e))?;
        Ok(McpServer {
            inner: Arc::new(Connection {
                name,
                pid,
                service,
                tools,
                timeout,
            }),
        })
    }

    /// The server process's id.
    pub fn process_id(&self) -> Option<u32> {
        self.inner.pid
    }

    /// The names of the tools the server listed.
    pub fn tool_names(&self) -> Vec<&str> {
        self.inner.tools.iter().map(|tool| &*tool.name).collect()
    }

    /// The server's tools, each routing its calls to the server, with the schema and
    /// description the server gave.
    pub fn tools(&self) -> Vec<FnTool> {
        self.inner
            .tools
            .iter()
            .map(|tool| {
                let server = self.clone();
                let name: Arc<str> = Arc::from(&*tool.name);
                let description = tool
                    .description
                    .as_deref()
                    .unwrap_or("A tool of an MCP server.")
                    .to_owned();
                let schema = Value::Object((*tool.input_schema).clone());
                FnTool::new(name.to_string(), description, schema, move |args, _| {
                    let (server, name) = (server.clone(), name.clone());
                    async move { server.call(&name, args).await }
                })
            })
            .collect()
    }

    /// Adds every tool of the server to `builder`.
    pub fn add_tools(&self, builder: AgentBuilder) -> AgentBuilder {
        self.tools()
            .into_iter()
            .fold(builder, |builder, tool| builder.dyn_tool(tool))
    }

    /// Calls `tool` with `args`: its text content joined by lines, or why there is none.
    async fn call(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        let server = &self.inner.name;
        let Value::Object(arguments) = args else {
            return Err(ToolError::new(format!(
                "MCP tool `{tool}` takes an object of arguments"
            )));
        };
        let request =
            CallToolRequestParams::new(Cow::Owned(tool.to_owned())).with_arguments(arguments);
        let answer =
            tokio::time::timeout(self.inner.timeout, self.inner.service.call_tool(request))
                .await
                .map_err(|_| {
                    ToolError::new(format!(
                        "MCP server `{server}` did not answer `{tool}` within {:?}",
                        self.inner.timeout
                    ))
                })?
                .map_err(|e| {
                    ToolError::new(format!("MCP server `{server}` failed on `{tool}`: {e}"))
                })?;
        let text: Vec<String> = answer
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(text) => text.text.clone(),
                other => serde_json::to_string(other).unwrap_or_default(),
            })
            .collect();
        let text = text.join("\n");
        if answer.is_error.unwrap_or(false) {
            return Err(ToolError::new(text));
        }
        Ok(Value::String(text))
    }
}
