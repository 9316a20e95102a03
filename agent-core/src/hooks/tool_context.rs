//! What the tool-call hooks receive and decide: before_tool_call's context and decision, and
//! after_tool_call's view of the outcome.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::RunAgent;
use crate::cancel::CancelToken;
use crate::message::Message;
use crate::store::CallAnswer;
use crate::text::Text;
use crate::tool::{AnyValue, ToolError, ToolInput};

/// before_tool_call: one call about to run, with input typed as `I`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolCallContext<I> {
    /// The agent this hook fires for, the one whose model made the call: its name, its path
    /// from the agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
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
    /// The answer that approved the call, when it waited for approval (the hooks run again
    /// once it is given); `None` for a call that did not wait.
    pub approval: Option<CallAnswer>,
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
    /// Do not run yet: ask a person. The turn suspends with the call pending (the reason, or a
    /// default naming the tool, is what the person reads); the call runs once approved. Later
    /// hooks still run and may block or substitute instead. Once the call is approved, the
    /// hooks run again and an `Ask` is satisfied by the approval.
    Ask(Option<String>),
    /// Do not run here: the call's result comes from outside the turn. The turn suspends with
    /// the call waiting (kind `deferred`; the reason, or a default naming the tool, says why)
    /// until a result is submitted
    /// ([`Conversation::submit_result`](crate::Conversation::submit_result)). Like `Block`, it
    /// stops the chain. A call approved, then deferred when its turn resumes, waits again.
    Defer(Option<String>),
}

impl<I: ToolInput> ToolCallDecision<I> {
    /// Blocks with a reason the model reads.
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallDecision::Block(Some(reason.into()))
    }

    /// Asks a person, with a reason they read.
    pub fn ask(reason: impl Into<String>) -> Self {
        ToolCallDecision::Ask(Some(reason.into()))
    }

    /// Defers the call, with a reason saying where its result comes from.
    pub fn defer(reason: impl Into<String>) -> Self {
        ToolCallDecision::Defer(Some(reason.into()))
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

    /// Which outcome this is.
    pub fn kind(&self) -> ToolOutcomeKind {
        match self {
            ToolOutcome::Executed(_) => ToolOutcomeKind::Executed,
            ToolOutcome::Failed(_) => ToolOutcomeKind::Failed,
            ToolOutcome::Blocked(_) => ToolOutcomeKind::Blocked,
            ToolOutcome::Substituted(_) => ToolOutcomeKind::Substituted,
        }
    }

    pub(crate) fn value(&self) -> Option<&AnyValue> {
        match self {
            ToolOutcome::Executed(value) | ToolOutcome::Substituted(value) => Some(value),
            _ => None,
        }
    }
}

/// How a tool call ended, without its value: what step records and the result hooks report.
/// Displays in snake case (`executed`, `failed`, `blocked`, `substituted`, `rejected`,
/// `handed_off`, `suspended`, `interrupted`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolOutcomeKind {
    /// The tool ran and returned an output.
    Executed,
    /// The tool (or a gate hook) failed.
    Failed,
    /// A hook blocked the call.
    Blocked,
    /// A hook substituted the output; the tool did not run.
    Substituted,
    /// The call never reached a hook: the tool is unknown (or not active) or its arguments do
    /// not parse.
    Rejected,
    /// A transfer call whose handoff was taken: the target agent takes over after the step.
    HandedOff,
    /// The call waits for a person's answer (its turn is suspended); it did not run.
    Suspended,
    /// An approved call started to run and its process stopped before it finished: it may
    /// have taken effect, and was not run again (its tool is not idempotent).
    Interrupted,
}

impl ToolOutcomeKind {
    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolOutcomeKind::Executed => "executed",
            ToolOutcomeKind::Failed => "failed",
            ToolOutcomeKind::Blocked => "blocked",
            ToolOutcomeKind::Substituted => "substituted",
            ToolOutcomeKind::Rejected => "rejected",
            ToolOutcomeKind::HandedOff => "handed_off",
            ToolOutcomeKind::Suspended => "suspended",
            ToolOutcomeKind::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for ToolOutcomeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result the model reads for a call, as its after_tool_call_success/_failure hooks left
/// it: what after_tool_call observers (and extensions' `afterToolCall`) see beside the tool's
/// own outcome. The store hooks that run after (`before_store_tool_result`,
/// `before_create_message`) may still change what is stored.
///
/// ```
/// use agent_core::ToolCallResultContext;
/// use serde_json::Value;
///
/// fn audit(ctx: &ToolCallResultContext<Value>) {
///     if ctx.model_result.replaced {
///         // The tool gave `ctx.output()`; the model reads this instead.
///         let _ = ctx.model_result.content.as_str();
///     }
/// }
/// # let _ = audit;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelResult {
    /// The text the model reads (shared with the step's record and the `ToolResult` chunk).
    pub content: Text,
    /// Whether the model reads it as an error.
    pub is_error: bool,
    /// Whether an after_tool_call_success/_failure hook replaced the result
    /// ([`ToolResultDecision::Replace`](crate::ToolResultDecision::Replace)): `content` and
    /// `is_error` are then the hook's, while the call's outcome stays the tool's.
    pub replaced: bool,
    /// Whether such a hook dropped the call from history
    /// ([`ToolResultDecision::Drop`](crate::ToolResultDecision::Drop)): the model reads
    /// neither the call nor this result.
    pub dropped: bool,
}

