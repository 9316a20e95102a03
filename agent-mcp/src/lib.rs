//! Tools from MCP servers for `agent-core` agents, through the `rmcp` crate.
//!
//! [`McpServer::stdio`] starts a server program and lists its tools; [`McpServer::add_tools`]
//! adds them to an agent beside its Rust tools ([`McpServer::tools`] gives each as an
//! `agent_core::FnTool`). MCP tools are dynamic: the agent's hooks with `dynamic` matchers see
//! their JSON input, typed hooks never match them. A call goes to the server; a server error,
//! a timeout, a reply over the 16 MiB limit on one message (see `line_limit.rs` for a stdio
//! server's, `http_limit.rs` for a streamable-HTTP server's) or a dead server is an error result the model reads, never a crashed turn.
//! The server process lives as long as the server handle or any of its tools, and is killed
//! with the last of them (no orphans).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod http_limit;
mod line_limit;
mod too_large;

use std::borrow::Cow;
use std::fmt;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_core::{AgentBuilder, DynTool, FnTool, Hook, ToolError, TurnConfig, TurnContext, event};
use rmcp::ClientHandler;
use rmcp::model::{CallToolRequestParams, ContentBlock, ResourceContents};
use rmcp::service::{
    ClientInitializeError, NotificationContext, RoleClient, RunningService, ServiceError,
    ServiceExt,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use serde_json::Value;
use tokio::process::Child;

use http_limit::Bounded;
use line_limit::{LIMIT, LineLimit};

/// Why a server could not be started or listed.
#[derive(Debug)]
pub struct McpError(String);

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for McpError {}

/// What went wrong, for a person: an rmcp transport error without the transport's type name
/// (`Transport [rmcp::transport::worker::WorkerTransport<...>] error`) and the HTTP client's
/// wrapper, then each cause the error's own text leaves out (reqwest's "error sending
/// request" hides "Connection refused").
fn reason(error: &(dyn std::error::Error + 'static)) -> String {
    let mut inner: &(dyn std::error::Error + 'static) = match error.downcast_ref() {
        Some(ClientInitializeError::TransportError { error, .. }) => &*error.error,
        _ => match error.downcast_ref() {
            Some(ServiceError::TransportSend(error)) => &*error.error,
            _ => error,
        },
    };
    // Its `Client` case names no source: the HTTP client's own error is inside.
    if let Some(StreamableHttpError::<reqwest::Error>::Client(error)) = inner.downcast_ref() {
        inner = error;
    }
    let mut text = inner.to_string();
    let mut cause = inner.source();
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = error.source();
    }
    text
}

/// A running MCP server and the tools it listed when it started.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Connection>,
}

struct Connection {
    name: String,
    pid: Option<u32>,
    service: RunningService<RoleClient, Listener>,
    /// A stdio server's process, held to be killed when the connection goes (it is set to
    /// kill on drop).
    _process: Option<Child>,
    /// The tools as last listed.
    tools: Mutex<Vec<rmcp::model::Tool>>,
    /// Set when the server says its tool list changed (`notifications/tools/list_changed`).
    stale: Arc<AtomicBool>,
    timeout: Duration,
}

/// Hears the server's notifications: a changed tool list marks the list stale.
struct Listener {
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.stale.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.name)
            .field("tools", &self.tool_names())
            .finish()
    }
}

