//! The model seam: a streaming model trait, its request and its event stream.
//!
//! Providers (HTTP clients) and the [`ScriptedModel`] implement [`Model`]; the turn loop in
//! `engine/` is the only caller.

mod delta_text;
mod scripted;

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Message, ToolCall};
use crate::text::Text;
use crate::tool::{ToolSpec, schema_for};

pub use delta_text::DeltaText;
pub use scripted::{ScriptedModel, ScriptedStep};

/// The stream of events a model call yields.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// A language model that streams its answer.
///
/// A stream must end with [`ModelEvent::Finish`]; one that ends without it is a truncated stream,
/// and the engine turns it into an error rather than a shorter answer.
pub trait Model: Send + Sync {
    /// The model's identifier (for example `gpt-4o`), reported in traces and contexts.
    fn id(&self) -> &str;

    /// Starts one model call.
    fn stream(&self, request: ModelRequest) -> ModelStream;

    /// Whether the model honours [`ModelRequest::output_schema`] (structured output): an
    /// agent's typed output then uses it on steps that offer no tools
    /// ([`OutputMode::Auto`](crate::OutputMode::Auto)). Default `false`.
    fn supports_output_schema(&self) -> bool {
        false
    }
}

impl fmt::Debug for dyn Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model").field("id", &self.id()).finish()
    }
}

/// Everything one model call receives.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The model identifier asked for.
    pub model: String,
    /// The system prompt, if any.
    pub system: Option<String>,
    /// The conversation so far, shared with the turn that sends it: a step's request holds
    /// the turn's history without copying it (`Arc::make_mut` gives a request of one's own to
    /// change; `Vec::into` makes one).
    pub messages: Arc<Vec<Message>>,
    /// The tools offered to the model.
    pub tools: Vec<Arc<ToolSpec>>,
    /// How the model may choose tools.
    pub tool_choice: ToolChoice,
    /// Sampling and length settings.
    pub settings: CallSettings,
    /// Whether earlier reasoning is sent back to the model.
    pub send_reasoning: bool,
    /// Provider-specific options, passed through untouched.
    pub provider_options: Map<String, Value>,
    /// Overrides the provider's idle timeout between chunks (`Duration::ZERO` turns it off).
    pub stall_timeout: Option<Duration>,
    /// Asks for a final answer that is JSON matching this schema (structured output).
    pub output_schema: Option<OutputSchema>,
}

impl ModelRequest {
    /// A request to `model` with no messages, no tools and default settings; set the public
    /// fields for the rest.
    pub fn new(model: impl Into<String>) -> Self {
        ModelRequest {
            model: model.into(),
            ..ModelRequest::default()
        }
    }
}

/// A JSON Schema the model's answer must match (structured output).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// A name for the schema (1 to 64 of `[A-Za-z0-9_-]`).
    pub name: String,
    /// The JSON Schema, shared: an agent with an output type puts the same one in each
    /// step's request without copying it (as [`ModelRequest::tools`] shares tool specs).
    #[serde(with = "shared_value")]
    pub schema: Arc<Value>,
}

/// Serde for a shared JSON value, written and read as the value itself.
mod shared_value {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub(super) fn serialize<S: Serializer>(value: &Arc<Value>, to: S) -> Result<S::Ok, S::Error> {
        value.serialize(to)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Arc<Value>, D::Error> {
        Value::deserialize(from).map(Arc::new)
    }
}

impl OutputSchema {
    /// The schema of a Rust type.
    pub fn of<T: schemars::JsonSchema>(name: impl Into<String>) -> Self {
        OutputSchema::new(name, schema_for::<T>())
    }

    /// A schema named `name`.
    pub fn new(name: impl Into<String>, schema: Value) -> Self {
        OutputSchema {
            name: name.into(),
            schema: Arc::new(schema),
        }
    }
}

/// How the model may choose tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "name")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// Sampling and length settings of a model call. `None` leaves the provider's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallSettings {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Maximum number of output tokens.
    pub max_output_tokens: Option<u32>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Sequences that stop generation.
    pub stop_sequences: Option<Vec<String>>,
    /// Seed for deterministic sampling.
    pub seed: Option<u64>,
}

impl CallSettings {
    /// Fills every field left `None` here from `other`.
    pub fn or(self, other: &CallSettings) -> CallSettings {
        CallSettings {
            temperature: self.temperature.or(other.temperature),
            max_output_tokens: self.max_output_tokens.or(other.max_output_tokens),
            top_p: self.top_p.or(other.top_p),
            stop_sequences: self.stop_sequences.or_else(|| other.stop_sequences.clone()),
            seed: self.seed.or(other.seed),
        }
    }
}

