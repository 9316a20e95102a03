//! What each hook receives and what it may return.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::cancel::CancelToken;
use crate::message::{Message, ToolCall};
use crate::model::{
    CallSettings, FinishReason, Model, ModelErrorKind, ModelRequest, OutputSchema, ToolChoice,
    ToolSpec, Usage,
};
use crate::tool::{AnyValue, DynTool, ToolError, ToolInput};

/// before_run: the agent and the raw input of a turn.
#[derive(Clone, Debug)]
pub struct RunContext {
    /// The agent's name.
    pub agent: Arc<str>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The user's input.
    pub input: String,
    /// Whether this turn continues an earlier one.
    pub continuation: bool,
}

/// before_turn: the fully assembled turn, before the first step.
#[derive(Clone, Debug)]
pub struct TurnContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The assembled system prompt.
    pub system: Option<String>,
    /// The messages the first step would send (history plus the new input).
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<Arc<ToolSpec>>,
    /// The model's id.
    pub model: String,
    /// Whether this turn continues an earlier one.
    pub continuation: bool,
    /// Custom fields from the request.
    pub body: Map<String, Value>,
}

/// What a before_turn hook may change; every field is optional. Several hooks' configs merge in
/// order: later set fields win, extra tools add up.
#[derive(Clone, Default)]
pub struct TurnConfig {
    /// Use this model for the turn.
    pub model: Option<Arc<dyn Model>>,
    /// Replace the system prompt.
    pub system: Option<String>,
    /// Replace the messages sent.
    pub messages: Option<Vec<Message>>,
    /// Tools added for this turn only.
    pub tools: Vec<Arc<dyn DynTool>>,
    /// Limit the tools the model may call to these names.
    pub active_tools: Option<Vec<String>>,
    /// How the model may choose tools.
    pub tool_choice: Option<ToolChoice>,
    /// Override the step limit.
    pub max_steps: Option<usize>,
    /// Send earlier reasoning back to the model.
    pub send_reasoning: Option<bool>,
    /// Sampling and length settings (set fields override the agent's).
    pub settings: CallSettings,
    /// Provider options, merged over the agent's.
    pub provider_options: Option<Map<String, Value>>,
    /// Overrides the provider's idle timeout between chunks (`Duration::ZERO` turns it off).
    pub stall_timeout: Option<Duration>,
    /// Asks for a final answer that is JSON matching this schema.
    pub output_schema: Option<OutputSchema>,
}

impl fmt::Debug for TurnConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnConfig")
            .field("model", &self.model.as_ref().map(|m| m.id().to_owned()))
            .field("system", &self.system)
            .field("messages", &self.messages)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.spec().name.clone())
                    .collect::<Vec<_>>(),
            )
            .field("active_tools", &self.active_tools)
            .field("tool_choice", &self.tool_choice)
            .field("max_steps", &self.max_steps)
            .field("send_reasoning", &self.send_reasoning)
            .field("settings", &self.settings)
            .field("provider_options", &self.provider_options)
            .field("stall_timeout", &self.stall_timeout)
            .field("output_schema", &self.output_schema)
            .finish()
    }
}

impl TurnConfig {
    /// Merges `later` over `self`.
    pub(crate) fn merge(&mut self, later: TurnConfig) {
        let TurnConfig {
            model,
            system,
            messages,
            tools,
            active_tools,
            tool_choice,
            max_steps,
            send_reasoning,
            settings,
            provider_options,
            stall_timeout,
            output_schema,
        } = later;
        self.model = model.or(self.model.take());
        self.system = system.or(self.system.take());
        self.messages = messages.or(self.messages.take());
        self.tools.extend(tools);
        self.active_tools = active_tools.or(self.active_tools.take());
        self.tool_choice = tool_choice.or(self.tool_choice.take());
        self.max_steps = max_steps.or(self.max_steps);
        self.send_reasoning = send_reasoning.or(self.send_reasoning);
        self.settings = settings.or(&self.settings);
        self.stall_timeout = stall_timeout.or(self.stall_timeout);
        self.output_schema = output_schema.or(self.output_schema.take());
        match (&mut self.provider_options, provider_options) {
            (Some(existing), Some(more)) => existing.extend(more),
            (slot @ None, more) => *slot = more,
            (Some(_), None) => {}
        }
    }
}

/// before_step: the step about to call the model.
#[derive(Clone, Debug)]
pub struct StepContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step number (zero-based).
    pub step: usize,
    /// The steps already finished in this turn.
    pub previous: Vec<StepRecord>,
    /// The messages this step would send.
    pub messages: Vec<Message>,
}

