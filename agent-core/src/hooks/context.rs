//! What the turn and step events receive and what they may return: before_run, before_turn,
//! before_step, on_llm_start/end and on_chunk.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::outcome::{StepRecord, TurnError};
use crate::message::{Message, ToolCall};
use crate::model::{
    CallSettings, DeltaText, FinishReason, Model, ModelRequest, OutputSchema, ToolChoice, Usage,
};
use crate::run_agent::RunAgent;
use crate::text::Text;
use crate::tool::{DynTool, ToolSpec};

/// before_run: the agent and the raw input of a turn.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunContext {
    /// The agent this hook fires for: the turn's entry agent (the frame hooks are its own, after
    /// a handoff too), with its name, its path from the agent asked (`triage`, `writer >
    /// researcher` in a subagent's turn), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The user's input.
    pub input: String,
    /// Whether this turn continues an earlier one.
    pub continuation: bool,
}

/// before_turn: the fully assembled turn, before the first step.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TurnContext {
    /// The agent this hook fires for: the turn's entry agent (the frame hooks are its own, after
    /// a handoff too), with its name, its path from the agent asked (`triage`, `writer >
    /// researcher` in a subagent's turn), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
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
#[non_exhaustive]
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
    /// How the model may choose tools, in every step of the turn. Naming one of the agent's
    /// tools that a step does not offer (`active_tools` leaving it out) fails the turn before
    /// that step's model call. It is not reset after a tool call unless the agent says so
    /// ([`AgentBuilder::reset_tool_choice`](crate::AgentBuilder::reset_tool_choice), the
    /// OpenAI Agents SDK's default): a turn-wide `Required` or named tool otherwise never lets
    /// the model answer in text, so such a turn runs to its step limit unless a stop tool
    /// ([`AgentBuilder::stop_at_tools`](crate::AgentBuilder::stop_at_tools)) ends it.
    pub tool_choice: Option<ToolChoice>,
    /// Override the step limit (0 is taken as 1, with a warning: a turn calls its model at
    /// least once).
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
    /// A config that changes nothing; chain the setters below for what the hook changes.
    pub fn new() -> Self {
        TurnConfig::default()
    }

    /// Uses this model for the turn.
    pub fn model(mut self, model: impl Model + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// Uses this shared model for the turn.
    pub fn shared_model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Replaces the system prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Replaces the messages sent, paired as the history is: a tool call without its result
    /// is taken out (its message too when nothing else is left of it), and a result without
    /// its call left out, with a warning.
    pub fn messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = Some(messages);
        self
    }

    /// Adds a tool for this turn only.
    pub fn tool(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Limits the tools the model may call to these names.
    pub fn active_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.active_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Sets how the model may choose tools.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Overrides the step limit (0 is taken as 1, with a warning: a turn calls its model at
    /// least once; the builder refuses 0 outright).
    pub fn max_steps(mut self, max_steps: usize) -> Self {
        self.max_steps = Some(max_steps);
        self
    }

    /// Sends earlier reasoning back to the model (or not).
    pub fn send_reasoning(mut self, send: bool) -> Self {
        self.send_reasoning = Some(send);
        self
    }

    /// Sets sampling and length settings (set fields override the agent's).
    pub fn settings(mut self, settings: CallSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Sets provider options, merged over the agent's.
    pub fn provider_options(mut self, options: Map<String, Value>) -> Self {
        self.provider_options = Some(options);
        self
    }

    /// Overrides the provider's idle timeout between chunks (`Duration::ZERO` turns it off).
    pub fn stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall_timeout = Some(timeout);
        self
    }

    /// Asks for a final answer that is JSON matching this schema.
    pub fn output_schema(mut self, schema: OutputSchema) -> Self {
        self.output_schema = Some(schema);
        self
    }

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
#[non_exhaustive]
pub struct StepContext {
    /// The agent this hook fires for, the one running the step: its name, its path from the
    /// agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step number (zero-based).
    pub step: usize,
    /// The steps already finished in this turn.
    pub previous: Vec<StepRecord>,
    /// The messages this step would send (the turn's history, shared, not copied).
    pub messages: Arc<Vec<Message>>,
}

/// What a before_step hook may change for that step only.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct StepConfig {
    /// Use this model for the step.
    pub model: Option<Arc<dyn Model>>,
    /// Replace the system prompt for the step.
    pub system: Option<String>,
    /// Replace the messages sent in the step (history is not changed).
    pub messages: Option<Vec<Message>>,
    /// Limit the tools the model may call in the step.
    pub active_tools: Option<Vec<String>>,
    /// How the model may choose tools in the step. Naming one of the agent's tools that the
    /// step does not offer (`active_tools` leaving it out) fails the turn before the model
    /// call, as the provider would refuse the request.
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
    /// A config that changes nothing; chain the setters below for what the hook changes.
    pub fn new() -> Self {
        StepConfig::default()
    }

    /// Uses this model for the step.
    pub fn model(mut self, model: impl Model + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// Uses this shared model for the step.
    pub fn shared_model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Replaces the system prompt for the step.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Replaces the messages sent in the step (history is not changed), paired as
    /// [`TurnConfig::messages`] pairs them.
    pub fn messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = Some(messages);
        self
    }

    /// Limits the tools the model may call in the step.
    pub fn active_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.active_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Sets how the model may choose tools in the step.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Merges `later` over `self`.
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
#[non_exhaustive]
pub struct LlmStartContext {
    /// The agent this hook fires for, the one running the step: its name, its path from the
    /// agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step number.
    pub step: usize,
    /// The request (model, system, messages, tools, settings).
    pub request: ModelRequest,
}

/// on_llm_end: what one model call produced.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LlmEndContext {
    /// The agent this hook fires for, the one running the step: its name, its path from the
    /// agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step number.
    pub step: usize,
    /// The model's id.
    pub model: String,
    /// The text streamed.
    pub text: String,
    /// The tool calls asked for (the list the reply's message and the step's record share).
    pub tool_calls: Arc<[ToolCall]>,
    /// Why the model stopped (`None` when the stream broke).
    pub finish_reason: Option<FinishReason>,
    /// Token usage.
    pub usage: Usage,
    /// Time from the request to the end of the stream.
    pub latency: Duration,
    /// The error that broke the stream, if it broke (its kind tells a timeout, a truncated
    /// stream, an in-band error, ... apart).
    pub error: Option<TurnError>,
}

/// on_chunk: one streamed chunk.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ChunkContext {
    /// The agent this hook fires for, the one running the step: its name, its path from the
    /// agent asked (`triage > billing`), its turn's request id and the run id. The engine puts
    /// the chunks of one model call in one context in turn, so a streamed chunk costs no
    /// allocation nor reference count for it (nor for `request_id`).
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step number.
    pub step: usize,
    /// The chunk.
    pub chunk: Chunk,
}