/// One event of a model's stream.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// A piece of visible text (short text held inline: make it with `"text".into()`).
    TextDelta(DeltaText),
    /// A piece of reasoning (short text held inline, as [`TextDelta`](Self::TextDelta)).
    ReasoningDelta(DeltaText),
    /// The provider's signature over this call's reasoning, kept on the assistant message so
    /// the reasoning can be sent back (Anthropic's thinking blocks).
    ReasoningSignature(String),
    /// A tool call begins: its id and the tool's name, before its first
    /// [`ToolInputDelta`](Self::ToolInputDelta). A model that streams a call's arguments sends
    /// it first, once (the engine does not look for it per delta, and shows a start sent again
    /// only if another call started in between); a model whose calls come whole
    /// may leave it out, and the engine makes one just before the call. Shown to on_chunk and
    /// the stream API as [`Chunk::ToolInputStart`](crate::Chunk::ToolInputStart), once per
    /// call; the engine also reads it to stream a final-answer call's partial values in a
    /// step that offers other tools too.
    ToolCallStart {
        /// The call id, as its deltas and its complete call carry it (shared: a decoder hands
        /// out the one it keeps, without a copy).
        id: Text,
        /// The tool's name.
        name: Text,
    },
    /// A piece of a tool call's arguments, as it streams (for observers). Neither field costs
    /// an allocation on its way to on_chunk hooks: the id is shared, and a short piece (a few
    /// characters, as models stream arguments) is held inline.
    ToolInputDelta {
        /// The call id.
        id: Text,
        /// The argument text added.
        delta: DeltaText,
    },
    /// A complete tool call.
    ToolCall(ToolCall),
    /// Token usage so far (later events replace earlier ones).
    Usage(Usage),
    /// The stream's end marker, with why the model stopped.
    Finish(FinishReason),
    /// An error the provider reported inside the stream.
    Error(String),
    /// A block of the reply with no provider-neutral form that the provider needs back in a
    /// later request (Anthropic's server-tool uses and results): kept, as sent, on the
    /// assistant message's `provider_blocks`, and reported in the step's provider metadata.
    ProviderBlock(serde_json::Value),
    /// Something the provider sent that the engine has no event for (Anthropic's server-tool
    /// blocks and container, Perplexity's citations, logprobs), kept rather than dropped: it
    /// reaches the step record's `provider_metadata`, in order.
    ProviderMetadata(serde_json::Value),
    /// A broken stream is being retried: everything this call streamed so far is discarded,
    /// and the retry streams the step again from its start.
    Discard {
        /// Why the attempt was discarded.
        reason: String,
    },
}

/// Token usage of a model call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Reasoning tokens, when reported.
    pub reasoning_tokens: u64,
    /// Input tokens served from a cache, when reported.
    pub cached_input_tokens: u64,
}

impl Usage {
    /// Input plus output tokens, saturating (a server may report any number).
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Adds another call's usage to this one, saturating (a server may report any number).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
    }
}

/// Why a model stopped generating.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end.
    Stop,
    /// The output token limit was hit.
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// A content filter stopped the output.
    ContentFilter,
    /// Any other reason, as the provider named it.
    Other(String),
}

impl FinishReason {
    /// The reason as the wire spells it (`stop`, `length`, `tool_calls`, `content_filter`), or
    /// the provider's own word for any other.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(other) => other,
        }
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed model call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    /// What kind of failure this is.
    pub kind: ModelErrorKind,
    /// A readable description, including any provider error body.
    pub message: String,
    /// The HTTP status, when the provider answered with one.
    pub status: Option<u16>,
    /// How long the provider asked to wait before retrying (rate limits).
    pub retry_after: Option<Duration>,
}

/// Kinds of model failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The request could not be made (connection refused, DNS, TLS).
    Transport,
    /// The provider answered with an error not covered below, or reported one in its stream.
    Provider,
    /// Too many requests (HTTP 429); `retry_after` says how long to wait, when known.
    RateLimited,
    /// The input is longer than the model's context window.
    ContextOverflow,
    /// The API key is missing, wrong or not allowed (HTTP 401, 403).
    Authentication,
    /// The request was rejected as invalid (HTTP 400, 404, 422).
    BadRequest,
    /// The provider failed (HTTP 5xx, 529 overloaded).
    Server,
    /// No response, or no data for longer than a timeout allows (connect, first byte, idle).
    Timeout,
    /// The stream ended without its end marker.
    StreamTruncated,
    /// The stream held something that could not be parsed.
    StreamMalformed,
    /// The connection broke while the stream was being read.
    Disconnected,
    /// Anything else.
    Other,
}

impl ModelError {
    /// A new error of this kind.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
        }
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the delay the provider asked for.
    pub fn with_retry_after(mut self, delay: Option<Duration>) -> Self {
        self.retry_after = delay;
        self
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ModelError {}