impl McpServer {
    /// Starts `command` as an MCP server over stdio, initializes the session and lists its
    /// tools. `name` names the server in errors. Each call may take `timeout` before it is
    /// abandoned (the model reads that it timed out). A reply over 16 MiB (rmcp's limit on
    /// one message) fails its call as soon as it is seen, the model reading that the reply was
    /// larger than the limit, and the session goes on. The process's standard input and output
    /// carry the session; its standard error is left as `command` sets it (inherited by
    /// default). The process is killed with the last handle of the server, even when that is
    /// dropped as the Tokio runtime shuts down or outside of it (`command` is set to kill on
    /// drop).
    pub async fn stdio(
        name: impl Into<String>,
        mut command: tokio::process::Command,
        timeout: Duration,
    ) -> Result<McpServer, McpError> {
        let name = name.into();
        // Killed on drop by Tokio itself, at once: a task killing it would never run once the
        // runtime is shutting down (a `#[tokio::main]` returning with the server still held by
        // a task), which left a server that outlives its stdin running.
        command
            .kill_on_drop(true)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let mut process = command.spawn().map_err(|e| {
            McpError(format!(
                "MCP server `{name}`: could not start `{program}`: {e}; check that the program \
                 is installed and on the PATH, and may be run"
            ))
        })?;
        let pid = process.id();
        let (Some(stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
            return Err(McpError(format!(
                "MCP server `{name}`: `{program}` started without piped standard input and output"
            )));
        };
        // rmcp drops a line over its limit without a word; cut and answered before it
        // reads them, such lines fail their calls at once (see `line_limit.rs`).
        let stdout = LineLimit::new(stdout, LIMIT, name.clone());
        McpServer::connect(name, pid, Some(process), (stdout, stdin), timeout).await
    }

    /// Connects to an MCP server over streamable HTTP at `url` (`http://host:port/mcp`),
    /// initializes the session and lists its tools (see [`stdio`](Self::stdio)). A `url` that
    /// is not http or https is refused before anything is sent. Errors name the URL without
    /// its query and credentials, which may carry a key. A reply over 16 MiB (one JSON
    /// body, or one event of an SSE reply) fails its call at once, the model reading that it
    /// was larger than the limit, and the session goes on, as over stdio.
    pub async fn http(
        name: impl Into<String>,
        url: &str,
        timeout: Duration,
    ) -> Result<McpServer, McpError> {
        let name = name.into();
        let host = ["http://", "https://"].iter().find_map(|scheme| {
            let head = url.get(..scheme.len())?;
            head.eq_ignore_ascii_case(scheme)
                .then(|| &url[scheme.len()..])
        });
        if host.is_none_or(str::is_empty) {
            // Without its query, which may carry a key.
            let shown = url.split('?').next().unwrap_or_default();
            return Err(McpError(format!(
                "MCP server `{name}`: `{shown}` is not an http or https URL: give one such as \
                 http://localhost:8000/mcp"
            )));
        }
        // rmcp's own client, with a reply over the size limit answered as a stdio one's is.
        let client = Bounded::new().map_err(|e| {
            McpError(format!(
                "MCP server `{name}`: could not make an HTTP client: {}",
                reason(&e)
            ))
        })?;
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        let transport = StreamableHttpClientTransport::with_client(client, config);
        McpServer::connect(name, None, None, transport, timeout).await
    }

    async fn connect<T, E, A>(
        name: String,
        pid: Option<u32>,
        process: Option<Child>,
        transport: T,
        timeout: Duration,
    ) -> Result<McpServer, McpError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let fail = |what: &str, error: &dyn fmt::Display| {
            McpError(format!("MCP server `{name}`: {what}: {error}"))
        };
        let stale = Arc::new(AtomicBool::new(false));
        let listener = Listener {
            stale: stale.clone(),
        };
        let service = tokio::time::timeout(timeout, listener.serve(transport))
            .await
            .map_err(|_| {
                fail(
                    "did not initialize",
                    &format!("no answer within {timeout:?}"),
                )
            })?
            .map_err(|e| match pid {
                // A process that exits at start (a bad argument, a missing file) closes its
                // stdout before it answers; only what it wrote to standard error says why.
                Some(_) => fail(
                    "did not initialize",
                    &format!(
                        "{}; the process may have exited before it answered: see what it \
                         wrote to standard error",
                        reason(&e)
                    ),
                ),
                None => fail("did not initialize", &reason(&e)),
            })?;
        let tools = tokio::time::timeout(timeout, service.list_all_tools())
            .await
            .map_err(|_| {
                fail(
                    "did not list its tools",
                    &format!("no answer within {timeout:?}"),
                )
            })?
            .map_err(|e| fail("did not list its tools", &reason(&e)))?;
        Ok(McpServer {
            inner: Arc::new(Connection {
                name,
                pid,
                service,
                _process: process,
                tools: Mutex::new(tools),
                stale,
                timeout,
            }),
        })
    }

    /// The server process's id (a stdio server's).
    pub fn process_id(&self) -> Option<u32> {
        self.inner.pid
    }

    /// The names of the tools the server listed (last).
    pub fn tool_names(&self) -> Vec<String> {
        self.listed()
            .iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }

    fn listed(&self) -> std::sync::MutexGuard<'_, Vec<rmcp::model::Tool>> {
        self.inner
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the server said its tools changed since they were last listed.
    pub fn tools_changed(&self) -> bool {
        self.inner.stale.load(Ordering::SeqCst)
    }

    /// Lists the server's tools again if it said they changed; whether it did. A list that
    /// fails leaves them marked as changed, so the next refresh tries again.
    pub async fn refresh(&self) -> Result<bool, McpError> {
        if !self.inner.stale.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        let listed = tokio::time::timeout(self.inner.timeout, self.inner.service.list_all_tools())
            .await
            .map_err(|_| {
                McpError(format!(
                    "MCP server `{}` did not list its tools in time",
                    self.inner.name
                ))
            })
            .and_then(|listed| {
                listed.map_err(|e| {
                    McpError(format!(
                        "MCP server `{}` did not list its tools: {}",
                        self.inner.name,
                        reason(&e)
                    ))
                })
            })
            .inspect_err(|_| self.inner.stale.store(true, Ordering::SeqCst))?;
        *self.listed() = listed;
        Ok(true)
    }