/// What a before_step hook may change for that step only.
#[derive(Clone, Default)]
pub struct StepConfig {
    /// Use this model for the step.
    pub model: Option<Arc<dyn Model>>,
    /// Replace the system prompt for the step.
    pub system: Option<String>,
    /// Replace the messages sent in the step (history is not changed).
    pub messages: Option<Vec<Message>>,
    /// Limit the tools the model may call in the step.
    pub active_tools: Option<Vec<String>>,
    /// How the model may choose tools in the step.
    pub tool_choice: Option<ToolChoice>,
}

impl fmt::Debug for StepConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepConfig")
            .field("model", &self.model.as_ref().map(|m| m.id().to_owned()))
            .field("system", &self.system)
            .field("messages", &self.messages)
            .field("active_tools", &self.active_tools)
            .field("tool_choice", &self.tool_choice)
            .finish()
    }
}

impl StepConfig {
    pub(crate) fn merge(&mut self, later: StepConfig) {
        self.model = later.model.or(self.model.take());
        self.system = later.system.or(self.system.take());
        self.messages = later.messages.or(self.messages.take());
        self.active_tools = later.active_tools.or(self.active_tools.take());
        self.tool_choice = later.tool_choice.or(self.tool_choice.take());
    }
}

/// on_llm_start: the request about to be sent.
#[derive(Clone, Debug)]
pub struct LlmStartContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step number.
    pub step: usize,
    /// The request (model, system, messages, tools, settings).
    pub request: ModelRequest,
}

/// on_llm_end: what one model call produced.
#[derive(Clone, Debug)]
pub struct LlmEndContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step number.
    pub step: usize,
    /// The model's id.
    pub model: String,
    /// The text streamed.
    pub text: String,
    /// The tool calls asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped (`None` when the stream broke).
    pub finish_reason: Option<FinishReason>,
    /// Token usage.
    pub usage: Usage,
    /// Time from the request to the end of the stream.
    pub latency: Duration,
    /// The error that broke the stream, if it broke.
    pub error: Option<String>,
}

/// on_chunk: one streamed chunk.
#[derive(Clone, Debug)]
pub struct ChunkContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step number.
    pub step: usize,
    /// The chunk.
    pub chunk: Chunk,
}

/// A streamed chunk, as observers and the stream API see it.
#[derive(Clone, Debug, PartialEq)]
pub enum Chunk {
    /// Visible text.
    TextDelta(String),
    /// Reasoning.
    ReasoningDelta(String),
    /// A broken stream is being retried from the start of its step: drop (or mark as void)
    /// every text, reasoning and tool-input chunk this step streamed so far. The retried
    /// attempt's chunks follow from the beginning, and the step's record, the turn's result
    /// and the stored history hold only the attempt that completed; no tool ran from the
    /// discarded one.
    Discarded {
        /// Why the attempt was discarded.
        reason: String,
    },
    /// A piece of a tool call's arguments.
    ToolInputDelta {
        /// The call id.
        id: String,
        /// The argument text added.
        delta: String,
    },
    /// A complete tool call from the model.
    ToolCall(ToolCall),
    /// A tool's result as the model will read it.
    ToolResult {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        content: String,
        /// Whether the call failed.
        is_error: bool,
    },
}

/// before_tool_call: one call about to run, with input typed as `I`.
#[derive(Clone, Debug)]
pub struct ToolCallContext<I> {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The model's id for the call.
    pub call_id: Arc<str>,
    /// The tool called.
    pub tool_name: Arc<str>,
    /// The input: what the model sent, or what an earlier hook's Modify made of it.
    pub input: I,
    /// The step whose reply asked for the call.
    pub step: usize,
    /// Whether the tool was added at run time rather than declared statically.
    pub dynamic: bool,
    /// The conversation as the model saw it in this step.
    pub messages: Arc<Vec<Message>>,
    /// Cancelled when the turn is aborted.
    pub cancel: CancelToken,
}

/// What a before_tool_call hook decides. Returning `()` means [`Allow`](Self::Allow).
#[derive(Debug, Default)]
pub enum ToolCallDecision<I: ToolInput> {
    /// Run the tool with the current input.
    #[default]
    Allow,
    /// Run the tool with this input instead (the next hook sees it).
    Modify(I),
    /// Do not run; the model receives the reason, or a default message naming the tool.
    Block(Option<String>),
    /// Do not run; the model receives this output.
    Substitute(I::Output),
}

