//! Extension hooks (Think's extension subscriptions): subscribers registered at run time that
//! receive JSON snapshots of before_turn, before_tool_call, after_tool_call, on_step_finish and
//! on_chunk, after the agent's own hooks, in the order they were added. A failing or slow
//! subscriber is logged and never aborts the turn; only before_turn's answer is read (its
//! scalar `TurnConfig` fields merge back, the last subscriber winning).
//!
//! The snapshots are a versioned JSON contract ([`SNAPSHOT_VERSION`]), with exactly the fields
//! of Think's table; `agent-core/docs/extensions.md` gives a JSON Schema for each.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::run::unless_turn_cancelled;
use super::{Chunk, ModelResult, StepRecord, ToolOutcome, TurnConfig, TurnContext};
use crate::util::{BoxFuture, catch_panic, catch_unwind};

/// The version of the snapshot contract: it changes when a field changes meaning or goes
/// away (fields may be added within a version).
pub const SNAPSHOT_VERSION: u32 = 1;

/// The events an extension may subscribe to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExtensionEvent {
    /// `beforeTurn`: `{ system, toolNames, messageCount, continuation, body, modelId }`; the
    /// answer may be an object of `TurnConfig` scalars to merge back.
    BeforeTurn,
    /// `beforeToolCall`: `{ toolName, toolCallId, input, stepNumber, dynamic }`.
    BeforeToolCall,
    /// `afterToolCall`: `{ toolName, toolCallId, input, stepNumber, durationMs, success,
    /// output | error, dynamic, modelResult: { content, isError, replaced, dropped } }`.
    AfterToolCall,
    /// `onStepFinish`: `{ stepNumber, finishReason, text, reasoningText, toolCallCount,
    /// toolResultCount, usage, providerMetadata }`.
    OnStepFinish,
    /// `onChunk`: `{ type, text?, toolName?, toolCallId? }`.
    OnChunk,
}

impl ExtensionEvent {
    /// Think's name of the event (`beforeTurn`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ExtensionEvent::BeforeTurn => "beforeTurn",
            ExtensionEvent::BeforeToolCall => "beforeToolCall",
            ExtensionEvent::AfterToolCall => "afterToolCall",
            ExtensionEvent::OnStepFinish => "onStepFinish",
            ExtensionEvent::OnChunk => "onChunk",
        }
    }
}

/// The onChunk snapshot types, as [`Extension::chunk_types`] names them.
const CHUNK_TYPES: [&str; 8] = [
    "text-delta",
    "reasoning-delta",
    "tool-input-start",
    "tool-input-delta",
    "tool-call",
    "tool-result",
    "tool-preliminary",
    "discarded",
];