    /// The server's tools as last listed, each routing its calls to the server, with the
    /// schema and description the server gave. A tool whose input schema is not of `type`
    /// `object` is left out with a warning (providers refuse a request offering it); a schema
    /// without a `type` is taken as the object schema MCP requires.
    pub fn tools(&self) -> Vec<FnTool> {
        self.listed()
            .iter()
            .filter_map(|tool| {
                let server = self.clone();
                let name: Arc<str> = Arc::from(&*tool.name);
                let description = tool
                    .description
                    .as_deref()
                    .unwrap_or("A tool of an MCP server.")
                    .to_owned();
                let schema = object_schema(&self.inner.name, &name, &tool.input_schema)?;
                Some(FnTool::new(
                    name.to_string(),
                    description,
                    schema,
                    move |args, _| {
                        let (server, name) = (server.clone(), name.clone());
                        async move { server.call(&name, args).await }
                    },
                ))
            })
            .collect()
    }

    /// Offers the server's tools to every turn of the agent `builder` makes: a before_turn
    /// hook lists them again when the server said they changed
    /// (`notifications/tools/list_changed`), so each turn sees the server's current tools. A
    /// failed refresh keeps the last list (logged), and the next turn lists them again.
    pub fn add_tools(&self, builder: AgentBuilder) -> AgentBuilder {
        let name = format!("mcp:{}", self.inner.name);
        builder.hook(Hook::<event::BeforeTurn>::new_async_with(
            name,
            self.clone(),
            async |server: &McpServer, _: &TurnContext| {
                if let Err(error) = server.refresh().await {
                    tracing::warn!("{error}; the turn keeps the last list");
                }
                let mut config = TurnConfig::new();
                config.tools = server
                    .tools()
                    .into_iter()
                    .map(|tool| Arc::new(tool) as Arc<dyn DynTool>)
                    .collect();
                config
            },
        ))
    }

    /// Calls `tool` with `args`: its content blocks as text (see `block_text`) joined by lines
    /// (its structured content as JSON when it has no text), or why there is none.
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
                .map_err(|e| match e {
                    ServiceError::McpError(error) if too_large::too_large(&error) => {
                        let limit = error.data.as_ref().and_then(|data| data["limit"].as_u64());
                        let limit = limit.map_or(LIMIT, |limit| limit as usize);
                        ToolError::new(format!(
                            "MCP server `{server}`: the reply to `{tool}` was larger than the \
                             {} limit on one message, so it was dropped; ask for less at a time",
                            too_large::size(limit)
                        ))
                    }
                    e => ToolError::new(format!(
                        "MCP server `{server}` failed on `{tool}`: {}",
                        reason(&e)
                    )),
                })?;
        let text: Vec<String> = answer.content.iter().map(block_text).collect();
        let mut text = text.join("\n");
        // A result may carry its value as structured content alone (MCP 2025-06-18 asks for
        // a text copy, but does not require one): the model reads it as JSON.
        if text.is_empty()
            && let Some(structured) = &answer.structured_content
        {
            text = structured.to_string();
        }
        if answer.is_error.unwrap_or(false) {
            if text.is_empty() {
                text = format!(
                    "MCP server `{server}` reported an error on `{tool}`, without a message"
                );
            }
            return Err(ToolError::new(text));
        }
        Ok(Value::String(text))
    }
}

/// A listed tool's input schema as one a provider accepts: of `type` `object` (added when the
/// server left it out), or `None`, with a warning, for a schema of another type.
fn object_schema(server: &str, tool: &str, schema: &rmcp::model::JsonObject) -> Option<Value> {
    let mut schema = schema.clone();
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        None => {
            schema.insert("type".to_owned(), Value::String("object".to_owned()));
        }
        Some(other) => {
            tracing::warn!(
                server,
                tool,
                "an MCP tool is left out: its input schema's type is {other}, not \"object\""
            );
            return None;
        }
    }
    Some(Value::Object(schema))
}

/// What the model reads of one content block of a result: text as it is, a text resource's
/// text, and for media (base64 images, audio, blobs) a line saying what was left out, since a
/// tool result reaches the model as text and base64 would only fill its context.
fn block_text(block: &ContentBlock) -> String {
    let left_out = |what: &str, mime_type: Option<&str>, data: &str| {
        let mime_type = mime_type.unwrap_or("unknown type");
        format!(
            "[{what} ({mime_type}, {} bytes of base64) left out: tool results reach the model as text]",
            data.len()
        )
    };
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => left_out("an image", Some(&image.mime_type), &image.data),
        ContentBlock::Audio(audio) => left_out("audio", Some(&audio.mime_type), &audio.data),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => left_out(&format!("resource {uri}"), mime_type.as_deref(), blob),
            other => serde_json::to_string(other).unwrap_or_default(),
        },
        // A resource link, and kinds a later MCP may add, as the server sent them.
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}