/// A streamed chunk, as observers and the stream API see it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Chunk {
    /// Visible text (short text held inline, see [`DeltaText`]).
    TextDelta(DeltaText),
    /// Reasoning (short text held inline, see [`DeltaText`]).
    ReasoningDelta(DeltaText),
    /// Drop (or mark as void) every text, reasoning and tool-call chunk (start, input, whole
    /// call) this step streamed so far; what follows replaces them. Sent when a broken stream
    /// is retried from the start of its step (the retried attempt's chunks follow from the
    /// beginning; the step's record, the turn's result and the stored history hold only the
    /// attempt that completed, and no tool ran from the discarded one), and when a
    /// post_process_message hook changed the reply's text or calls (the reply as it will be
    /// stored and run follows: its reasoning, text, and each call's start and whole call; an
    /// agent with output guardrails, whose chunks are held until the reply is settled, shows
    /// only the replacement).
    Discarded {
        /// Why the attempt was discarded.
        reason: String,
    },
    /// A tool call begins, naming its tool before its arguments stream (the AI SDK's
    /// `tool-input-start`: a client can show "calling search…" at once). Exactly one per call
    /// of an attempt, before the call's first [`ToolInputDelta`](Self::ToolInputDelta) and its
    /// [`ToolCall`](Self::ToolCall): the model's
    /// [`ModelEvent::ToolCallStart`](crate::ModelEvent::ToolCallStart), or, for a call whose
    /// model sent none (its calls come whole), one the engine makes just before the
    /// [`ToolCall`](Self::ToolCall). A start the model sends again for the call it is
    /// streaming is not shown again (a model sends one start a call, see
    /// [`ModelEvent::ToolCallStart`](crate::ModelEvent::ToolCallStart)); a retried attempt's
    /// starts come again after [`Discarded`](Self::Discarded). Costs no
    /// allocation: the id and name are the call's own, shared.
    ToolInputStart {
        /// The call id (shared with the call's).
        id: Text,
        /// The tool's name (shared with the call's).
        name: Text,
    },
    /// A piece of a tool call's arguments.
    ToolInputDelta {
        /// The call id (shared with the call's).
        id: Text,
        /// The argument text added (short text held inline, see [`DeltaText`]).
        delta: DeltaText,
    },
    /// A complete tool call from the model.
    ToolCall(ToolCall),
    /// A tool's result as the model will read it.
    ToolResult {
        /// The call id.
        id: Text,
        /// The tool's name.
        name: Text,
        /// The result text.
        content: Text,
        /// Whether the call failed.
        is_error: bool,
    },
    /// A preliminary result a running tool reported (`tool_progress`); the model never
    /// reads it.
    ToolPreliminary {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// What the tool reported.
        content: serde_json::Value,
    },
}
