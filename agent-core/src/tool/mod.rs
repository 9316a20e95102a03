//! Tools: the typed [`Tool`] trait that `#[tool]` implements, its type-erased form the engine
//! calls, the input types tool-call hooks may take, and what streaming tools report while they
//! run ([`tool_progress`], [`ToolStream`]).

mod erased;
mod input;
mod spec;
mod stream;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::run_agent::RunAgent;

pub use erased::{AnyValue, ArgsError, ClientTool, DynTool, FnTool, TypedTool};
pub(crate) use erased::{checked_args, typed_args_of};
pub use input::{AcceptsTool, OutputIs, ToolInput, args_from, args_into};
pub use spec::ToolSpec;
pub(crate) use stream::{Preliminary, Report, Reported, reporting, reporting_now};
pub use stream::{ToolStream, ToolUpdate, tool_progress};

/// A tool the model can call, with typed arguments and output.
///
/// `#[tool]` implements this for a generated type; it can also be implemented by hand.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "not a tool",
    note = "annotate a function with `#[tool]` to make a tool, or implement `agent_core::Tool`"
)]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls the tool by (1 to 64 of `[A-Za-z0-9_-]`).
    const NAME: &'static str;
    /// What the tool does, as the model reads it.
    const DESCRIPTION: &'static str;
    /// The arguments, deserialized from the model's JSON.
    type Args: DeserializeOwned + Serialize + Clone + Send + Sync + 'static;
    /// The output, serialized for the model.
    type Output: Serialize + Send + Sync + 'static;
    /// How long a call may run before it is stopped (its future dropped) and the model reads
    /// a timeout error (`#[tool(timeout_ms = N)]`); `None` takes the agent's default
    /// ([`AgentBuilder::tool_timeout`](crate::AgentBuilder::tool_timeout)). A tool that sets
    /// [`RUNS_NOW`](Self::RUNS_NOW) runs inline and cannot be stopped: a timeout of its own is
    /// a build error (`timeout_ms` on a plain `fn`, a compile error).
    const TIMEOUT: Option<Duration> = None;
    /// Whether running a call twice does no more than running it once (`#[tool(idempotent)]`):
    /// an approved call interrupted mid-run (its process stopped) is then run again when its
    /// turn resumes, rather than reported as interrupted.
    const IDEMPOTENT: bool = false;
    /// How many times in a row the model may call this tool again after a failed call
    /// before the turn fails (`#[tool(retries = N)]`); `None` takes the agent's limit
    /// ([`AgentBuilder::tool_retries`](crate::AgentBuilder::tool_retries), which says what
    /// counts as a failure).
    const RETRIES: Option<usize> = None;

    /// JSON Schema 2020-12 of [`Self::Args`], built once.
    fn schema() -> &'static Value;

    /// Whether this call waits for a person's approval before it runs (`#[tool(needs_approval)]`
    /// says always; `#[tool(needs_approval = predicate)]` asks `predicate(&args)`). A call that
    /// needs approval suspends its turn ([`TurnStatus::Suspended`](crate::TurnStatus)) once the
    /// before_tool_call hooks let it through. The default: never.
    fn needs_approval(&self, args: &Self::Args) -> bool {
        let _ = args;
        false
    }

    /// Whether the tool never waits, so that [`call_now`](Self::call_now) runs it: `#[tool]`
    /// sets it for a plain (not `async`) function that does not return a [`ToolStream`]. A
    /// call of such a tool whose hooks are sync too runs on the spot, without a future. The
    /// default: no.
    const RUNS_NOW: bool = false;

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// Runs the tool on the spot; the engine calls it instead of [`call`](Self::call) only when
    /// [`RUNS_NOW`](Self::RUNS_NOW) is set. The default is an error result saying so.
    fn call_now(&self, args: Self::Args, ctx: ToolContext) -> Result<Self::Output, ToolError> {
        let _ = (args, ctx);
        Err(ToolError::new(format!(
            "tool `{}` sets `RUNS_NOW` but does not implement `call_now`",
            Self::NAME
        )))
    }

    /// The tool as the model sees it.
    fn spec() -> ToolSpec {
        ToolSpec {
            name: Self::NAME.to_owned(),
            description: Self::DESCRIPTION.to_owned(),
            parameters: Self::schema().clone(),
        }
    }
}

/// What a tool call knows about where it runs. Tools may take it as a parameter; it is not part
/// of the arguments schema.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolContext {
    /// The agent whose model made the call: its name, its path from the agent asked (`triage >
    /// billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// The model's id for this call.
    pub call_id: Arc<str>,
    /// The name of the tool called.
    pub tool_name: Arc<str>,
    /// The step (zero-based) whose model reply asked for the call.
    pub step: usize,
    /// Cancelled when the turn is aborted.
    pub cancel: CancelToken,
}

impl ToolContext {
    /// The context of call `call_id` of tool `tool_name` made by `agent` in step 0, with a token
    /// nothing cancels: for calling a tool outside a turn (the engine makes its own). Set
    /// `step` and `cancel` on it to change them.
    pub fn new(
        agent: RunAgent,
        call_id: impl Into<Arc<str>>,
        tool_name: impl Into<Arc<str>>,
    ) -> ToolContext {
        ToolContext {
            agent: Arc::new(agent),
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            step: 0,
            cancel: CancelToken::new(),
        }
    }
}

/// A tool failure. The model receives its message as an error result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }

    /// A failure from anything displayable (used for `Result<T, E>` tools).
    pub fn from_display(error: impl fmt::Display) -> Self {
        ToolError {
            message: error.to_string(),
        }
    }

    /// The message the model reads.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(error: E) -> Self {
        ToolError::from_display(error)
    }
}

/// Builds a tool's arguments schema (JSON Schema 2020-12) from its args type, in the form every
/// provider accepts and exactly as a hand-written schema would read: no `$schema` key (some
/// OpenAI-compatible servers reject one), the args type's own title and doc comment dropped (the
/// tool's name and description say it), and an arguments object that lists its `properties`
/// (empty when there are none, which some providers require) and says
/// `additionalProperties: false` (unless the type itself allows more, as a map does).
pub fn schema_for<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
        if map.get("type").and_then(Value::as_str) == Some("object") {
            map.entry("properties")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            map.entry("additionalProperties")
                .or_insert(Value::Bool(false));
        }
    }
    schema
}

/// Whether a tool's parameters schema is one providers take: a JSON object whose `type` is
/// `"object"` (Anthropic requires that `type`, OpenAI an object schema).
pub(crate) fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Checks a tool name: 1 to 64 characters of `[A-Za-z0-9_-]`. `#[tool]` checks this at compile
/// time; tools added at run time are checked when the agent is built.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