impl<I: ToolInput> ToolCallDecision<I> {
    /// Blocks with a reason the model reads.
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallDecision::Block(Some(reason.into()))
    }
}

/// How a tool call ended.
#[derive(Debug)]
pub enum ToolOutcome {
    /// The tool ran and returned this output.
    Executed(AnyValue),
    /// The tool (or a gate hook) failed; the model received the error.
    Failed(ToolError),
    /// A hook blocked the call; the model received this message.
    Blocked(String),
    /// A hook substituted this output; the tool did not run.
    Substituted(AnyValue),
}

impl ToolOutcome {
    /// True for all outcomes but [`Failed`](Self::Failed): the model received a valid result.
    pub fn success(&self) -> bool {
        !matches!(self, ToolOutcome::Failed(_))
    }

    /// The outcome's name: `executed`, `failed`, `blocked` or `substituted`.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolOutcome::Executed(_) => "executed",
            ToolOutcome::Failed(_) => "failed",
            ToolOutcome::Blocked(_) => "blocked",
            ToolOutcome::Substituted(_) => "substituted",
        }
    }

    fn value(&self) -> Option<&AnyValue> {
        match self {
            ToolOutcome::Executed(value) | ToolOutcome::Substituted(value) => Some(value),
            _ => None,
        }
    }
}

/// after_tool_call: one call's outcome, with input typed as `I` and output as `O`.
pub struct ToolCallResultContext<I, O = Value> {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The model's id for the call.
    pub call_id: Arc<str>,
    /// The tool called.
    pub tool_name: Arc<str>,
    /// The input the model sent.
    pub model_input: I,
    /// The input the tool ran with (after Modify decisions); equals `model_input` otherwise.
    pub effective_input: I,
    /// The step whose reply asked for the call.
    pub step: usize,
    /// Whether the tool was added at run time.
    pub dynamic: bool,
    /// How the call ended.
    pub outcome: Arc<ToolOutcome>,
    /// Wall-clock time of the tool's execution (zero when it did not run).
    pub duration: Duration,
    /// The conversation as the model saw it in this step.
    pub messages: Arc<Vec<Message>>,
    pub(crate) output_json: Option<Value>,
    pub(crate) _output: PhantomData<fn() -> O>,
}

impl<I: fmt::Debug, O> fmt::Debug for ToolCallResultContext<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCallResultContext")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("model_input", &self.model_input)
            .field("effective_input", &self.effective_input)
            .field("outcome", &self.outcome)
            .field("duration", &self.duration)
            .finish()
    }
}

impl<I, O: 'static> ToolCallResultContext<I, O> {
    /// True unless the call failed.
    pub fn success(&self) -> bool {
        self.outcome.success()
    }

    /// The output the model received (executed or substituted), typed as `O`. `None` when the
    /// call failed or was blocked, or when a hook substituted an output of another type.
    pub fn output(&self) -> Option<&O> {
        if TypeId::of::<O>() == TypeId::of::<Value>() {
            return (self.output_json.as_ref()? as &dyn Any).downcast_ref::<O>();
        }
        self.outcome.value()?.downcast_ref::<O>()
    }

    /// The output as JSON (executed or substituted).
    pub fn output_json(&self) -> Option<Value> {
        self.outcome.value()?.to_json().ok()
    }

    /// The error, when the call failed.
    pub fn error(&self) -> Option<&ToolError> {
        match &*self.outcome {
            ToolOutcome::Failed(error) => Some(error),
            _ => None,
        }
    }
}

/// One finished step: on_step_finish receives it, and turn results keep them all.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRecord {
    /// The step number.
    pub step: usize,
    /// The model's id.
    pub model: String,
    /// The text streamed.
    pub text: String,
    /// The reasoning streamed.
    pub reasoning: String,
    /// The tool calls asked for, in the model's order.
    pub tool_calls: Vec<ToolCall>,
    /// Their results, in the same order (none for a call an after_tool_call_success/failure
    /// hook dropped from history).
    pub tool_results: Vec<ToolResultRecord>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Token usage of the step's model call.
    pub usage: Usage,
    /// What the provider sent beyond text, reasoning, calls and usage, in order (see
    /// [`ModelEvent::ProviderMetadata`](crate::ModelEvent::ProviderMetadata)).
    pub provider_metadata: Vec<serde_json::Value>,
}

/// One tool call's result in a step record.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResultRecord {
    /// The call id.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// What the model received.
    pub content: String,
    /// Whether the model received an error.
    pub is_error: bool,
    /// `executed`, `failed`, `blocked` or `substituted` (`rejected` when the tool was unknown or
    /// its arguments invalid, and no hook ran).
    pub outcome: &'static str,
    /// How long the tool ran.
    pub duration: Duration,
}