type Handler =
    Arc<dyn Fn(ExtensionEvent, Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// A subscriber to JSON snapshots of a turn's events (see the module docs), added with
/// [`AgentBuilder::extension`](crate::AgentBuilder::extension).
///
/// ```
/// use agent_core::{Extension, ExtensionEvent};
/// let audit = Extension::new("audit", |event, snapshot| async move {
///     println!("{}: {snapshot}", event.as_str());
///     Ok(serde_json::Value::Null)
/// })
/// .subscribe([ExtensionEvent::BeforeToolCall, ExtensionEvent::AfterToolCall]);
/// # let _ = audit;
/// ```
#[derive(Clone)]
pub struct Extension {
    pub(crate) name: Arc<str>,
    events: Vec<ExtensionEvent>,
    /// The onChunk types wanted (`None`: all).
    chunk_types: Option<Vec<&'static str>>,
    handler: Handler,
    pub(crate) timeout: Duration,
}

impl fmt::Debug for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extension")
            .field("name", &self.name)
            .field("events", &self.events)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Extension {
    /// An extension named `name` whose `handler` receives each snapshot it subscribed to (see
    /// [`subscribe`](Self::subscribe); none until then) and answers JSON (read for
    /// `beforeTurn` only; `null` changes nothing) or an error (logged).
    pub fn new<F>(
        name: impl Into<String>,
        handler: impl Fn(ExtensionEvent, Value) -> F + Send + Sync + 'static,
    ) -> Extension
    where
        F: Future<Output = Result<Value, String>> + Send + 'static,
    {
        Extension {
            name: Arc::from(name.into()),
            events: Vec::new(),
            chunk_types: None,
            handler: Arc::new(move |event, snapshot| Box::pin(handler(event, snapshot))),
            timeout: Duration::from_secs(5),
        }
    }

    /// Subscribes to these events.
    pub fn subscribe(mut self, events: impl IntoIterator<Item = ExtensionEvent>) -> Extension {
        self.events.extend(events);
        self
    }

    /// Receives onChunk snapshots only for chunks of these types (`text-delta`,
    /// `reasoning-delta`, `tool-input-start`, `tool-input-delta`, `tool-call`, `tool-result`,
    /// `tool-preliminary`, `discarded`). A chunk of another type costs nothing: no snapshot is
    /// built, nothing is allocated. Another type, or chunk types without a subscription to
    /// [`ExtensionEvent::OnChunk`], is a build error of the agent it is added to.
    pub fn chunk_types(mut self, types: impl IntoIterator<Item = &'static str>) -> Extension {
        self.chunk_types = Some(types.into_iter().collect());
        self
    }

    /// Why the extension could never work as asked, if so: a zero timeout (every run would
    /// time out at once), a chunk type no chunk has (a typo), or chunk types without a
    /// subscription to onChunk.
    pub(crate) fn problems(&self) -> Vec<String> {
        let name = &self.name;
        let mut problems = Vec::new();
        if self.timeout.is_zero() {
            problems.push(format!(
                "extension `{name}`: its timeout is zero, so every run would time out at once; \
                 give a positive limit"
            ));
        }
        let Some(types) = &self.chunk_types else {
            return problems;
        };
        problems.extend(types
            .iter()
            .filter(|kind| !CHUNK_TYPES.contains(*kind))
            .map(|kind| {
                format!(
                    "extension `{name}`: no chunk has the onChunk type `{kind}`; the types are {}",
                    CHUNK_TYPES.join(", ")
                )
            }));
        if !self.wants(ExtensionEvent::OnChunk) {
            problems.push(format!(
                "extension `{name}`: `chunk_types` selects onChunk snapshots, and it is not \
                 subscribed to onChunk: add `ExtensionEvent::OnChunk` to its `subscribe`"
            ));
        }
        problems
    }

    /// Whether the extension wants an onChunk snapshot of a chunk of this type.
    pub(crate) fn wants_chunk(&self, kind: &str) -> bool {
        self.wants(ExtensionEvent::OnChunk)
            && self
                .chunk_types
                .as_ref()
                .is_none_or(|types| types.contains(&kind))
    }

    /// How long one snapshot's handling may take before it is abandoned and logged (default
    /// 5 s; zero is a build error of the agent it is added to).
    pub fn timeout(mut self, limit: Duration) -> Extension {
        self.timeout = limit;
        self
    }

    /// Whether the extension subscribed to `event`.
    pub(crate) fn wants(&self, event: ExtensionEvent) -> bool {
        self.events.contains(&event)
    }

    /// Hands one snapshot over; the answer, or `None` when the handler failed, panicked or ran
    /// past its timeout (logged), or was stopped by the turn's cancel (as an async hook is).
    async fn deliver(&self, event: ExtensionEvent, snapshot: Value) -> Option<Value> {
        let handler = &self.handler;
        let failed = |why: String| {
            tracing::warn!(extension = %self.name, event = event.as_str(), "extension hook failed (ignored): {why}");
            None
        };
        let future = match catch_panic(|| handler(event, snapshot)) {
            Ok(future) => catch_unwind(future),
            Err(panic) => return failed(format!("panicked: {panic}")),
        };
        let timed = tokio::time::timeout(self.timeout, future);
        match unless_turn_cancelled(timed).await? {
            Ok(Ok(Ok(answer))) => Some(answer),
            Ok(Ok(Err(error))) => failed(format!("returned an error: {error}")),
            Ok(Err(panic)) => failed(format!("panicked: {panic}")),
            Err(_) => failed(format!("timed out after {} ms", self.timeout.as_millis())),
        }
    }
}

/// Whether any of `extensions` is subscribed to `event`. Inlined: the stream reader asks it
/// for each chunk, and the call cost about 5 instructions a chunk
/// (`agent-providers/benches/chunks.rs`).
#[inline]
pub(crate) fn subscribed(extensions: &[Extension], event: ExtensionEvent) -> bool {
    extensions.iter().any(|extension| extension.wants(event))
}

/// Delivers `snapshot` (built only when someone subscribed) to each extension subscribed to
/// `event`, in order; their answers.
pub(crate) async fn dispatch(
    extensions: &[Extension],
    event: ExtensionEvent,
    snapshot: impl FnOnce() -> Value,
) -> Vec<Value> {
    if !subscribed(extensions, event) {
        return Vec::new();
    }
    let snapshot = snapshot();
    let mut answers = Vec::new();
    for extension in extensions {
        if extension.wants(event)
            && let Some(answer) = extension.deliver(event, snapshot.clone()).await
        {
            answers.push(answer);
        }
    }
    answers
}

/// `beforeTurn`'s snapshot.
pub(crate) fn turn_snapshot(ctx: &TurnContext) -> Value {
    let tools: Vec<&str> = ctx.tools.iter().map(|t| t.name.as_str()).collect();
    json!({
        "system": ctx.system,
        "toolNames": tools,
        "messageCount": ctx.messages.len(),
        "continuation": ctx.continuation,
        "body": ctx.body,
        "modelId": ctx.model,
    })
}

/// Merges the scalar `TurnConfig` fields of a `beforeTurn` answer into `config` (an answer
/// that is not an object, and fields of the wrong type, are ignored with a log line).
pub(crate) fn merge_turn_answer(config: &mut TurnConfig, answer: &Value) {
    let Some(fields) = answer.as_object() else {
        return;
    };
    for (key, value) in fields {
        let taken = match key.as_str() {
            "system" => value.as_str().map(|v| config.system = Some(v.to_owned())),
            "maxSteps" => value
                .as_u64()
                .map(|v| config.max_steps = Some(usize::try_from(v).unwrap_or(usize::MAX))),
            "temperature" => value
                .as_f64()
                .map(|v| config.settings.temperature = Some(v)),
            "topP" => value.as_f64().map(|v| config.settings.top_p = Some(v)),
            "maxOutputTokens" => value.as_u64().map(|v| {
                config.settings.max_output_tokens = Some(u32::try_from(v).unwrap_or(u32::MAX))
            }),
            "seed" => value.as_u64().map(|v| config.settings.seed = Some(v)),
            "sendReasoning" => value.as_bool().map(|v| config.send_reasoning = Some(v)),
            // Think's stream-stall watchdog, in milliseconds (0 turns it off).
            "chatStreamStallTimeoutMs" => value
                .as_u64()
                .map(|v| config.stall_timeout = Some(Duration::from_millis(v))),
            _ => None,
        };
        if taken.is_none() {
            tracing::warn!(field = %key, "a beforeTurn extension answer field is not a TurnConfig scalar of its type (ignored)");
        }
    }
}

/// `beforeToolCall`'s snapshot.
pub(crate) fn call_snapshot(
    tool: &str,
    call_id: &str,
    input: Value,
    step: usize,
    dynamic: bool,
) -> Value {
    json!({
        "toolName": tool,
        "toolCallId": call_id,
        "input": input,
        "stepNumber": step,
        "dynamic": dynamic,
    })
}

/// `afterToolCall`'s snapshot: `beforeToolCall`'s with the duration, the outcome and the
/// result the model reads.
pub(crate) fn result_snapshot(
    mut call: Value,
    duration: Duration,
    outcome: &ToolOutcome,
    read: &ModelResult,
) -> Value {
    let fields = call.as_object_mut().expect("a call snapshot is an object");
    fields.insert(
        "durationMs".to_owned(),
        json!(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)),
    );
    fields.insert("success".to_owned(), json!(outcome.success()));
    match outcome {
        ToolOutcome::Executed(value) | ToolOutcome::Substituted(value) => {
            fields.insert("output".to_owned(), value.to_json().unwrap_or(Value::Null));
        }
        ToolOutcome::Failed(error) => {
            fields.insert("error".to_owned(), json!(error.message()));
        }
        ToolOutcome::Blocked(reason) => {
            fields.insert("output".to_owned(), json!(reason));
        }
    }
    fields.insert(
        "modelResult".to_owned(),
        json!({
            "content": read.content.as_str(),
            "isError": read.is_error,
            "replaced": read.replaced,
            "dropped": read.dropped,
        }),
    );
    call
}