/// after_tool_call: one call's outcome, with input typed as `I` and output as `O`.
pub struct ToolCallResultContext<I, O = Value> {
    /// The agent this hook fires for, the one whose model made the call: its name, its path
    /// from the agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The model's id for the call.
    pub call_id: Arc<str>,
    /// The tool called.
    pub tool_name: Arc<str>,
    /// The input the model sent, when a Modify decision changed it into another: read it with
    /// [`model_input`](Self::model_input). `None` when the tool ran with the model's input,
    /// which then is not copied for the hook (a JSON copy was three allocations and about 2,000
    /// instructions a call with an untyped after hook, most of them the allocator's:
    /// `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
    pub(crate) model_input: Option<I>,
    /// The input the tool ran with: the model's, or what a Modify decision made of it.
    pub effective_input: I,
    /// The step whose reply asked for the call.
    pub step: usize,
    /// Whether the tool was added at run time.
    pub dynamic: bool,
    /// How the call ended.
    pub outcome: Arc<ToolOutcome>,
    /// Wall-clock time of the tool's execution (zero when it did not run).
    pub duration: Duration,
    /// How many preliminary results the tool reported before its final value.
    pub preliminary: usize,
    /// The conversation as the model saw it in this step.
    pub messages: Arc<Vec<Message>>,
    /// The answer that approved the call, when it waited for approval.
    pub approval: Option<CallAnswer>,
    /// The result the model reads for the call, as its after_tool_call_success/_failure hooks
    /// left it. [`outcome`](Self::outcome) and [`output`](Self::output) stay the tool's own
    /// (its typed output); when a hook replaced the result, this holds the hook's text.
    pub model_result: ModelResult,
    /// The output as JSON for `O = Value`, made on the first [`output`](Self::output) call: a
    /// hook that never reads it costs no serialization of the output (one allocation per call
    /// and hook fewer in `whole_turn_calls_agent`, agent-providers/benches/stream.rs).
    pub(crate) output_json: OnceLock<Option<Value>>,
    pub(crate) _output: PhantomData<fn() -> O>,
}

impl<I: fmt::Debug, O> fmt::Debug for ToolCallResultContext<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCallResultContext")
            .field("agent", &self.agent)
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("model_input", self.model_input())
            .field("effective_input", &self.effective_input)
            .field("outcome", &self.outcome)
            .field("model_result", &self.model_result)
            .field("duration", &self.duration)
            .finish()
    }
}

impl<I, O> ToolCallResultContext<I, O> {
    /// The input the model sent: [`effective_input`](Self::effective_input) unless a
    /// before_tool_call hook's Modify decision changed it.
    pub fn model_input(&self) -> &I {
        self.model_input.as_ref().unwrap_or(&self.effective_input)
    }
}

impl<I, O: 'static> ToolCallResultContext<I, O> {
    /// True unless the call failed.
    pub fn success(&self) -> bool {
        self.outcome.success()
    }

    /// The tool's output, or the one a before_tool_call hook substituted, typed as `O`. `None`
    /// when the call failed or was blocked, or when a hook substituted an output of another
    /// type. The model reads its text unless an after_tool_call_success/_failure hook replaced
    /// it ([`ToolResultDecision::Replace`](crate::ToolResultDecision::Replace), whose text and
    /// error flag [`model_result`](Self::model_result), the step's record and its `ToolResult`
    /// chunk carry) or a store hook changed it.
    pub fn output(&self) -> Option<&O> {
        if TypeId::of::<O>() == TypeId::of::<Value>() {
            let json = self
                .output_json
                .get_or_init(|| self.outcome.value()?.to_json().ok());
            return (json.as_ref()? as &dyn Any).downcast_ref::<O>();
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