/// Why a limit ended a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished on its own.
    Finished,
    /// The step limit was reached.
    MaxSteps,
}

impl StopReason {
    /// The reason in snake_case: `finished`, `max_steps`.
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::Finished => "finished",
            StopReason::MaxSteps => "max_steps",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// on_stop: a limit ended the turn.
#[derive(Clone, Debug)]
pub struct StopContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// Which limit.
    pub reason: StopReason,
    /// Steps run.
    pub steps: usize,
    /// The last step's text.
    pub text: String,
}

/// What an on_stop hook decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StopDecision {
    /// End the turn as completed (stop reason stays the limit).
    #[default]
    Complete,
    /// End the turn as completed with this final answer.
    Output(String),
    /// Fail the turn with this message.
    Fail(String),
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnStatus {
    /// It produced a final answer.
    Completed,
    /// An error ended it.
    Error,
    /// It was cancelled.
    Aborted,
}

impl TurnStatus {
    /// The status as on_chat_response reports it: `completed`, `error`, `aborted`.
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnStatus::Completed => "completed",
            TurnStatus::Error => "error",
            TurnStatus::Aborted => "aborted",
        }
    }
}

impl fmt::Display for TurnStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error that ended a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnError {
    /// What failed.
    pub kind: TurnErrorKind,
    /// A readable description.
    pub message: String,
}

/// What kind of failure ended a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnErrorKind {
    /// The model call failed.
    Model(ModelErrorKind),
    /// The model reported an error inside its stream.
    ModelInBand,
    /// A hook failed and its policy failed the turn.
    Hook {
        /// The event.
        event: &'static str,
        /// The hook's name.
        hook: String,
    },
    /// An on_stop hook failed the turn.
    Stopped,
    /// The history store failed.
    Store,
    /// Another turn of the session was running and the agent rejects overlapping turns.
    Busy,
    /// A hook replaced the error.
    Custom,
    /// Code the turn ran outside any hook or tool (a session's token counter, say) panicked.
    /// Panics in hooks and tools follow the failure policy; a model's or a store's panic is
    /// reported as that model's or store's error.
    Panicked,
}

impl TurnError {
    /// An error of this kind.
    pub fn new(kind: TurnErrorKind, message: impl Into<String>) -> Self {
        TurnError {
            kind,
            message: message.into(),
        }
    }

    /// An error an on_chat_error hook surfaces instead of the original.
    pub fn custom(message: impl Into<String>) -> Self {
        TurnError::new(TurnErrorKind::Custom, message)
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TurnError {}

/// Where in a turn an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorStage {
    /// Reading the request.
    Parse,
    /// Storing messages.
    Persist,
    /// The turn's own logic and its hooks.
    Turn,
    /// The model's stream.
    Stream,
    /// Recovering from an earlier error.
    Recovery,
    /// Assembling the transcript.
    Transcript,
}

impl ErrorStage {
    /// The stage's name as Think spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorStage::Parse => "parse",
            ErrorStage::Persist => "persist",
            ErrorStage::Turn => "turn",
            ErrorStage::Stream => "stream",
            ErrorStage::Recovery => "recovery",
            ErrorStage::Transcript => "transcript",
        }
    }
}

/// What kind of error ended a turn, as classify_chat_error says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatErrorClassification {
    /// The conversation no longer fits the model's context window.
    ContextOverflow,
    /// The provider is rate limiting.
    RateLimit,
    /// A passing failure worth retrying.
    Transient,
    /// A failure that will not go away.
    Fatal,
    /// Not known.
    Unknown,
}

impl ChatErrorClassification {
    /// The classification as Think spells it: `context_overflow`, `rate_limit`, `transient`,
    /// `fatal`, `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChatErrorClassification::ContextOverflow => "context_overflow",
            ChatErrorClassification::RateLimit => "rate_limit",
            ChatErrorClassification::Transient => "transient",
            ChatErrorClassification::Fatal => "fatal",
            ChatErrorClassification::Unknown => "unknown",
        }
    }
}

impl fmt::Display for ChatErrorClassification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ErrorStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// classify_chat_error: the error to classify.
#[derive(Clone, Debug)]
pub struct ClassifyContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The error.
    pub error: TurnError,
    /// Where it happened.
    pub stage: ErrorStage,
}