/// `onStepFinish`'s snapshot.
pub(crate) fn step_snapshot(record: &StepRecord) -> Value {
    json!({
        "stepNumber": record.step,
        "finishReason": record.finish_reason.as_str(),
        "text": record.text,
        "reasoningText": record.reasoning,
        "toolCallCount": record.tool_calls.len(),
        "toolResultCount": record.tool_results.len(),
        "usage": {
            "inputTokens": record.usage.input_tokens,
            "outputTokens": record.usage.output_tokens,
        },
        "providerMetadata": record.provider_metadata,
    })
}

/// Delivers `chunk`'s snapshot to the extensions that want chunks of its type; builds it (and
/// allocates) only when one does.
pub(crate) async fn dispatch_chunk(extensions: &[Extension], chunk: &Chunk) {
    // Most agents have no extension: no chunk is read for them.
    if extensions.is_empty() {
        return;
    }
    let kind = chunk_parts(chunk).0;
    if !extensions.iter().any(|e| e.wants_chunk(kind)) {
        return;
    }
    let snapshot = chunk_snapshot(chunk);
    for extension in extensions {
        if extension.wants_chunk(kind) {
            extension
                .deliver(ExtensionEvent::OnChunk, snapshot.clone())
                .await;
        }
    }
}

/// A chunk's type, text, tool name and call id, as onChunk names them.
fn chunk_parts(chunk: &Chunk) -> (&'static str, Option<&str>, Option<&str>, Option<&str>) {
    match chunk {
        Chunk::TextDelta(text) => ("text-delta", Some(text.as_str()), None, None),
        Chunk::ReasoningDelta(text) => ("reasoning-delta", Some(text.as_str()), None, None),
        Chunk::ToolInputStart { id, name } => (
            "tool-input-start",
            None,
            Some(name.as_str()),
            Some(id.as_str()),
        ),
        Chunk::ToolInputDelta { id, delta } => (
            "tool-input-delta",
            Some(delta.as_str()),
            None,
            Some(id.as_str()),
        ),
        Chunk::ToolCall(call) => (
            "tool-call",
            None,
            Some(call.name.as_str()),
            Some(call.id.as_str()),
        ),
        Chunk::ToolResult { id, name, .. } => {
            ("tool-result", None, Some(name.as_str()), Some(id.as_str()))
        }
        Chunk::Discarded { .. } => ("discarded", None, None, None),
        Chunk::ToolPreliminary { id, name, .. } => (
            "tool-preliminary",
            None,
            Some(name.as_str()),
            Some(id.as_str()),
        ),
    }
}

/// `onChunk`'s snapshot: the chunk's type and, when it has them, its text and tool.
fn chunk_snapshot(chunk: &Chunk) -> Value {
    let mut fields = Map::new();
    let (kind, text, tool, call) = chunk_parts(chunk);
    fields.insert("type".to_owned(), json!(kind));
    if let Some(text) = text {
        fields.insert("text".to_owned(), json!(text));
    }
    if let Some(tool) = tool {
        fields.insert("toolName".to_owned(), json!(tool));
    }
    if let Some(call) = call {
        fields.insert("toolCallId".to_owned(), json!(call));
    }
    Value::Object(fields)
}