/// on_chat_error: the error that ended a turn.
#[derive(Clone, Debug)]
pub struct ChatErrorContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The error.
    pub error: TurnError,
    /// Where it happened.
    pub stage: ErrorStage,
    /// Whether the user's message was already stored.
    pub messages_persisted: bool,
    /// The classification, from classify_chat_error or the default classifier.
    pub classification: ChatErrorClassification,
    /// The partial assistant text persisted before this hook ran.
    pub partial_text: String,
}

/// on_chat_response: how the turn ended, once per turn.
#[derive(Clone, Debug)]
pub struct ChatResponse {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The final (or partial) assistant message.
    pub message: Message,
    /// Whether this turn continued an earlier one.
    pub continuation: bool,
    /// How it ended.
    pub status: TurnStatus,
    /// The error surfaced, when it ended in error.
    pub error: Option<TurnError>,
}

/// The outcome of a turn: what `run` returns and the stream API's last event.
#[derive(Clone, Debug)]
pub struct TurnResult {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// How the turn ended.
    pub status: TurnStatus,
    /// The final answer (the last step's text, or what on_stop supplied; partial on error/abort).
    pub text: String,
    /// Why it stopped, when it completed.
    pub stop_reason: Option<StopReason>,
    /// Every step, in order.
    pub steps: Vec<StepRecord>,
    /// The messages this turn added to the conversation.
    pub messages: Vec<Message>,
    /// Token usage over all steps.
    pub usage: Usage,
    /// The error surfaced, when the turn ended in error.
    pub error: Option<TurnError>,
    /// The error's classification, when the turn ended in error.
    pub classification: Option<ChatErrorClassification>,
}

impl TurnResult {
    /// True when the turn completed.
    pub fn is_completed(&self) -> bool {
        self.status == TurnStatus::Completed
    }
}

/// Builds a result context from a call's state. `I::from_args` may fail when a hook is registered
/// for a tool whose arguments it cannot carry; the caller reports that as the hook's failure.
pub(crate) fn result_view<I: ToolInput, O: 'static>(
    call: &crate::hooks::tool_hooks::CallState,
    outcome: &Arc<ToolOutcome>,
    duration: Duration,
) -> Option<ToolCallResultContext<I, O>> {
    let model_input = I::from_args(&call.tool_name, &call.model_input)?;
    let effective_input = I::from_args(&call.tool_name, &call.effective_input)?;
    let output_json = if TypeId::of::<O>() == TypeId::of::<Value>() {
        outcome.value().and_then(|v| v.to_json().ok())
    } else {
        None
    };
    Some(ToolCallResultContext {
        request_id: call.request_id.clone(),
        call_id: call.call_id.clone(),
        tool_name: call.tool_name.clone(),
        model_input,
        effective_input,
        step: call.step,
        dynamic: call.dynamic,
        outcome: outcome.clone(),
        duration,
        messages: call.messages.clone(),
        output_json,
        _output: PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FinishReason;

    #[test]
    fn outcomes_display_in_snake_case_as_on_the_wire() {
        let shown = |value: &dyn fmt::Display| value.to_string();
        assert_eq!(shown(&TurnStatus::Completed), "completed");
        assert_eq!(shown(&TurnStatus::Error), "error");
        assert_eq!(shown(&TurnStatus::Aborted), "aborted");
        assert_eq!(shown(&StopReason::Finished), "finished");
        assert_eq!(shown(&StopReason::MaxSteps), "max_steps");
        assert_eq!(shown(&FinishReason::Stop), "stop");
        assert_eq!(shown(&FinishReason::Length), "length");
        assert_eq!(shown(&FinishReason::ToolCalls), "tool_calls");
        assert_eq!(shown(&FinishReason::ContentFilter), "content_filter");
        assert_eq!(
            shown(&FinishReason::Other("pause_turn".to_owned())),
            "pause_turn"
        );
        assert_eq!(
            shown(&ChatErrorClassification::ContextOverflow),
            "context_overflow"
        );
        assert_eq!(shown(&ChatErrorClassification::RateLimit), "rate_limit");
        assert_eq!(shown(&ChatErrorClassification::Transient), "transient");
        assert_eq!(shown(&ChatErrorClassification::Fatal), "fatal");
        assert_eq!(shown(&ChatErrorClassification::Unknown), "unknown");
        assert_eq!(shown(&ErrorStage::Persist), "persist");
        // The wire form of a finish reason is its serde form.
        for reason in [
            FinishReason::Stop,
            FinishReason::ToolCalls,
            FinishReason::ContentFilter,
        ] {
            assert_eq!(
                serde_json::to_value(&reason).unwrap(),
                serde_json::Value::String(reason.to_string())
            );
        }
    }
}
